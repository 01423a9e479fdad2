/*
 * tune.c - the shim's hooks of the calls that tune the allocator:
 * mallopt(param, value) and malloc_trim(pad).
 *
 * They change how the heap behaves (which blocks get a mapping of their
 * own, when freed memory goes back to the system), which explains figures
 * that the allocations alone do not: each call is made, then recorded with
 * its arguments, result and stack (preload.c's mt_ext_tune: an MT_EXT_MALLOPT
 * record).  The call goes to the C library's function whatever allocator
 * the process uses (jemalloc and mimalloc have none; tcmalloc's is its own).
 */
#include "record.h"
#include "shim.h"

#include <malloc.h>

#define EXPORT __attribute__((visibility("default")))

/* The next definition of NAME (resolved once; NULL when there is none). */
static void *next_fn(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!f) {
		int pass = mt_ext_enter(); /* what dlsym allocates is not the program's */
		f = mt_next_sym(name);
		mt_ext_leave(pass);
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

EXPORT int mallopt(int param, int value)
{
	static void *next;
	int (*real)(int, int) = (int (*)(int, int))next_fn(&next, "mallopt");
	int r = real ? real(param, value) : 0;
	mt_ext_tune(MT_TUNE_MALLOPT, param, value, r);
	__asm__ volatile("" ::: "memory"); /* no tail call: the stack keeps this frame */
	return r;
}

EXPORT int malloc_trim(size_t pad)
{
	static void *next;
	int (*real)(size_t) = (int (*)(size_t))next_fn(&next, "malloc_trim");
	int r = real ? real(pad) : 0;
	mt_ext_tune(MT_TUNE_MALLOC_TRIM, 0, (int64_t)pad, r);
	__asm__ volatile("" ::: "memory");
	return r;
}
