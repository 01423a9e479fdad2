/*
 * test_leakscan.c - the leak scan's rules (scan/leakscan.c) on a made-up
 * address space whose every pointer is known: memcheck's kinds for start
 * and interior pointers, chains, cycles, a former clique leader, blocks of
 * size 0, a block that cannot be read, and blocks that are not sorted.
 */
#include "scan/leakscan.h"
#include "../check.h"

#include <string.h>

#define BASE 0x100000ull
static uint64_t mem[1024]; /* the "heap": BASE + 8 * i is mem[i] */
static int fail_at = -1;   /* a block whose read fails */

static int rd(void *ctx, const struct mt_scan_piece *p, size_t n, void *buf)
{
	(void)ctx;
	for (size_t i = 0; i < n; buf = (char *)buf + p[i].len, i++) {
		if (p[i].addr < BASE || p[i].addr + p[i].len > BASE + sizeof mem)
			return -1;
		if (fail_at >= 0 && p[i].addr == BASE + 8 * (uint64_t)fail_at)
			return -1;
		memcpy(buf, (char *)mem + (p[i].addr - BASE), p[i].len);
	}
	return 0;
}

#define W(i) (BASE + 8 * (uint64_t)(i)) /* the address of mem[i] */

/* Blocks of 4 words at mem[0], [8], [16] ... (index k: W(8 * k)). */
#define NB 12
static struct mt_scan_block blocks[NB];

static void layout(void)
{
	memset(mem, 0, sizeof mem);
	for (int k = 0; k < NB; k++)
		blocks[k] = (struct mt_scan_block){ W(8 * k), 32 };
}

static void run(struct mt_leakscan *s, const uint64_t *roots, size_t nroots)
{
	CHECK(mt_leakscan_init(s, blocks, NB, rd, NULL) == 0);
	mt_leakscan_roots(s, roots, nroots * sizeof *roots);
	mt_leakscan_finish(s);
}

int main(void)
{
	struct mt_leakscan s;
	layout();
	/* 0 -> 1 (start): both reachable.  2 by an interior pointer from a
	 * root: possible; it points at 3's start: possible too (from a
	 * possible block).  4 -> 5 -> 6 and nothing at 4: 4 definite, 5 and 6
	 * indirect.  7 <-> 8, a cycle nobody holds: 7 (the lower) definite, 8
	 * indirect.  9 is pointed at only by 10, which nothing holds: 9 is a
	 * clique leader first, then joins 10's clique (indirect).  11 by an
	 * interior pointer first, then its start: reachable. */
	mem[8 * 0] = W(8 * 1);
	mem[8 * 2 + 1] = W(8 * 3);
	mem[8 * 4 + 3] = W(8 * 5);
	mem[8 * 5] = W(8 * 6) + 8; /* interior: still indirect */
	mem[8 * 7] = W(8 * 8);
	mem[8 * 8 + 2] = W(8 * 7);
	mem[8 * 10] = W(8 * 9);
	uint64_t roots[] = { 7, W(8 * 0), W(8 * 2) + 16, W(8 * 11) + 8, 0xdead, W(8 * 11), W(NB * 8) };
	run(&s, roots, sizeof roots / sizeof *roots);
	static const uint8_t want[NB] = {
		MT_LEAK_REACHABLE, MT_LEAK_REACHABLE, MT_LEAK_POSSIBLE, MT_LEAK_POSSIBLE,
		MT_LEAK_DEFINITE,  MT_LEAK_INDIRECT,  MT_LEAK_INDIRECT, MT_LEAK_DEFINITE,
		MT_LEAK_INDIRECT,  MT_LEAK_INDIRECT,  MT_LEAK_DEFINITE, MT_LEAK_REACHABLE,
	};
	for (int k = 0; k < NB; k++)
		if (s.kind[k] != want[k]) {
			fprintf(stderr, "block %d: %s, expected %s\n", k, mt_leak_kind_names[s.kind[k]],
				mt_leak_kind_names[want[k]]);
			failures++;
		}
	CHECK(!s.incomplete);
	/* each word of a block read once or twice (2 and 3 possible, then
	 * not again): at least the roots and every block */
	CHECK(s.scanned >= sizeof roots + NB * 32);
	CHECK_EQ(mt_leakscan_find(&s, W(8 * 3) + 31), 3);
	CHECK_EQ(mt_leakscan_find(&s, W(8 * 3) + 32), (uint64_t)-1); /* the gap after 3 */
	CHECK_EQ(mt_leakscan_find(&s, W(0) - 1), (uint64_t)-1);
	mt_leakscan_free(&s);

	/* a block the mark reaches cannot be read: nothing is called lost */
	fail_at = 8 * 1;
	run(&s, roots, sizeof roots / sizeof *roots);
	CHECK(s.incomplete);
	for (int k = 0; k < NB; k++)
		CHECK_EQ(s.kind[k], MT_LEAK_REACHABLE);
	mt_leakscan_free(&s);
	fail_at = -1;

	/* roots of the allocator's own data (starts_only): an interior
	 * pointer there (the heap's top inside the last block) reaches
	 * nothing; a start pointer still does */
	layout();
	CHECK(mt_leakscan_init(&s, blocks, NB, rd, NULL) == 0);
	s.starts_only = 1;
	uint64_t arena[] = { W(8 * 4) + 24, W(8 * 5) };
	mt_leakscan_roots(&s, arena, sizeof arena);
	s.starts_only = 0;
	uint64_t prog[] = { W(8 * 6) + 8 };
	mt_leakscan_roots(&s, prog, sizeof prog);
	mt_leakscan_finish(&s);
	CHECK_EQ(s.kind[4], MT_LEAK_DEFINITE);
	CHECK_EQ(s.kind[5], MT_LEAK_REACHABLE);
	CHECK_EQ(s.kind[6], MT_LEAK_POSSIBLE);
	mt_leakscan_free(&s);

	/* the index over regions: blocks far apart, a large one, one that
	 * crosses into the next 1 GB region, a region dense enough for a
	 * table of its own, and a block so large it spans every region */
	{
		static struct mt_scan_block far[3000 + 4];
		size_t nf = 0;
		far[nf++] = (struct mt_scan_block){ 0x10000000, 64 };
		far[nf++] = (struct mt_scan_block){ 0x10001000, 8192 };
		for (int k = 0; k < 3000; k++) /* 3,000 granules: a table */
			far[nf++] = (struct mt_scan_block){ 0x200000000 + 4096 * (uint64_t)k + 64, 16 };
		far[nf++] = (struct mt_scan_block){ 0x7f0000000000, 32 };
		far[nf++] = (struct mt_scan_block){ 0x7f0000000000 + (1ull << 30) - 16, 64 };
		CHECK(mt_leakscan_init(&s, far, nf, rd, NULL) == 0);
		CHECK_EQ(mt_leakscan_find(&s, 0x10000000 + 8), 0);
		CHECK_EQ(mt_leakscan_find(&s, 0x10001000 + 5000), 1);
		CHECK_EQ(mt_leakscan_find(&s, 0x10003000), (uint64_t)-1);
		CHECK_EQ(mt_leakscan_find(&s, 0x50000000), (uint64_t)-1); /* no region */
		CHECK_EQ(mt_leakscan_find(&s, 0x200000000 + 4096 * 2999ull + 64 + 15), 3001);
		CHECK_EQ(mt_leakscan_find(&s, 0x200000000 + 4096 * 1500ull + 63), (uint64_t)-1);
		CHECK_EQ(mt_leakscan_find(&s, 0x200000000 + 4096 * 1500ull + 64), 1502);
		CHECK_EQ(mt_leakscan_find(&s, 0x7f0000000000 + 31), 3002);
		CHECK_EQ(mt_leakscan_find(&s, 0x7f0000000000 + (1ull << 30) + 40), 3003);
		CHECK_EQ(mt_leakscan_find(&s, 0x7f0000000000 + (1ull << 30) + 48), (uint64_t)-1);
		CHECK(!s.wide);
		mt_leakscan_free(&s);
		struct mt_scan_block huge[] = { { 0x1000, 1ull << 40 }, { (1ull << 40) + 0x2000, 8 } };
		CHECK(mt_leakscan_init(&s, huge, 2, rd, NULL) == 0);
		CHECK(s.wide);
		CHECK_EQ(mt_leakscan_find(&s, 0x1000 + (1ull << 39)), 0);
		CHECK_EQ(mt_leakscan_find(&s, (1ull << 40) + 0x2004), 1);
		mt_leakscan_free(&s);
	}

	/* a block of size 0 is reached by its address alone */
	struct mt_scan_block zero[] = { { W(0), 0 }, { W(1), 0 } };
	CHECK(mt_leakscan_init(&s, zero, 2, rd, NULL) == 0);
	uint64_t r2[] = { W(0), 5 };
	mt_leakscan_roots(&s, r2, sizeof r2);
	mt_leakscan_finish(&s);
	CHECK_EQ(s.kind[0], MT_LEAK_REACHABLE);
	CHECK_EQ(s.kind[1], MT_LEAK_DEFINITE);
	CHECK(!s.incomplete);
	mt_leakscan_free(&s);

	/* a size that runs past the end of the address space does not wrap:
	 * the block spans to the end, and cannot be read: incomplete */
	struct mt_scan_block huge[] = { { W(0), 8 }, { W(2), UINT64_MAX } };
	CHECK(mt_leakscan_init(&s, huge, 2, rd, NULL) == 0);
	CHECK_EQ(s.hi, UINT64_MAX);
	CHECK_EQ(mt_leakscan_find(&s, UINT64_MAX - 1), 1);
	mt_leakscan_finish(&s);
	CHECK(s.incomplete);
	CHECK_EQ(s.kind[0], MT_LEAK_REACHABLE);
	mt_leakscan_free(&s);

	/* not sorted: refused */
	struct mt_scan_block unsorted[] = { { W(8), 8 }, { W(0), 8 } };
	CHECK(mt_leakscan_init(&s, unsorted, 2, rd, NULL) < 0);
	return failures ? 1 : 0;
}
