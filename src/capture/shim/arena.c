/*
 * arena.c - the shim's own memory, straight from mmap.
 *
 * The shim must not change the heap it measures, so nothing it keeps comes
 * from malloc.  Small objects are carved from 1 MB blocks with an atomic bump
 * pointer and never freed: the shim allocates only at start-up and when a
 * process forks, so there is nothing to reuse.
 */
#include "shim.h"

#include <stdatomic.h>
#include <sys/mman.h>

#define BLOCK (1u << 20)

static atomic_flag lock = ATOMIC_FLAG_INIT;
static uint8_t *cur, *limit;

void *mt_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void *mt_arena_alloc(size_t size)
{
	size = (size + 15) & ~(size_t)15;
	if (size >= BLOCK / 4)
		return mt_map(size);
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		;
	if (!cur || cur + size > limit) {
		cur = mt_map(BLOCK);
		limit = cur ? cur + BLOCK : NULL;
	}
	void *p = cur;
	if (cur)
		cur += size;
	atomic_flag_clear_explicit(&lock, memory_order_release);
	return p;
}
