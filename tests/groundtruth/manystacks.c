/*
 * manystacks.c - more distinct call stacks than the BPF backend's stack map
 * is given in the test (--max-stacks 512): 4096 allocations, each from a
 * call path of its own, none freed.
 *
 * Allocation i (0..4095) goes down LEVELS = 12 calls from main: at level k
 * (0..11) it calls branch_b if bit k of i is set, else branch_a, and the
 * last one calls leaf, which allocates 16 + i bytes.  Every i is a path of
 * its own, hence a stack and a site of its own: from the innermost frame,
 * leaf, then the branch chosen by bit 11, by bit 10, ..., by bit 0, then
 * main.  So: 4096 allocations, 4096 sites of one allocation each, 16 x 4096
 * + (0 + ... + 4095) = 65,536 + 8,386,560 = 8,452,096 bytes allocated, all
 * leaked, which is also the peak.  Every 32 allocations the program sleeps
 * a millisecond: the recorder reads the stack map more often than the
 * program fills an eighth of the test's map (see run_bpf in manystacks.py).
 */
#include "gt.h"

#define LEVELS 12
#define COUNT (1 << LEVELS)

static void *kept[COUNT];
static volatile int taken_a, taken_b; /* (so branch_a and branch_b differ) */

NOINLINE void *branch_a(int i, int k);
NOINLINE void *branch_b(int i, int k);

NOINLINE void *leaf(int i)
{
	void *p = malloc(16 + (size_t)i); /* @site:leaf */
	gt_keep(p);
	return p;
}

/* The next call of path I below level K. */
static inline void *step(int i, int k)
{
	if (k == LEVELS)
		return leaf(i); /* @call:leaf */
	return (i >> k) & 1 ? branch_b(i, k + 1) : branch_a(i, k + 1);
}

NOINLINE void *branch_a(int i, int k)
{
	void *p = step(i, k);
	taken_a++;
	gt_keep(p);
	return p;
}

NOINLINE void *branch_b(int i, int k)
{
	void *p = step(i, k);
	taken_b++;
	gt_keep(p);
	return p;
}

int main(void)
{
	for (int i = 0; i < GT_N(COUNT); i++) {
		kept[i] = step(i, 0);
		if ((i & 31) == 31)
			gt_sleep_ms(1);
	}
	gt_keep(kept);
	return 0;
}
