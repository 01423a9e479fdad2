/*
 * hooks.c - the allocator hooks of libmemtrace-preload.so: malloc, free,
 * calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign,
 * valloc and pvalloc.
 *
 * Each calls the allocator the process would have used without the shim
 * (next.c: glibc's own __libc_malloc and friends, called directly, or the
 * jemalloc, tcmalloc or mimalloc that comes next in lookup order; user
 * blocks are exactly what it returns: no headers, no padding), then, if
 * tracing is on, records the call with its stack through the fast path
 * inlined from fastpath.h (the slow paths are preload.c's).  A free is
 * recorded before the block is released and an allocation after it is
 * obtained, and a realloc holds the realloc gate across its call, so that
 * the order of records always matches the order in which addresses were
 * handed out, across threads (tbuf.c).
 */
#include "fastpath.h"

#include <errno.h>

/* glibc gives a block of at least its mmap threshold (128 KiB, or less
 * with mallopt: never below a page here) a mapping of its own, with its own
 * system call that the shim cannot see; the chunk header says so (the size
 * word's IS_MMAPPED bit, the previous-size word holding the chunk's offset
 * in the mapping).  Such a block is recorded as the allocator's mapping
 * (MT_MAP_BLOCK, with the allocation's stack), which ends with the block. */
#define BLOCK_FLOOR 4096
#define NOTE_BLOCK(p, n)                          \
	do {                                      \
		if (unlikely((n) >= BLOCK_FLOOR)) \
			mt_note_block(p);         \
	} while (0)

/* The end of a hook whose next allocator gave P (N bytes) by FN: P,
 * recorded. */
INLINE void *recorded(int fn, void *p, size_t n)
{
	if (likely(p)) {
		RECORD_ALLOC(fn, p, n);
		NOTE_BLOCK(p, n);
	}
	WATCH_BRK();
	return p;
}

EXPORT void *malloc(size_t n)
{
	/* (sampling: read only for the calls sampled, in RECORD_ALLOC_AT) */
	uint64_t early = likely(!mt_sample_mean) ? mt_stamp_raw(0) : 0;
	void *p = unlikely(mt_cfg.zero_memory) ? NEXT(__libc_calloc(1, n), mt_next_calloc(1, n)) :
						 NEXT(__libc_malloc(n), mt_next_malloc(n));
	if (likely(p)) {
		RECORD_ALLOC_AT(MT_FN_MALLOC, p, n, early ? early : mt_stamp_raw(0));
		NOTE_BLOCK(p, n);
	}
	WATCH_BRK();
	return p;
}

EXPORT void free(void *p)
{
	if (record_free(p))
		release(p);
	WATCH_BRK(); /* a free may trim the heap */
}

EXPORT void *calloc(size_t n, size_t m)
{
	void *p = NEXT(__libc_calloc(n, m), mt_next_calloc(n, m));
	return recorded(MT_FN_CALLOC, p, n * m);
}

INLINE void *do_realloc(int fn, void *old, size_t n)
{
	if (!old) {
		void *p = NEXT(__libc_realloc(NULL, n), mt_next_realloc(NULL, n));
		if (p)
			RECORD_ALLOC(fn, p, n);
		WATCH_BRK();
		return p;
	}
	if (n == 0) {
		/* glibc, jemalloc and tcmalloc free the block and return NULL;
		 * mimalloc returns a new block of size 0 */
		if (!record_free(old))
			return NULL; /* held back: released once its record is out */
		void *p = NEXT_REALLOC(old, 0);
		if (p)
			RECORD_ALLOC(fn, p, 0);
		return p;
	}
	if (unlikely(!mt_enabled) || unlikely(mt_t_in.any)) {
		void *p = mt_slow_realloc(fn, old, n);
		NO_TAIL_CALL();
		return p;
	}
	void *p;
	RECORD_REALLOC(fn, old, n, p, NEXT_REALLOC(old, n));
	if (p)
		NOTE_BLOCK(p, n);
	WATCH_BRK();
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	return do_realloc(MT_FN_REALLOC, old, n);
}

EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return do_realloc(MT_FN_REALLOCARRAY, old, total);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (align % sizeof(void *) || (align & (align - 1)) || !align)
		return EINVAL;
	int saved = errno;
	void *p = NULL;
	int r = NEXT(((p = __libc_memalign(align, n)) ? 0 : ENOMEM),
		     mt_next_posix_memalign(&p, align, n));
	if (r) {
		errno = saved;
		return r;
	}
	*out = p;
	RECORD_ALLOC(MT_FN_POSIX_MEMALIGN, p, n);
	NOTE_BLOCK(p, n);
	WATCH_BRK();
	return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	void *p = NEXT(__libc_memalign(align, n), mt_next_aligned_alloc(align, n));
	return recorded(MT_FN_ALIGNED_ALLOC, p, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	void *p = NEXT(__libc_memalign(align, n), mt_next_memalign(align, n));
	return recorded(MT_FN_MEMALIGN, p, n);
}

EXPORT void *valloc(size_t n)
{
	void *p = NEXT(__libc_valloc(n), mt_next_valloc(n));
	return recorded(MT_FN_VALLOC, p, n);
}

EXPORT void *pvalloc(size_t n)
{
	void *p = NEXT(__libc_pvalloc(n), mt_next_pvalloc(n));
	return recorded(MT_FN_PVALLOC, p, n);
}
