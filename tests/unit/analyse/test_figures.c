/*
 * test_figures.c - unit tests of the figures' arithmetic on synthetic
 * event sequences whose figures are worked out by hand in the comments:
 * the global peak and each site's share of it (including sites that change
 * after the peak, and a later higher peak), temporaries per thread, realloc
 * as free + alloc, unmatched frees, culled aggregates, and a table that has
 * to grow and shrink through many blocks.  The window of serial-keyed
 * blocks is checked against the hash table: one sequence of events fed
 * with serial keys and with plain addresses (some blocks of 5 GB, too big
 * for the window's slots) must give the same figures.
 */
#include "analyse/blockvals.h"
#include "analyse/blockrecs.h"
#include "analyse/figures.h"
#include "format/codec.h"
#include "../check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

static void test_peak(void)
{
	struct mt_figures c;
	mt_figures_init(&c);
	/* site 0: 100 live; site 1: +50 -> 150 (peak 1); site 0 frees (50);
	 * site 2: +120 -> 170 (peak 2, the global one); site 1 frees afterwards.
	 * At the global peak: site0 0, site1 50, site2 120. */
	mt_figures_alloc(&c, 1, 10, 0x1000, 100, 0, 0);
	mt_figures_alloc(&c, 1, 20, 0x2000, 50, 1, 0);
	mt_figures_free(&c, 1, 30, 0x1000);
	mt_figures_alloc(&c, 1, 40, 0x3000, 120, 2, 1);
	mt_figures_free(&c, 1, 50, 0x2000);
	mt_figures_alloc(&c, 1, 60, 0x4000, 10, 0, 0); /* 140: below the peak */
	mt_figures_finish(&c);
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
	mt_figures_destroy(&c);
}

static void test_temporary(void)
{
	struct mt_figures c;
	mt_figures_init(&c);
	/* thread 1: alloc A, free A -> temporary.  thread 1: alloc B, alloc C,
	 * free C (temporary), free B (not).  Interleaved thread 2: alloc D on
	 * thread 2 between thread 1's alloc E and free E: E is still temporary
	 * (the next event *on its thread*).  realloc of F right after F's alloc:
	 * F is temporary (realloc frees it). */
	mt_figures_alloc(&c, 1, 0, 0xa, 1, 0, 0);
	mt_figures_free(&c, 1, 0, 0xa);
	mt_figures_alloc(&c, 1, 0, 0xb, 1, 1, 0);
	mt_figures_alloc(&c, 1, 0, 0xc, 1, 2, 0);
	mt_figures_free(&c, 1, 0, 0xc);
	mt_figures_free(&c, 1, 0, 0xb);
	mt_figures_alloc(&c, 1, 0, 0xe, 1, 3, 0);
	mt_figures_alloc(&c, 2, 0, 0xd, 1, 4, 0);
	mt_figures_free(&c, 1, 0, 0xe);
	mt_figures_alloc(&c, 1, 0, 0xf, 8, 5, 0);
	mt_figures_realloc(&c, 1, 0, 0xf, 0x10, 16, 6, 2);
	mt_figures_free(&c, 2, 0, 0x999); /* never allocated */
	mt_figures_finish(&c);
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
	mt_figures_destroy(&c);
}

static void test_culled_and_growth(void)
{
	struct mt_figures c;
	mt_figures_init(&c);
	mt_figures_culled(&c, 3, 100, 6400, 40);
	/* 100000 live blocks, then all freed in another order: the table must
	 * grow and delete without losing any */
	for (uint64_t i = 1; i <= 100000; i++)
		mt_figures_alloc(&c, 7, i, i * 48, 32, (uint32_t)(i % 5), 0);
	CHECK_EQ(c.t.live_count, 100000);
	for (uint64_t i = 100000; i >= 1; i -= 2)
		mt_figures_free(&c, 7, 0, i * 48);
	for (uint64_t i = 1; i <= 100000; i += 2)
		mt_figures_free(&c, 7, 0, i * 48);
	mt_figures_finish(&c);
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
	mt_figures_destroy(&c);
}

/* Block N's key: its serial (the window) or an address (the hash table). */
static uint64_t key(int serial, uint64_t n)
{
	return serial ? MT_SERIAL_KEY(n) : 0x10000 + n * 16;
}

static uint64_t rng_state;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A sequence that makes the window grow, spill its oldest blocks to the
 * hash table (blocks that live long, leaks), restart after a serial far
 * ahead, and see frees of spilled, unknown and doubly allocated blocks.
 * Both tables of blocks (BL) see the same puts and takes (*TAKEN: found). */
#define WN 300000
static void feed_window(struct mt_figures *c, int serial, struct mt_blockrecs *bl, uint64_t *taken,
			struct mt_blockvals *bm, uint64_t *sum)
{
	uint64_t next = 1;
	rng_state = 88172645463325252ull;
	/* the block freed at event i, one each (a block whose time is taken
	 * already leaks instead) */
	static uint64_t at[WN + 20000];
	memset(at, 0, sizeof at);
	for (uint64_t i = 0; i < WN; i++) {
		if (at[i]) {
			mt_figures_free(c, 1, i, key(serial, at[i]));
			*taken +=
				mt_blockrecs_take(bl, key(serial, at[i]), &(struct mt_block){ 0 });
			uint64_t v = 0;
			if (mt_blockvals_take(bm, key(serial, at[i]), &v))
				*sum += v * 3 + 1;
		}
		if (i == WN / 2)
			next += 5000000; /* a serial far ahead */
		uint64_t r = rng(), n = next++;
		uint64_t life = r % 100 < 60 ? 1 + r % 7 :   /* temporaries */
				r % 100 < 90 ? 2000 + r % 9000 : /* longer */
				r % 100 < 97 ? 0 :		 /* leaks */
					       15000 + r % 5000; /* outlive the window */
		uint64_t size = 16 + (r >> 40) % 500;
		if (r % 997 == 5)
			size += 5ull << 30; /* too big for a slot of the window */
		mt_figures_alloc(c, 1 + (uint32_t)(r >> 60), i, key(serial, n), size,
				 (uint32_t)((r >> 20) % 97), 0);
		mt_blockrecs_put(bl, &(struct mt_block){ .ptr = key(serial, n), .seq = i });
		mt_blockvals_put(bm, key(serial, n), i + 1);
		if (life && i + life < WN + 20000 && !at[i + life])
			at[i + life] = n;
		if (r % 1000 == 7)
			mt_figures_free(c, 1, i,
					key(serial, n + 3)); /* not allocated yet: unmatched */
		if (r % 1000 == 9)			     /* allocated again without a free */
			mt_figures_alloc(c, 1, i, key(serial, n), 8, 3, 0);
	}
}

static void test_window(void)
{
	struct mt_figures w, h;
	struct mt_blockrecs bw, bh;
	struct mt_blockvals mw, mh;
	uint64_t tw = 0, th = 0, sw = 0, sh = 0;
	mt_blockvals_init(&mw);
	mt_blockvals_init(&mh);
	mt_figures_init(&w);
	mt_figures_init(&h);
	mt_blockrecs_init(&bw);
	mt_blockrecs_init(&bh);
	feed_window(&w, 1, &bw, &tw, &mw, &sw);
	feed_window(&h, 0, &bh, &th, &mh, &sh);
	CHECK(w.win.slots != NULL && w.live_used > 0); /* both parts used */
	CHECK(w.win_big); /* blocks of 5 GB, in the hash table, figures alike */
	CHECK(h.win.slots == NULL);
	CHECK_EQ(w.t.live_count, h.t.live_count);
	CHECK_EQ(w.t.live_bytes, h.t.live_bytes);
	CHECK_EQ(w.t.frees, h.t.frees);
	CHECK_EQ(w.t.unmatched_frees, h.t.unmatched_frees);
	CHECK_EQ(w.t.temporary, h.t.temporary);
	CHECK_EQ(w.t.peak_bytes, h.t.peak_bytes);
	CHECK(w.t.unmatched_frees > 0 && w.t.live_count > 1000);
	mt_figures_finish(&w);
	mt_figures_finish(&h);
	for (uint32_t s = 0; s < 97; s++) {
		CHECK_EQ(w.sites[s].live_bytes, h.sites[s].live_bytes);
		CHECK_EQ(w.sites[s].frees, h.sites[s].frees);
		CHECK_EQ(w.sites[s].peak_bytes, h.sites[s].peak_bytes);
		CHECK_EQ(w.sites[s].temporary, h.sites[s].temporary);
	}
	/* the leaked blocks, one by one */
	for (uint64_t n = 1; n < WN + 5000000; n += n < 400000 ? 1 : 4999) {
		if (mt_figures_is_live(&w, key(1, n)) != mt_figures_is_live(&h, key(0, n))) {
			CHECK_EQ(n, 0);
			break;
		}
	}
	/* the blocks tables took and kept the same */
	CHECK_EQ(tw, th);
	CHECK_EQ(bw.live, bh.live);
	size_t pos = 0, nw = 0;
	while (mt_blockrecs_next(&bw, &pos))
		nw++;
	CHECK_EQ(nw, bw.live);
	/* and the block maps the same values */
	CHECK_EQ(sw, sh);
	CHECK(sw > 0 && mw.map.used > 0);
	/* shed (what report does before symbolizing): the figures stay, the
	 * blocks and the unused room go */
	struct mt_site_stats before[97];
	struct mt_totals tbefore = w.t;
	CHECK(w.nsites == 97 && w.sites_cap > w.nsites);
	memcpy(before, w.sites, sizeof before);
	CHECK(mt_figures_is_live(&w, key(1, 1)) || mt_figures_is_live(&w, key(1, 399999)) ||
	      w.t.live_count > 0);
	size_t nthreads_before = w.threads_used;
	mt_figures_shed(&w);
	CHECK_EQ(w.sites_cap, w.nsites);
	CHECK(!memcmp(before, w.sites, sizeof before));
	CHECK(!memcmp(&tbefore, &w.t, sizeof tbefore));
	CHECK(w.win.slots == NULL && w.live == NULL && w.times == NULL);
	/* the threads stay: the reports list what each allocated */
	CHECK(nthreads_before > 0 && w.threads_used == nthreads_before);
	for (uint64_t n = 1; n < WN + 5000000; n += n < 400000 ? 1 : 4999)
		if (mt_figures_is_live(&w, key(1, n))) {
			CHECK_EQ(n, 0);
			break;
		}
	mt_blockvals_destroy(&mw);
	mt_blockvals_destroy(&mh);
	mt_blockrecs_destroy(&bw);
	mt_blockrecs_destroy(&bh);
	mt_figures_destroy(&w);
	mt_figures_destroy(&h);
}

int main(void)
{
	test_window();
	test_peak();
	test_temporary();
	test_culled_and_growth();
	if (!failures)
		printf("figures: all checks passed\n");
	return failures ? 1 : 0;
}
