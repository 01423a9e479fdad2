/*
 * mmaps.c - calls that map memory, with their stacks (record's mapping
 * calls, MT_EXT_MMAP).  FILE (argv[1]) is made here, 128 KiB.  Each step is
 * a function of its own, so that its calls' stacks name it:
 *
 *   anon:     mmap 4 MiB anonymous, read-write, private       -> 4 MiB mapped
 *   filemap:  mmap 64 KiB of FILE at offset 4096, read-only,
 *             shared                                            -> + 64 KiB
 *   trim:     munmap the first 1 MiB of the 4 MiB (a partial
 *             unmapping)                                        -> - 1 MiB
 *   grow:     mremap the 3 MiB left to 8 MiB (may move)         -> + 5 MiB
 *   brkstep:  sbrk(+256 KiB)                                    -> + 256 KiB
 *   bigblock: malloc(1 MiB): above glibc's mmap threshold, the
 *             block gets a mapping of its own, 1 MiB + 4 KiB (a
 *             page for the chunk's 16-byte header), made by the
 *             allocator                                         -> + 1 MiB + 4 KiB
 *             = the peak: 8 MiB + 64 KiB + 256 KiB + 1 MiB + 4 KiB
 *   bigfree:  free it (the allocator unmaps it)                 -> - 1 MiB - 4 KiB
 *   brkstep:  again, sbrk(-256 KiB)                             -> - 256 KiB
 *   unmapall: munmap the 8 MiB and the 64 KiB                   -> back to the start
 *
 * Calls: the program's own 2 mmap, 3 munmap, 1 mremap and 2 brk (sbrk's
 * moves); the big block's mapping is the allocator's (the shim sees it in
 * glibc's chunk header, the BPF backend sees the system calls, made inside
 * malloc and free).  sbrk(0) in main first: under BPF the C library may
 * ask the kernel for the break once before its first move, which then
 * does not count as brkstep's.
 */
#include "gt.h"

#include <fcntl.h>
#include <sys/mman.h>

#define MIB (1u << 20)

static char *map, *file;

NOINLINE void anon(void)
{
	int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
	map = mmap(NULL, 4 * MIB, prot, flags, -1, 0); /* @site:anon */
	GT_REQUIRE(map != MAP_FAILED);
}

NOINLINE void filemap(int fd)
{
	file = mmap(NULL, 64 << 10, PROT_READ, MAP_SHARED, fd, 4096); /* @site:filemap */
	GT_REQUIRE(file != MAP_FAILED);
}

NOINLINE void trim(void)
{
	GT_REQUIRE(munmap(map, MIB) == 0); /* @site:trim */
	map += MIB;
}

NOINLINE void grow(void)
{
	map = mremap(map, 3 * MIB, 8 * MIB, MREMAP_MAYMOVE); /* @site:grow */
	GT_REQUIRE(map != MAP_FAILED);
}

NOINLINE void brkstep(long n)
{
	GT_REQUIRE(sbrk(n) != (void *)-1); /* @site:brkstep */
}

NOINLINE void *bigblock(void)
{
	void *p = malloc(MIB); /* @site:bigblock */
	gt_keep(p);
	return p;
}

NOINLINE void bigfree(void *p)
{
	free(p); /* @site:bigfree */
}

NOINLINE void unmapall(void)
{
	GT_REQUIRE(munmap(map, 8 * MIB) == 0);	 /* @site:unmap8 */
	GT_REQUIRE(munmap(file, 64 << 10) == 0); /* @site:unmap64 */
}

int main(int argc, char **argv)
{
	GT_REQUIRE(argc == 2);
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	GT_REQUIRE(fd >= 0 && ftruncate(fd, 128 << 10) == 0);
	GT_REQUIRE(sbrk(0) != (void *)-1);
	anon();
	filemap(fd);
	trim();
	grow();
	brkstep(GT_HIDE(256L << 10));
	void *big = bigblock();
	bigfree(big);
	brkstep(GT_HIDE(-(256L << 10)));
	unmapall();
	gt_say("mmaps: done\n");
	return 0;
}
