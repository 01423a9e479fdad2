/*
 * brk.c - a program that grows by the program break alone (record's
 * mapping calls, MT_MAP_BRK): no mmap of its own, and every block below
 * glibc's mmap threshold, so that the heap grows as glibc's malloc moves
 * the break with libc's internal sbrk, which no hook of the program's
 * calls sees.
 *
 *   heapgrow: 256 x malloc(8 KiB), kept (leaked): 2 MiB of blocks, for
 *             which malloc moves the break up some times by amounts of
 *             its choosing (its top pad: 128 KiB a time by default);
 *   brkstep:  sbrk(+1 MiB), the program's own move.
 *
 * The program measures the break itself (sbrk(0), which moves nothing)
 * before and after each step and prints both moves: the report's brk
 * moves must add up to them, the allocator's to heapgrow's, the
 * program's to 1 MiB.
 */
#include "gt.h"

#include <stdint.h>

#define BLOCKS 256
#define BLOCK (8u << 10)
#define STEP (1L << 20)

static void *blocks[BLOCKS];

static intptr_t brk_now(void)
{
	return (intptr_t)sbrk(0);
}

NOINLINE void heapgrow(void)
{
	for (int i = 0; i < GT_N(BLOCKS); i++) {
		blocks[i] = malloc(BLOCK); /* @site:heapgrow */
		gt_keep(blocks[i]);
		((char *)blocks[i])[0] = 1;
	}
}

NOINLINE void brkstep(long n)
{
	GT_REQUIRE(sbrk(n) != (void *)-1); /* @site:brkstep */
}

int main(void)
{
	intptr_t start = brk_now();
	GT_REQUIRE(start != -1);
	heapgrow();
	intptr_t grown = brk_now();
	brkstep(GT_HIDE(STEP));
	intptr_t end = brk_now();
	gt_say("brk: heapgrow moved the break %ld, brkstep %ld\n", (long)(grown - start),
	       (long)(end - grown));
	return 0;
}
