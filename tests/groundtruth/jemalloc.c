/*
 * jemalloc.c - jemalloc's own API (linked against Debian's libjemalloc):
 * mallocx with and without flags, rallocx, xallocx in place and refused,
 * sdallocx and dallocx, and plain malloc/free, which the shim must hand to
 * jemalloc too (a jemalloc block given to glibc's free would abort).
 * nallocx and sallocx are queries: no event.
 *
 *   function           allocator  calls  size   freed later by
 *   do_mallocx         mallocx      3    1101   sdallocx x3 (main)
 *   do_mallocx_align   mallocx      2    1103   dallocx x1 (alignment 256)
 *   do_mallocx_zero    mallocx      2    1105   - (MALLOCX_ZERO: checked zeroed)
 *   do_rallocx_src     mallocx      4    1107   rallocx x4 (moves them)
 *   do_malloc          malloc       2    1111   free x2
 *   do_rallocx         rallocx      4    5003   sdallocx x2
 *   do_xbig            mallocx      1    65536  xallocx (shrunk in place)
 *   do_xsmall          mallocx      1    1109   dallocx x1
 *   do_xallocx         xallocx      1    32768  -
 *
 * Events in this order: the sites top to bottom as listed, except that
 * do_xbig and do_xsmall come before do_xallocx, which shrinks the 64 KiB
 * block to 32 KiB in place (a large block: jemalloc splits its extent;
 * recorded as a REALLOC of the block to itself: one allocation, one free)
 * and asks the 1109-byte block (a small size class, 1280) to grow to 2000,
 * which jemalloc cannot do in place: xallocx returns the old real size and
 * nothing is recorded.  The program checks both outcomes itself (exit 3).
 * Then main frees, as the last column says.
 *
 * 20 allocations, 14 frees (4 by rallocx, 1 by xallocx, 9 by calls), no
 * temporary (no block is freed by the event right after its allocation:
 * the first rallocx follows do_malloc, the xallocx follows do_xsmall).
 * Peak and leaks: jemalloc.py replays these events.
 */
#include "gt.h"

#include <jemalloc/jemalloc.h>
#include <stdint.h>

static void *a[3], *b[2], *c[2], *d[4], *e[4], *g, *f, *m[2];

NOINLINE void do_mallocx(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		a[i] = mallocx(1101, 0); /* @site:do_mallocx */
		gt_keep(a[i]);
	}
}

NOINLINE void do_mallocx_align(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		b[i] = mallocx(1103, MALLOCX_ALIGN(256)); /* @site:do_mallocx_align */
		gt_keep(b[i]);
		GT_REQUIRE(((uintptr_t)b[i] & 255) == 0);
	}
}

NOINLINE void do_mallocx_zero(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		c[i] = mallocx(1105, MALLOCX_ZERO); /* @site:do_mallocx_zero */
		gt_keep(c[i]);
		for (int k = 0; k < GT_N(1105); k++)
			GT_REQUIRE(((unsigned char *)c[i])[k] == 0);
	}
}

NOINLINE void do_rallocx_src(void)
{
	for (int i = 0; i < GT_N(4); i++) {
		d[i] = mallocx(1107, 0); /* @site:do_rallocx_src */
		gt_keep(d[i]);
	}
}

NOINLINE void do_malloc(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		m[i] = malloc(1111); /* @site:do_malloc */
		gt_keep(m[i]);
	}
}

NOINLINE void do_rallocx(void)
{
	for (int i = 0; i < GT_N(4); i++) {
		e[i] = rallocx(d[i], 5003, 0); /* @site:do_rallocx */
		gt_keep(e[i]);
		GT_REQUIRE(e[i] && sallocx(e[i], 0) >= 5003);
	}
}

NOINLINE void do_xbig(void)
{
	g = mallocx(65536, 0); /* @site:do_xbig */
	gt_keep(g);
}

NOINLINE void do_xsmall(void)
{
	f = mallocx(1109, 0); /* @site:do_xsmall */
	gt_keep(f);
}

NOINLINE void do_xallocx(void)
{
	size_t r = xallocx(g, 32768, 0, 0); /* @site:do_xallocx */
	GT_REQUIRE(r == 32768);
	size_t before = sallocx(f, 0);
	size_t s = xallocx(f, 2000, 0, 0);
	GT_REQUIRE(s == before && s < 2000);
}

int main(void)
{
	GT_REQUIRE(nallocx(1101, 0) >= 1101);
	do_mallocx();	    /* @call:do_mallocx */
	do_mallocx_align(); /* @call:do_mallocx_align */
	do_mallocx_zero();  /* @call:do_mallocx_zero */
	do_rallocx_src();   /* @call:do_rallocx_src */
	do_malloc();	    /* @call:do_malloc */
	do_rallocx();	    /* @call:do_rallocx */
	do_xbig();	    /* @call:do_xbig */
	do_xsmall();	    /* @call:do_xsmall */
	do_xallocx();	    /* @call:do_xallocx */
	for (int i = 0; i < GT_N(3); i++)
		sdallocx(a[i], 1101, 0);
	dallocx(b[0], 0);
	sdallocx(e[0], 5003, 0);
	sdallocx(e[1], 5003, 0);
	dallocx(f, 0);
	free(m[0]);
	free(m[1]);
	gt_say("jemalloc: done\n");
	return 0;
}
