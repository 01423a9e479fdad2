/*
 * tcmalloc.c - gperftools tcmalloc's own API (linked against Debian's
 * libtcmalloc_minimal): tc_malloc, tc_calloc, tc_memalign,
 * tc_posix_memalign, tc_realloc, tc_new, and the frees tc_free,
 * tc_free_sized, tc_delete, tc_delete_sized and plain free().
 *
 *   function             allocator        calls  size    freed later by
 *   do_tc_malloc         malloc             3    1301    tc_free x1, tc_free_sized x1
 *   do_tc_calloc         calloc             2    7*187   tc_free x1
 *   do_tc_memalign       memalign           2    1303    free x1 (alignment 128)
 *   do_tc_posix_memalign posix_memalign     1    1305    -  (alignment 64)
 *   do_tc_src            malloc             2    1307    tc_realloc x2 (moves them)
 *   do_tc_realloc        realloc            2    7001    tc_free_sized x1
 *   do_tc_new            malloc             2    1311    tc_delete x1, tc_delete_sized x1
 *
 * In this order, then main frees as the last column says.  With the
 * argument "c-api" (the BPF backend's run: it does not probe tcmalloc's
 * operator new and delete, tc_new and tc_delete, nor tc_free_sized, which
 * is its sized delete) do_tc_new is not called and tc_free_sized is
 * tc_free: the other sites' figures are the same.  tc_realloc to
 * a size 5 times larger moves the block (checked, exit 3).
 * 14 allocations, 10 frees (2 by tc_realloc), no temporary.
 */
#include "gt.h"

#include <gperftools/tcmalloc.h>
#include <stdint.h>

/* C++-only declarations of tcmalloc.h, as the library exports them. */
void *tc_new(size_t size);
void tc_delete(void *p);
void tc_delete_sized(void *p, size_t size);

static void *a[3], *b[2], *c[2], *d, *s[2], *r[2], *n[2];

NOINLINE void do_tc_malloc(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		a[i] = tc_malloc(1301); /* @site:do_tc_malloc */
		gt_keep(a[i]);
	}
}

NOINLINE void do_tc_calloc(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		b[i] = tc_calloc(7, 187); /* @site:do_tc_calloc */
		gt_keep(b[i]);
	}
}

NOINLINE void do_tc_memalign(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		c[i] = tc_memalign(128, 1303); /* @site:do_tc_memalign */
		gt_keep(c[i]);
		GT_REQUIRE(((uintptr_t)c[i] & 127) == 0);
	}
}

NOINLINE void do_tc_posix_memalign(void)
{
	GT_REQUIRE(tc_posix_memalign(&d, 64, 1305) == 0); /* @site:do_tc_posix_memalign */
	gt_keep(d);
}

NOINLINE void do_tc_src(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		s[i] = tc_malloc(1307); /* @site:do_tc_src */
		gt_keep(s[i]);
	}
}

NOINLINE void do_tc_realloc(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		void *old = s[i];
		r[i] = tc_realloc(s[i], 7001); /* @site:do_tc_realloc */
		gt_keep(r[i]);
		GT_REQUIRE(r[i] && r[i] != old);
	}
}

NOINLINE void do_tc_new(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		n[i] = tc_new(1311); /* @site:do_tc_new */
		gt_keep(n[i]);
	}
}

int main(int argc, char **argv)
{
	int c_api = argc > 1 && !strcmp(argv[1], "c-api");
	do_tc_malloc();		/* @call:do_tc_malloc */
	do_tc_calloc();		/* @call:do_tc_calloc */
	do_tc_memalign();	/* @call:do_tc_memalign */
	do_tc_posix_memalign(); /* @call:do_tc_posix_memalign */
	do_tc_src();		/* @call:do_tc_src */
	do_tc_realloc();	/* @call:do_tc_realloc */
	if (!c_api)
		do_tc_new(); /* @call:do_tc_new */
	tc_free(a[0]);
	if (c_api)
		tc_free(a[1]);
	else
		tc_free_sized(a[1], 1301);
	tc_free(b[0]);
	free(c[0]);
	if (c_api) {
		tc_free(r[0]);
	} else {
		tc_free_sized(r[0], 7001);
		tc_delete(n[0]);
		tc_delete_sized(n[1], 1311);
	}
	gt_say("tcmalloc: done\n");
	return 0;
}
