/*
 * allocators.c - every allocation function of the interface, each called
 * from its own function, a known number of times with a size no other site
 * uses.
 *
 *   function          allocator        calls  requested size
 *   do_malloc         malloc             1    1001
 *   do_calloc         calloc             2    3 * 337 = 1011
 *   do_realloc        realloc(NULL)      3    1021
 *   do_reallocarray   reallocarray(NULL) 4    7 * 147 = 1029
 *   do_posix_memalign posix_memalign     5    1031 (alignment 64)
 *   do_aligned_alloc  aligned_alloc      6    1280 (alignment 256)
 *   do_memalign       memalign           7    1039 (alignment 128)
 *   do_valloc         valloc             8    1049 (page aligned)
 *   do_pvalloc        pvalloc            9    1051 (page aligned; glibc
 *                                              rounds it up, but sizes are
 *                                              the requested ones)
 *
 * Every block is kept; main then frees the first block of each site, from
 * main itself.  So each site has `calls` allocations, 1 free and calls - 1
 * leaked blocks; 45 allocations, 9 frees in all.  Nothing is freed before
 * all 45 blocks exist, so the peak is the sum of all of them and every site's
 * peak_bytes is calls * size.  No block is temporary: the first free follows
 * the last pvalloc, which allocated a different block, and every other free
 * follows a free.  The program checks the alignments itself (exit 3).
 *
 * The NULL passed to realloc and reallocarray is hidden from the compiler
 * (GT_HIDE), which would otherwise turn realloc(NULL, n) into malloc(n).
 *
 * Each allocating call carries a marker comment `@site:NAME` and each call
 * from main a marker `@call:NAME`: the test reads the expected line numbers
 * from them.
 */
#include "gt.h"

#include <malloc.h>
#include <stdint.h>

static void *b_malloc[1], *b_calloc[2], *b_realloc[3], *b_reallocarray[4], *b_posix_memalign[5],
	*b_aligned_alloc[6], *b_memalign[7], *b_valloc[8], *b_pvalloc[9];

static long page;

NOINLINE void do_malloc(void)
{
	for (int i = 0; i < GT_N(1); i++) {
		b_malloc[i] = malloc(1001); /* @site:do_malloc */
		gt_keep(b_malloc[i]);
	}
}

NOINLINE void do_calloc(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		b_calloc[i] = calloc(3, 337); /* @site:do_calloc */
		gt_keep(b_calloc[i]);
		GT_REQUIRE(b_calloc[i]);
		for (int k = 0; k < GT_N(1011); k++)
			GT_REQUIRE(((unsigned char *)b_calloc[i])[k] == 0);
	}
}

NOINLINE void do_realloc(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		b_realloc[i] = realloc(GT_HIDE((void *)NULL), 1021); /* @site:do_realloc */
		gt_keep(b_realloc[i]);
	}
}

NOINLINE void do_reallocarray(void)
{
	for (int i = 0; i < GT_N(4); i++) {
		b_reallocarray[i] = reallocarray(GT_HIDE((void *)NULL), 7, 147); /* @site:do_reallocarray */
		gt_keep(b_reallocarray[i]);
	}
}

NOINLINE void do_posix_memalign(void)
{
	for (int i = 0; i < GT_N(5); i++) {
		int r = posix_memalign(&b_posix_memalign[i], 64, 1031); /* @site:do_posix_memalign */
		GT_REQUIRE(r == 0);
		GT_REQUIRE((uintptr_t)b_posix_memalign[i] % 64 == 0);
		gt_keep(b_posix_memalign[i]);
	}
}

NOINLINE void do_aligned_alloc(void)
{
	for (int i = 0; i < GT_N(6); i++) {
		b_aligned_alloc[i] = aligned_alloc(256, 1280); /* @site:do_aligned_alloc */
		GT_REQUIRE(b_aligned_alloc[i] && (uintptr_t)b_aligned_alloc[i] % 256 == 0);
		gt_keep(b_aligned_alloc[i]);
	}
}

NOINLINE void do_memalign(void)
{
	for (int i = 0; i < GT_N(7); i++) {
		b_memalign[i] = memalign(128, 1039); /* @site:do_memalign */
		GT_REQUIRE(b_memalign[i] && (uintptr_t)b_memalign[i] % 128 == 0);
		gt_keep(b_memalign[i]);
	}
}

NOINLINE void do_valloc(void)
{
	for (int i = 0; i < GT_N(8); i++) {
		b_valloc[i] = valloc(1049); /* @site:do_valloc */
		GT_REQUIRE(b_valloc[i] && (uintptr_t)b_valloc[i] % (uintptr_t)page == 0);
		gt_keep(b_valloc[i]);
	}
}

NOINLINE void do_pvalloc(void)
{
	for (int i = 0; i < GT_N(9); i++) {
		b_pvalloc[i] = pvalloc(1051); /* @site:do_pvalloc */
		GT_REQUIRE(b_pvalloc[i] && (uintptr_t)b_pvalloc[i] % (uintptr_t)page == 0);
		gt_keep(b_pvalloc[i]);
	}
}

int main(void)
{
	page = sysconf(_SC_PAGESIZE);
	do_malloc(); /* @call:do_malloc */
	do_calloc(); /* @call:do_calloc */
	do_realloc(); /* @call:do_realloc */
	do_reallocarray(); /* @call:do_reallocarray */
	do_posix_memalign(); /* @call:do_posix_memalign */
	do_aligned_alloc(); /* @call:do_aligned_alloc */
	do_memalign(); /* @call:do_memalign */
	do_valloc(); /* @call:do_valloc */
	do_pvalloc(); /* @call:do_pvalloc */

	free(b_malloc[0]);
	free(b_calloc[0]);
	free(b_realloc[0]);
	free(b_reallocarray[0]);
	free(b_posix_memalign[0]);
	free(b_aligned_alloc[0]);
	free(b_memalign[0]);
	free(b_valloc[0]);
	free(b_pvalloc[0]);
	return 0;
}
