/*
 * mmaps.c - the program's own calls that map memory: mmap, mmap64, munmap,
 * mremap, brk and sbrk, each recorded (MT_EXT_MMAP) with its stack, its
 * arguments, its result and, for a file mapping, the file's path
 * (bytehound's GATHER_MMAP_CALLS; on unless MEMTRACE_GATHER_MMAP_CALLS=0).
 *
 * What the shim sees is what goes through the dynamic linker: calls of the
 * program and its libraries by these names, and those of an allocator
 * library that comes after the shim (jemalloc, mimalloc, tcmalloc: recorded
 * as the allocator's, preload.c says when).  It cannot see glibc's own
 * mmap, munmap, mremap and brk calls (malloc's arenas and big blocks,
 * stdio, the loader's), which do not leave libc: preload.c shows glibc's
 * big blocks from their chunk headers instead (MT_MAP_BLOCK), and malloc's
 * moves of the break from glibc's __curbrk (fastpath.h: WATCH_BRK).  The shim's
 * own mappings (its buffers, the unwinder's tables) are not recorded: a
 * call whose return address lies in the shim is passed through.
 *
 * Each hook calls the definition that comes next (libc's), found with
 * dlsym; while that lookup runs (it may allocate, and the allocation may
 * start the shim, which maps memory) the system call is made directly.
 * The shim maps its own memory with the system calls (arena.c), but the
 * unwinder's library calls mmap by name: hence the return address test.
 */
#include "record.h"
#include "shim.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* The shim's own object, from its ELF header to the end of its data. */
extern char __ehdr_start[] __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));

static int from_shim(const void *pc)
{
	return (const char *)pc >= __ehdr_start && (const char *)pc < _end;
}

#define MAP_FAILED_ ((void *)-1)
#if defined(__mips__) /* MIPS's own flag numbers */
#define MAP_ANONYMOUS_ 0x800
#else
#define MAP_ANONYMOUS_ 0x20
#endif
#define MREMAP_FIXED_ 2

static __thread int t_looking; /* in dlsym for one of these */

static void *lookup(const char *name)
{
	if (t_looking)
		return NULL;
	t_looking = 1;
	int saved = mt_ext_enter();
	void *f = mt_next_sym(name);
	mt_ext_leave(saved);
	t_looking = 0;
	return f;
}

/* The next definition of NAME, or NULL (then the caller makes the call). */
#define NEXT_FN(type, name)            \
	static __typeof__(type) real_; \
	if (unlikely(!real_))          \
		real_ = (type)lookup(name);

/* Records M if the call is the program's: PC is the hook's return address.
 * errno is kept as the call left it. */
static void note(struct mt_mapcall *m, const void *pc)
{
	if (likely(!mt_cfg.gather_mmap) || from_shim(pc))
		return;
	int e = errno;
	mt_ext_mapcall(m);
	errno = e;
}

static void *do_mmap(void *(*real)(void *, size_t, int, int, int, int64_t), void *addr, size_t len,
		     int prot, int flags, int fd, int64_t off, const void *pc)
{
	void *r = real ? real(addr, len, prot, flags, fd, off) :
			 mt_sys_mmap(addr, len, prot, flags, fd, off);
	struct mt_mapcall m = { .kind = MT_MAP_MMAP,
				.prot = prot,
				.flags = flags,
				.fd = flags & MAP_ANONYMOUS_ ? -1 : fd,
				.error = r == MAP_FAILED_ ? errno : 0,
				.addr = r == MAP_FAILED_ ? 0 : (uint64_t)(uintptr_t)r,
				.len = len,
				.old_addr = (uint64_t)(uintptr_t)addr,
				.offset = (uint64_t)off };
	note(&m, pc);
	return r;
}

/* mmap's offset is an off_t: 32 bits on 32-bit targets, where mmap64 takes
 * 64; the C names differ from the symbols so that <sys/mman.h>'s
 * redirections (mmap to mmap64 with 64-bit off_t) do not apply here. */
EXPORT void *mt_hook_mmap(void *addr, size_t len, int prot, int flags, int fd,
			  long off) __asm__("mmap");
EXPORT void *mt_hook_mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
	NEXT_FN(void *(*)(void *, size_t, int, int, int, long), "mmap")
	void *pc = __builtin_return_address(0);
	if (sizeof(long) == 8)
		return do_mmap((void *(*)(void *, size_t, int, int, int, int64_t))real_, addr, len,
			       prot, flags, fd, off, pc);
	/* 32-bit: the system call, with the same offset */
	return do_mmap(NULL, addr, len, prot, flags, fd, (int64_t)off, pc);
}

EXPORT void *mt_hook_mmap64(void *addr, size_t len, int prot, int flags, int fd,
			    int64_t off) __asm__("mmap64");
EXPORT void *mt_hook_mmap64(void *addr, size_t len, int prot, int flags, int fd, int64_t off)
{
	NEXT_FN(void *(*)(void *, size_t, int, int, int, int64_t), "mmap64")
	return do_mmap(real_, addr, len, prot, flags, fd, off, __builtin_return_address(0));
}

EXPORT int mt_hook_munmap(void *addr, size_t len) __asm__("munmap");
EXPORT int mt_hook_munmap(void *addr, size_t len)
{
	NEXT_FN(int (*)(void *, size_t), "munmap")
	int r = real_ ? real_(addr, len) : mt_sys_munmap(addr, len);
	struct mt_mapcall m = { .kind = MT_MAP_MUNMAP,
				.fd = -1,
				.error = r ? errno : 0,
				.addr = (uint64_t)(uintptr_t)addr,
				.len = len };
	note(&m, __builtin_return_address(0));
	return r;
}

EXPORT void *mt_hook_mremap(void *old, size_t old_len, size_t len, int flags,
			    ...) __asm__("mremap");
EXPORT void *mt_hook_mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
	NEXT_FN(void *(*)(void *, size_t, size_t, int, ...), "mremap")
	void *want = NULL;
	if (flags & MREMAP_FIXED_) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	void *r = real_ ? real_(old, old_len, len, flags, want) :
			  (void *)syscall(SYS_mremap, old, old_len, len, flags, want);
	struct mt_mapcall m = { .kind = MT_MAP_MREMAP,
				.flags = flags,
				.fd = -1,
				.error = r == MAP_FAILED_ ? errno : 0,
				.addr = r == MAP_FAILED_ ? 0 : (uint64_t)(uintptr_t)r,
				.len = len,
				.old_addr = (uint64_t)(uintptr_t)old,
				.old_len = old_len };
	note(&m, __builtin_return_address(0));
	return r;
}

/* brk and sbrk move glibc's idea of the break (__curbrk) too: they are
 * always libc's, never the system call. */
EXPORT int brk(void *addr)
{
	NEXT_FN(int (*)(void *), "brk")
	static void *(*sbrk_)(intptr_t);
	if (unlikely(!sbrk_))
		sbrk_ = (void *(*)(intptr_t))lookup("sbrk");
	if (unlikely(!real_ || !sbrk_)) {
		errno = ENOMEM;
		return -1;
	}
	void *before = sbrk_(0);
	int r = real_(addr);
	int e = errno;
	void *after = sbrk_(0);
	/* this call's move is recorded here, not by the hooks' WATCH_BRK */
	__atomic_store_n(&mt_brk_known, after, __ATOMIC_RELAXED);
	errno = e;
	struct mt_mapcall m = { .kind = MT_MAP_BRK,
				.fd = -1,
				.error = r ? e : 0,
				.addr = (uint64_t)(uintptr_t)after,
				.len = (uint64_t)(uintptr_t)addr,
				.old_addr = (uint64_t)(uintptr_t)before };
	note(&m, __builtin_return_address(0));
	return r;
}

EXPORT void *sbrk(intptr_t incr)
{
	NEXT_FN(void *(*)(intptr_t), "sbrk")
	if (unlikely(!real_)) {
		errno = ENOMEM;
		return MAP_FAILED_;
	}
	void *r = real_(incr);
	if (incr == 0)
		return r; /* a question, not a move */
	int e = errno;
	void *after = r == MAP_FAILED_ ? r : real_(0);
	if (r != MAP_FAILED_)
		__atomic_store_n(&mt_brk_known, after, __ATOMIC_RELAXED);
	errno = e;
	struct mt_mapcall m = { .kind = MT_MAP_BRK,
				.fd = -1,
				.error = r == MAP_FAILED_ ? e : 0,
				.addr = (uint64_t)(uintptr_t)(r == MAP_FAILED_ ? real_(0) : after),
				.len = ((uint64_t)incr << 1) ^ (uint64_t)((int64_t)incr >> 63),
				.old_addr = r == MAP_FAILED_ ? 0 : (uint64_t)(uintptr_t)r };
	errno = e;
	note(&m, __builtin_return_address(0));
	return r;
}
