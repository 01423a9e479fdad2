/*
 * mimalloc.c - mimalloc's own API (linked against Debian's libmimalloc):
 * mi_malloc, mi_zalloc, mi_calloc, mi_malloc_aligned, an explicit heap
 * (mi_heap_malloc, then mi_heap_destroy, which frees its blocks without a
 * call per block), mi_realloc, and the frees mi_free, mi_free_size and
 * plain free().  mimalloc's malloc is mi_malloc (one function under two
 * names): each call counts once.
 *
 *   function           allocator      calls  size   freed later by
 *   do_mi_malloc       malloc           3    1201   mi_free_size x1, mi_free x1
 *   do_mi_zalloc       calloc           2    1203   mi_free x1 (checked zeroed)
 *   do_mi_calloc       calloc           2    5*241  free x1
 *   do_mi_aligned      aligned_alloc    2    1207   mi_free x1 (alignment 256)
 *   do_mi_src          malloc           2    1211   mi_realloc x2 (moves them)
 *   do_mi_heap         malloc           3    1209   mi_free x1, mi_heap_destroy x2
 *   do_mi_realloc      realloc          2    6007   mi_free_size x1
 *
 * In this order, then main frees as the last column says (mi_heap_destroy
 * last).  With the argument "no-destroy" (the BPF backend's run: it cannot
 * see the blocks mi_heap_destroy frees) the heap's two last blocks are
 * freed with mi_free before it: the same figures.  mi_realloc to a size 5 times larger moves the block (the program
 * checks it, exit 3).  mi_heap_new and mi_heap_destroy allocate and free
 * the heap's own bookkeeping: no event of the program's.
 * 16 allocations, 11 frees (2 by mi_realloc), no temporary.
 */
#include "gt.h"

#include <mimalloc.h>
#include <stdint.h>

static void *a[3], *b[2], *c[2], *d[2], *s[2], *h[3], *r[2];
static mi_heap_t *heap;

NOINLINE void do_mi_malloc(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		a[i] = mi_malloc(1201); /* @site:do_mi_malloc */
		gt_keep(a[i]);
	}
}

NOINLINE void do_mi_zalloc(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		b[i] = mi_zalloc(1203); /* @site:do_mi_zalloc */
		gt_keep(b[i]);
		for (int k = 0; k < GT_N(1203); k++)
			GT_REQUIRE(((unsigned char *)b[i])[k] == 0);
	}
}

NOINLINE void do_mi_calloc(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		c[i] = mi_calloc(5, 241); /* @site:do_mi_calloc */
		gt_keep(c[i]);
	}
}

NOINLINE void do_mi_aligned(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		d[i] = mi_malloc_aligned(1207, 256); /* @site:do_mi_aligned */
		gt_keep(d[i]);
		GT_REQUIRE(((uintptr_t)d[i] & 255) == 0);
	}
}

NOINLINE void do_mi_src(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		s[i] = mi_malloc(1211); /* @site:do_mi_src */
		gt_keep(s[i]);
	}
}

NOINLINE void do_mi_heap(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		h[i] = mi_heap_malloc(heap, 1209); /* @site:do_mi_heap */
		gt_keep(h[i]);
	}
}

NOINLINE void do_mi_realloc(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		void *old = s[i];
		r[i] = mi_realloc(s[i], 6007); /* @site:do_mi_realloc */
		gt_keep(r[i]);
		GT_REQUIRE(r[i] && r[i] != old);
	}
}

int main(int argc, char **argv)
{
	int no_destroy = argc > 1 && !strcmp(argv[1], "no-destroy");
	heap = mi_heap_new();
	GT_REQUIRE(heap);
	do_mi_malloc();	 /* @call:do_mi_malloc */
	do_mi_zalloc();	 /* @call:do_mi_zalloc */
	do_mi_calloc();	 /* @call:do_mi_calloc */
	do_mi_aligned(); /* @call:do_mi_aligned */
	do_mi_src();	 /* @call:do_mi_src */
	do_mi_heap();	 /* @call:do_mi_heap */
	do_mi_realloc(); /* @call:do_mi_realloc */
	mi_free_size(a[0], 1201);
	mi_free(a[1]);
	mi_free(b[0]);
	free(c[0]);
	mi_free(d[0]);
	mi_free(h[0]);
	mi_free_size(r[0], 6007);
	if (no_destroy) {
		mi_free(h[1]);
		mi_free(h[2]);
	}
	mi_heap_destroy(heap);
	gt_say("mimalloc: done\n");
	return 0;
}
