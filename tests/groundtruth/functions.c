/*
 * functions.c - per-function figures known by construction: self (what a
 * function asked malloc for itself) and inclusive (with its callees), for
 * heaptrack's views (`memtrace report --functions`, --callers, --callees),
 * and a size and lifetime histogram (--sizes).
 *
 *   main -> left  -> 3 x wrap(100): helper: malloc(100), wrap: malloc(200)
 *                    (all six held 50 ms, then freed)
 *        -> right -> helper(1000) twice (leaked)
 *                 -> wrap(50): helper: malloc(50) (leaked), wrap: malloc(100)
 *                 -> temp: malloc(33), free at once (temporary)   <- the peak
 *                 -> free(wrap's 100)
 *        -> rec(3) -> rec(2) -> rec(1) -> rec(0): malloc(7) at each level
 *                     (leaked; recursion counts a site once per function)
 *        -> dupper: strdup("abcdefg"), 8 bytes leaked: the first frame is
 *                   libc's, the most useful one dupper
 *
 *                 self                          inclusive
 *   function      allocs bytes leaked(n) temp   allocs bytes leaked(n) temp
 *   helper        6      2350  2050(3)   0      6      2350  2050(3)   0
 *   wrap          4      700   0         0      8      1050  50(1)     0
 *   left          0      0     0         0      6      900   0         0
 *   right         0      0     0         0      5      2183  2050(3)   1
 *   temp          1      33    0         1      1      33    0         1
 *   rec           4      28    28(4)     0      4      28    28(4)     0
 *   dupper        0      0     0         0      1      8     8(1)      0
 *   main          0      0     0         0      16     3119  2086(8)   1
 *
 * The peak (2183 bytes in 5 blocks) is at temp's malloc: right's 2000 +
 * 50 + 100 + 33 (left's 900 were freed before).  At the peak: helper 2050
 * in 3; wrap 100 in 1 itself, 150 in 2 with its helper; temp 33 in 1;
 * right and main 2183 in 5; left, rec and dupper nothing.
 *
 * Sizes: 7 x4, 8, 33, 50, 100 x4, 200 x3, 1000 x2 (16 allocations).
 * Lifetimes: left's six blocks 50 ms; temp's block and wrap's 100 freed
 * within a few ms; 8 never freed.
 */
#include "gt.h"

static void *kept[8];
static int nkept;

NOINLINE void *helper(size_t n)
{
	void *p = malloc(n); /* @site:helper */
	gt_keep(p);
	return p;
}

/* helper's block into *H, and one of its own of twice the size */
NOINLINE void *wrap(size_t n, void **h)
{
	*h = helper(n); /* @call:helper_in_wrap */
	void *p = malloc(2 * n); /* @site:wrap */
	gt_keep(p);
	return p;
}

NOINLINE void left(void)
{
	void *h[3], *w[3];
	for (int i = 0; i < GT_N(3); i++)
		w[i] = wrap(100, &h[i]); /* @call:wrap_in_left */
	gt_sleep_ms(50);
	for (int i = 0; i < GT_N(3); i++) {
		free(h[i]);
		free(w[i]);
	}
}

NOINLINE void temp(void)
{
	void *p = malloc(33); /* @site:temp */
	gt_keep(p);
	free(p);
}

NOINLINE void right(void)
{
	for (int i = 0; i < GT_N(2); i++)
		kept[nkept++] = helper(1000); /* @call:helper_in_right */
	void *w = wrap(50, &kept[nkept++]); /* @call:wrap_in_right */
	temp();
	free(w);
}

NOINLINE void rec(int d)
{
	void *p = malloc(7); /* @site:rec */
	gt_keep(p);
	if (d > 0)
		rec(d - 1); /* @call:rec */
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

NOINLINE void dupper(void)
{
	char *s = strdup(GT_HIDE((const char *)"abcdefg")); /* @site:dupper */
	gt_keep(s);
}

int main(void)
{
	left();
	right();
	rec(GT_N(3));
	dupper();
	return 0;
}
