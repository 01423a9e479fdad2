/*
 * realloc.c - realloc that grows, shrinks, moves, fails, and frees (size 0).
 *
 * A realloc counts as one allocation (of the new size, at the realloc's own
 * site) and one free (of the old block, at the old block's site).  A realloc
 * that fails frees nothing and allocates nothing.  Events in order, with
 * the live bytes after each (free of the old block first, then the new one):
 *
 *   step                              site              live after
 *   a = malloc(100)                   first_alloc       100
 *   a = realloc(a, 200)   grows       grow              200  (frees a/100)
 *   a = realloc(a, 50)    shrinks     shrink             50  (frees 200)
 *   b = malloc(64)                    small             114
 *   n = malloc(64)        neighbour   neighbour         178
 *   b = realloc(b, 1 MiB) moves       move          1048690  (frees 64) <- peak
 *   free(b)                                             114
 *   c = malloc(300)                   victim            414
 *   realloc(c, PTRDIFF_MAX+1) fails   (no site)         414
 *   d = malloc(77)                    zero_victim       491
 *   realloc(d, 0)         frees d     (no site)         414
 *
 * Totals: 8 allocations (100+200+50+64+64+1048576+300+77 = 1049431 bytes),
 * 5 frees (grow, shrink, move, free(b), realloc(d, 0)), 3 leaked (a's 50,
 * n's 64, c's 300 = 414 bytes).  Peak 1048690 bytes in 3 blocks (a=50 from
 * shrink, n=64, the 1 MiB from move; b's 64 was freed by the move): so at the
 * peak shrink had 50, neighbour 64, move 1048576, everything else 0.
 *
 * Temporary (freed by the very next allocator event of the thread): the
 * malloc(100) (its free is the grow realloc, the next event), the 200 of
 * grow (freed by the shrink), the 1 MiB of move (freed by free(b) next), the
 * 77 of zero_victim (freed by realloc(d, 0) next) = 4.  Not c: the failed
 * realloc records nothing, and c is never freed.
 *
 * The program checks itself that the move moved, that the failed realloc
 * returned NULL and left c intact, and that realloc(d, 0) returned NULL
 * (glibc frees the block then).
 */
#include "gt.h"

#include <stdint.h>

static void *a, *b, *n, *c, *d;

NOINLINE void first_alloc(void)
{
	a = malloc(100); /* @site:first_alloc */
	gt_keep(a);
}

NOINLINE void grow(void)
{
	a = realloc(a, 200); /* @site:grow */
	GT_REQUIRE(a);
	gt_keep(a);
}

NOINLINE void shrink(void)
{
	a = realloc(a, 50); /* @site:shrink */
	GT_REQUIRE(a);
	gt_keep(a);
}

NOINLINE void small(void)
{
	b = malloc(64); /* @site:small */
	gt_keep(b);
}

NOINLINE void neighbour(void)
{
	n = malloc(64); /* @site:neighbour */
	gt_keep(n);
}

NOINLINE void move(void)
{
	void *old = b;
	/* n sits right after b and 1 MiB is above glibc's mmap threshold:
	 * the block cannot stay where it is */
	b = realloc(b, 1 << 20); /* @site:move */
	GT_REQUIRE(b && b != old);
	gt_keep(b);
}

NOINLINE void victim(void)
{
	c = malloc(300); /* @site:victim */
	gt_keep(c);
	memset(c, 0x5a, 300);
}

NOINLINE void fail(void)
{
	/* more than any object may be (glibc refuses above PTRDIFF_MAX): it
	 * fails on every machine, where half the address space of a 32-bit
	 * one may well be free */
	size_t huge = GT_HIDE((size_t)PTRDIFF_MAX + 1);
	void *r = realloc(c, huge); /* @site:fail */
	GT_REQUIRE(r == NULL);
	for (int i = 0; i < 300; i++)
		GT_REQUIRE(((unsigned char *)c)[i] == 0x5a);
}

NOINLINE void zero_victim(void)
{
	d = malloc(77); /* @site:zero_victim */
	gt_keep(d);
}

NOINLINE void zero(void)
{
	void *r = realloc(d, GT_HIDE((size_t)0)); /* @site:zero */
	GT_REQUIRE(r == NULL);
}

int main(void)
{
	first_alloc();
	grow();
	shrink();
	small();
	neighbour();
	move();
	free(b);
	victim();
	fail();
	zero_victim();
	zero();
	return 0;
}
