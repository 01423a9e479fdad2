/*
 * deep.c - allocations at the bottom of deep recursions: whole stacks
 * unwound without frame pointers.
 *
 * descend(n, size) calls itself down to n == 0, which calls
 * deep_leaf(size): malloc(size), leaked.  main calls descend(d, 500 + d) for
 * d = 5, 60 and 200, so the stacks are deep_leaf, d + 1 frames of descend,
 * then main (and the C library's start-up frames).  200 is deeper than the
 * 128 frames a stack is cut to: that site's frames are deep_leaf then
 * descend only.  Three sites of 1 allocation each (505, 560, 700 bytes), all
 * leaked.  The recursion is not a tail call (descend uses the result), so
 * every level is a real frame.
 */
#include "gt.h"

static void *kept[3];

NOINLINE void *deep_leaf(int size)
{
	void *p = malloc((size_t)size); /* @site:deep_leaf */
	gt_keep(p);
	return p;
}

NOINLINE void *descend(int n, int size)
{
	void *p;
	if (n == 0)
		p = deep_leaf(size); /* @call:leaf */
	else
		p = descend(n - 1, size); /* @call:recurse */
	gt_keep(p);
	return p;
}

int main(void)
{
	kept[0] = descend(GT_HIDE(5), 505); /* @call:d5 */
	kept[1] = descend(GT_HIDE(60), 560); /* @call:d60 */
	kept[2] = descend(GT_HIDE(200), 700); /* @call:d200 */
	gt_keep(kept);
	return 0;
}
