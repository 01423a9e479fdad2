/*
 * spread.c - allocations spread evenly over time, for the chart's buckets:
 * 20 blocks of 100 + i bytes (i = 0..19), one every millisecond or more (a
 * sleep of 1 ms between them), none freed.  So the allocation times are at
 * least 1 ms apart and span at least 19 ms; the heap grows by one block at
 * each, and its peak (20 blocks, 2190 bytes) is at the last allocation.
 */
#include "gt.h"

static void *kept[20];

NOINLINE void spread_one(int i)
{
	kept[i] = malloc(100 + (size_t)i); /* @site:spread_one */
	gt_keep(kept[i]);
}

int main(void)
{
	for (int i = 0; i < GT_N(20); i++) {
		spread_one(i);
		gt_sleep_ms(1);
	}
	return 0;
}
