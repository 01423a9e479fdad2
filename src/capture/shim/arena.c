/*
 * arena.c - the shim's own memory, straight from mmap.
 *
 * The shim must not change the heap it measures, so nothing it keeps comes
 * from malloc.  Small objects are carved from 1 MB blocks with an atomic bump
 * pointer and never freed: the shim allocates only at start-up and when a
 * process forks, so there is nothing to reuse.
 */
#include "shim.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BLOCK (1u << 20)

static atomic_flag lock = ATOMIC_FLAG_INIT;
static uint8_t *cur, *limit;

/* The system calls themselves: the shim's own mappings do not go through
 * its hooks of mmap and munmap (mmaps.c), which record the program's. */
void *mt_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, int64_t off)
{
#ifdef SYS_mmap2
	if (off & 4095) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	return (void *)syscall(SYS_mmap2, addr, len, prot, flags, fd, (long)(off >> 12));
#else
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, (long)off);
#endif
}

int mt_sys_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

void *mt_map(size_t size)
{
	void *p = mt_sys_mmap(NULL, size, PROT_READ | PROT_WRITE,
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
