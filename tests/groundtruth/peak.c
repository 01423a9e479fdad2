/*
 * peak.c - a live-bytes curve with a known maximum.
 *
 *   step                               live bytes after
 *   sleep 300 ms (nothing allocated)        0
 *   many: 10 x malloc(1000)             10000
 *   free many[0..3]                      6000
 *   site_a: malloc(100000)             106000
 *   site_b: malloc(50000)              156000   <- the peak: 8 blocks
 *   sleep 300 ms
 *   free a                              56000
 *   site_c: malloc(90000)              146000
 *   free many[4], many[5]              144000
 *   site_e: malloc(11999)              155999   (one byte short of the peak)
 *   free c, free e                      54000
 *
 * So peak_bytes = 156000 in 8 blocks (6 of many, a, b), reached about
 * 300 ms after the start and held for 300 ms; at that moment many had 6000
 * live in 6 blocks, site_a 100000, site_b 50000, site_c and site_e nothing
 * (they did not exist yet).  The later 155999 must not move the peak.
 *
 * Totals: 14 allocations, 10000+100000+50000+90000+11999 = 261999 bytes;
 * 9 frees; leaked: b and many[6..9] = 5 blocks, 54000 bytes.  No temporary:
 * each free is preceded either by another free or by the allocation of a
 * different block (many[0] is freed after many[9] was allocated, a after b,
 * c after e).
 */
#include "gt.h"

static void *many[10], *a, *b, *c, *e;

NOINLINE void many_blocks(void)
{
	for (int i = 0; i < GT_N(10); i++) {
		many[i] = malloc(1000); /* @site:many_blocks */
		gt_keep(many[i]);
	}
}

NOINLINE void site_a(void)
{
	a = malloc(100000); /* @site:site_a */
	gt_keep(a);
}

NOINLINE void site_b(void)
{
	b = malloc(50000); /* @site:site_b */
	gt_keep(b);
}

NOINLINE void site_c(void)
{
	c = malloc(90000); /* @site:site_c */
	gt_keep(c);
}

NOINLINE void site_e(void)
{
	e = malloc(11999); /* @site:site_e */
	gt_keep(e);
}

int main(void)
{
	gt_sleep_ms(300);
	many_blocks();
	for (int i = 0; i < GT_N(4); i++)
		free(many[i]);
	site_a();
	site_b();
	gt_sleep_ms(300);
	free(a);
	site_c();
	free(many[4]);
	free(many[5]);
	site_e();
	free(c);
	free(e);
	return 0;
}
