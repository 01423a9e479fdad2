/*
 * cull.c - short-lived allocations for --cull-temporary.
 *
 *   leak5:  5 x malloc(555), leaked                          2775 bytes
 *   churn:  1000 x { malloc(32); free } - each lives microseconds and is
 *           temporary (the free is the thread's next allocator event)
 *   medium: 10 x malloc(1000); sleep 500 ms; free them in the order they
 *           were allocated (not temporary: the first free follows the
 *           10th allocation, of another block, the others follow frees)
 *
 * Whatever is culled, the totals are exact: 1015 allocations,
 * 2775 + 32000 + 10000 = 44775 bytes, 1010 frees, 5 leaked (2775 bytes),
 * 1000 temporary.  With --cull-temporary=100 the 1000 churn blocks (lifetime
 * far below 100 ms) are culled and the 10 medium ones (500 ms) are not;
 * with the default threshold (10 s) both are.  Peak: 2775 + 10000 = 12775
 * in 15 blocks, while the medium blocks live (a churn block adds only 32
 * to the 2775 of the leaks).
 */
#include "gt.h"

static void *leaks[5], *med[10];

NOINLINE void leak5(void)
{
	for (int i = 0; i < GT_N(5); i++) {
		leaks[i] = malloc(555); /* @site:leak5 */
		gt_keep(leaks[i]);
	}
}

NOINLINE void churn(void)
{
	for (int i = 0; i < GT_N(1000); i++) {
		void *p = malloc(32); /* @site:churn */
		gt_keep(p);
		free(p);
	}
}

NOINLINE void medium(void)
{
	for (int i = 0; i < GT_N(10); i++) {
		med[i] = malloc(1000); /* @site:medium */
		gt_keep(med[i]);
	}
}

int main(void)
{
	leak5();
	churn();
	medium();
	gt_sleep_ms(500);
	for (int i = 0; i < GT_N(10); i++)
		free(med[i]);
	return 0;
}
