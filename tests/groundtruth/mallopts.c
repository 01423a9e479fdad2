/*
 * mallopts.c - calls that tune the allocator, recorded with their
 * arguments, result and stack (MT_EXT_MALLOPT).
 *
 *   tune():  mallopt(M_TRIM_THRESHOLD, 64 MiB) = 1, so that a free does not
 *            give the top of the heap back by itself;
 *            mallopt(M_MMAP_THRESHOLD, 1 MiB) = 1, so that a 512 KiB block
 *            comes from the heap instead of a mapping of its own;
 *   big():   malloc(512 KiB), checked to be a heap chunk (glibc's chunk
 *            header has no IS_MMAPPED bit), then freed: it joins the top
 *            of the heap, which the trim threshold keeps;
 *   trim():  malloc_trim(0) = 1: the top (at least 512 KiB) goes back;
 *   bad():   mallopt(M_MXFAST, 1000000) = 0: beyond glibc's largest fast
 *            bin size, refused.
 * Five calls in this order, each from its own function called by main;
 * one allocation of 524288 bytes, freed.  The program checks every result
 * itself (exit 3 otherwise), so the figures the test asserts are the ones
 * glibc gave.
 */
#include "gt.h"

#include <malloc.h>

NOINLINE static void tune(void)
{
	GT_REQUIRE(mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1); /* @site:tune_trim */
	GT_REQUIRE(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1);  /* @site:tune_mmap */
}

NOINLINE static void big(void)
{
	char *p = malloc(512 << 10); /* @site:big */
	GT_REQUIRE(p);
	/* glibc's chunk header: the size word before the block, bit 1 set
	 * for a chunk with a mapping of its own */
	memset(p, 1, 512 << 10);
	size_t head;
	memcpy(&head, GT_HIDE(p) - sizeof head, sizeof head);
	GT_REQUIRE((head & 2) == 0);
	gt_keep(p);
	free(p);
}

NOINLINE static void trim(void)
{
	GT_REQUIRE(malloc_trim(0) == 1); /* @site:trim */
}

NOINLINE static void bad(void)
{
	GT_REQUIRE(mallopt(M_MXFAST, 1000000) == 0); /* @site:bad */
}

int main(void)
{
	tune();
	big();
	trim();
	bad();
	return 0;
}
