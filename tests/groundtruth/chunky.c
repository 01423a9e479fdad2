/*
 * chunky.c - a recording of several chunks, for the bad-input tests.
 *
 *   early:  100 x malloc(200), leaked; sleep 700 ms;
 *   middle: 100 x malloc(250), leaked; sleep 700 ms;
 *   late:   100 x malloc(300), leaked.
 *
 * memtrace record writes what it has at least every 250 ms, so each phase
 * is in chunks of its own: at least 3 chunks, and the early allocations are
 * in a chunk written long before the last one: a copy cut inside its last
 * chunk still holds all 100 of them.
 */
#include "gt.h"

static void *kept[300];

NOINLINE void early(void)
{
	for (int i = 0; i < GT_N(100); i++) {
		kept[i] = malloc(200); /* @site:early */
		gt_keep(kept[i]);
	}
}

NOINLINE void middle(void)
{
	for (int i = 0; i < GT_N(100); i++) {
		kept[200 + i] = malloc(250); /* @site:middle */
		gt_keep(kept[200 + i]);
	}
}

NOINLINE void late(void)
{
	for (int i = 0; i < GT_N(100); i++) {
		kept[100 + i] = malloc(300); /* @site:late */
		gt_keep(kept[100 + i]);
	}
}

int main(void)
{
	early();
	gt_sleep_ms(700);
	middle();
	gt_sleep_ms(700);
	late();
	return 0;
}
