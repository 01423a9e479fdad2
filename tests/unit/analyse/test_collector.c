/*
 * test_collector.c - unit tests of the collector's arithmetic on synthetic
 * event sequences whose figures are worked out by hand in the comments:
 * the global peak and each site's share of it (including sites that change
 * after the peak, and a later higher peak), temporaries per thread, realloc
 * as free + alloc, unmatched frees, culled aggregates, and a table that has
 * to grow and shrink through many blocks.
 */
#include "analyse/figures.h"
#include "../check.h"

#include <stdio.h>

static void test_peak(void)
{
	struct mt_collector c;
	mt_col_init(&c);
	/* site 0: 100 live; site 1: +50 -> 150 (peak 1); site 0 frees (50);
	 * site 2: +120 -> 170 (peak 2, the global one); site 1 frees afterwards.
	 * At the global peak: site0 0, site1 50, site2 120. */
	mt_col_alloc(&c, 1, 10, 0x1000, 100, 0, 0);
	mt_col_alloc(&c, 1, 20, 0x2000, 50, 1, 0);
	mt_col_free(&c, 1, 30, 0x1000);
	mt_col_alloc(&c, 1, 40, 0x3000, 120, 2, 1);
	mt_col_free(&c, 1, 50, 0x2000);
	mt_col_alloc(&c, 1, 60, 0x4000, 10, 0, 0); /* 140: below the peak */
	mt_col_finish(&c);
	CHECK_EQ(c.t.peak_bytes, 170);
	CHECK_EQ(c.t.peak_count, 2);
	CHECK_EQ(c.t.peak_ts, 40);
	CHECK_EQ(c.sites[0].peak_bytes, 0);
	CHECK_EQ(c.sites[1].peak_bytes, 50);
	CHECK_EQ(c.sites[2].peak_bytes, 120);
	CHECK_EQ(c.sites[2].fn, 1);
	/* leaks: 0x3000 (120) and 0x4000 (10) */
	CHECK_EQ(c.t.live_bytes, 130);
	CHECK_EQ(c.t.live_count, 2);
	CHECK_EQ(c.sites[0].live_bytes, 10);
	CHECK_EQ(c.sites[0].allocations, 2);
	CHECK_EQ(c.sites[0].frees, 1);
	CHECK_EQ(c.t.allocations, 4);
	CHECK_EQ(c.t.frees, 2);
	CHECK_EQ(c.t.allocated_bytes, 280);
	mt_col_destroy(&c);
}

static void test_temporary(void)
{
	struct mt_collector c;
	mt_col_init(&c);
	/* thread 1: alloc A, free A -> temporary.  thread 1: alloc B, alloc C,
	 * free C (temporary), free B (not).  Interleaved thread 2: alloc D on
	 * thread 2 between thread 1's alloc E and free E: E is still temporary
	 * (the next event *on its thread*).  realloc of F right after F's alloc:
	 * F is temporary (realloc frees it). */
	mt_col_alloc(&c, 1, 0, 0xa, 1, 0, 0);
	mt_col_free(&c, 1, 0, 0xa);
	mt_col_alloc(&c, 1, 0, 0xb, 1, 1, 0);
	mt_col_alloc(&c, 1, 0, 0xc, 1, 2, 0);
	mt_col_free(&c, 1, 0, 0xc);
	mt_col_free(&c, 1, 0, 0xb);
	mt_col_alloc(&c, 1, 0, 0xe, 1, 3, 0);
	mt_col_alloc(&c, 2, 0, 0xd, 1, 4, 0);
	mt_col_free(&c, 1, 0, 0xe);
	mt_col_alloc(&c, 1, 0, 0xf, 8, 5, 0);
	mt_col_realloc(&c, 1, 0, 0xf, 0x10, 16, 6, 2);
	mt_col_free(&c, 2, 0, 0x999); /* never allocated */
	mt_col_finish(&c);
	CHECK_EQ(c.t.temporary, 4);
	CHECK_EQ(c.sites[0].temporary, 1);
	CHECK_EQ(c.sites[1].temporary, 0);
	CHECK_EQ(c.sites[2].temporary, 1);
	CHECK_EQ(c.sites[3].temporary, 1);
	CHECK_EQ(c.sites[5].temporary, 1);
	CHECK_EQ(c.t.unmatched_frees, 1);
	/* A B C E D F and the realloc: 7 allocations; frees: A C B E and F
	 * (by the realloc) */
	CHECK_EQ(c.t.allocations, 7);
	CHECK_EQ(c.t.frees, 5);
	CHECK_EQ(c.sites[6].live_bytes, 16);
	CHECK_EQ(c.t.live_count, 2); /* D and the realloc'd block */
	mt_col_destroy(&c);
}

static void test_culled_and_growth(void)
{
	struct mt_collector c;
	mt_col_init(&c);
	mt_col_culled(&c, 3, 100, 6400, 40);
	/* 100000 live blocks, then all freed in another order: the table must
	 * grow and delete without losing any */
	for (uint64_t i = 1; i <= 100000; i++)
		mt_col_alloc(&c, 7, i, i * 48, 32, (uint32_t)(i % 5), 0);
	CHECK_EQ(c.t.live_count, 100000);
	for (uint64_t i = 100000; i >= 1; i -= 2)
		mt_col_free(&c, 7, 0, i * 48);
	for (uint64_t i = 1; i <= 100000; i += 2)
		mt_col_free(&c, 7, 0, i * 48);
	mt_col_finish(&c);
	CHECK_EQ(c.t.live_count, 0);
	CHECK_EQ(c.t.unmatched_frees, 0);
	CHECK_EQ(c.t.peak_bytes, 3200000);
	CHECK_EQ(c.t.allocations, 100100);
	CHECK_EQ(c.t.frees, 100100);
	/* the 40 culled, and block 100000: freed right after it was allocated */
	CHECK_EQ(c.t.temporary, 41);
	CHECK_EQ(c.sites[3].allocations, 20000 + 100);
	CHECK_EQ(c.sites[3].culled, 100);
	CHECK_EQ(c.sites[0].peak_bytes, 20000 * 32);
	mt_col_destroy(&c);
}

int main(void)
{
	test_peak();
	test_temporary();
	test_culled_and_growth();
	if (!failures)
		printf("collector: all checks passed\n");
	return failures ? 1 : 0;
}
