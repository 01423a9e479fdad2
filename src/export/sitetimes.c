/*
 * sitetimes.c - see sitetimes.h.
 */
#include "sitetimes.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* Pairs kept in memory before the grid coarsens (about 48 MB). */
#define MAX_PAIRS (1u << 20)
/* What the times may add to a page: a few bytes a site, and this much. */
#define PAGE_EXTRA (1u << 20)
#define SITE_BYTES 4
/* About what a pair written as an array costs. */
#define PAIR_BYTES 24

/* The grids, finest first: each divides the one before. */
static const int grids[] = { MT_ST_GRID, 150, 75, 25, 5, 1 };

void mt_st_init(struct mt_site_times *st)
{
	memset(st, 0, sizeof *st);
	st->cells = MT_ST_GRID;
	mt_blocks_init(&st->blocks);
	if (mt_ptrmap_init(&st->index, 1u << 12) < 0)
		st->failed = 1;
}

void mt_st_destroy(struct mt_site_times *st)
{
	mt_blocks_destroy(&st->blocks);
	mt_ptrmap_destroy(&st->index);
	free(st->pairs);
	memset(st, 0, sizeof *st);
}

static uint64_t key(uint32_t site, uint32_t cell)
{
	return ((uint64_t)site << 16 | cell) + 1;
}

/* The pair of SITE in the cell of fine bucket FINE. */
static struct mt_st_pair *pair(struct mt_site_times *st, uint32_t site, int fine)
{
	uint32_t cell = (uint32_t)(fine * st->cells / MT_ST_GRID);
	uint64_t i;
	if (mt_ptrmap_get(&st->index, key(site, cell), &i))
		return &st->pairs[i - 1];
	mt_grow(&st->pairs, &st->cap, st->n, sizeof *st->pairs);
	st->pairs[st->n] = (struct mt_st_pair){ .site = site, .cell = cell };
	if (mt_ptrmap_put(&st->index, key(site, cell), ++st->n) < 0)
		st->failed = 1;
	return &st->pairs[st->n - 1];
}

/* The grid coarsened to the next one: pairs of the same site and new cell
 * merged. */
static void coarsen(struct mt_site_times *st)
{
	int next = 1;
	for (size_t g = 0; g + 1 < sizeof grids / sizeof *grids; g++)
		if (grids[g] == st->cells)
			next = grids[g + 1];
	struct mt_st_pair *old = st->pairs;
	size_t n = st->n;
	st->pairs = NULL;
	st->n = st->cap = 0;
	mt_ptrmap_destroy(&st->index);
	if (mt_ptrmap_init(&st->index, 1u << 12) < 0)
		st->failed = 1;
	int was = st->cells;
	st->cells = next;
	for (size_t i = 0; i < n && !st->failed; i++) {
		/* a cell of the old grid starts at fine bucket cell * GRID / was */
		struct mt_st_pair *p =
			pair(st, old[i].site, (int)(old[i].cell * MT_ST_GRID / (uint32_t)was));
		p->allocations += old[i].allocations;
		p->bytes += old[i].bytes;
		p->leaked += old[i].leaked;
		p->leaked_bytes += old[i].leaked_bytes;
		p->temporary += old[i].temporary;
	}
	free(old);
}

void mt_st_alloc(struct mt_site_times *st, uint64_t ptr, uint64_t size, uint32_t site, int fine)
{
	if (st->failed)
		return;
	mt_st_free(st, ptr, 0); /* handed out again: its free was lost */
	struct mt_st_pair *p = pair(st, site, fine);
	p->allocations++;
	p->bytes += size;
	mt_blocks_put(&st->blocks,
		      &(struct mt_block){
			      .ptr = ptr, .size = size, .site = site, .aux = (uint32_t)fine });
	if (st->n > MAX_PAIRS && st->cells > 1)
		coarsen(st);
}

void mt_st_free(struct mt_site_times *st, uint64_t ptr, int temporary)
{
	struct mt_block b;
	if (st->failed || !mt_blocks_take(&st->blocks, ptr, &b))
		return;
	if (temporary)
		pair(st, b.site, (int)b.aux)->temporary++;
}

static int by_site(const void *a, const void *b)
{
	const struct mt_st_pair *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->cell < y->cell ? -1 : x->cell > y->cell;
}

/* What the pairs would add to the page. */
static size_t page_bytes(const struct mt_site_times *st)
{
	size_t bytes = 0;
	for (size_t i = 0; i < st->n; i++) {
		int alone = (i == 0 || st->pairs[i - 1].site != st->pairs[i].site) &&
			    (i + 1 == st->n || st->pairs[i + 1].site != st->pairs[i].site);
		bytes += alone ? SITE_BYTES : PAIR_BYTES;
	}
	return bytes;
}

void mt_st_finish(struct mt_site_times *st, size_t nsites, const struct mt_collector *col)
{
	if (st->failed)
		return;
	/* the blocks left were never freed: leaked, where they were made */
	size_t pos = 0;
	for (const struct mt_block *b; (b = mt_blocks_next(&st->blocks, &pos));) {
		if (!mt_col_is_live(col, b->ptr))
			continue; /* held by the runtime until exit: not a leak */
		struct mt_st_pair *p = pair(st, b->site, (int)b->aux);
		p->leaked++;
		p->leaked_bytes += b->size;
	}
	mt_blocks_destroy(&st->blocks);
	for (;;) {
		qsort(st->pairs, st->n, sizeof *st->pairs, by_site);
		if (st->cells == 1 || page_bytes(st) <= (size_t)SITE_BYTES * nsites + PAGE_EXTRA)
			break;
		coarsen(st);
	}
	mt_ptrmap_destroy(&st->index);
}

void mt_st_site_json(FILE *f, struct mt_site_times *st, uint32_t s, const struct mt_site_stats *its)
{
	if (st->failed) {
		fputs(",null", f);
		return;
	}
	/* the site's pairs: found by bisection in the sorted array */
	size_t lo = 0, hi = st->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->pairs[mid].site < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < st->n && st->pairs[end].site == s)
		end++;
	const struct mt_st_pair *p = &st->pairs[lo];
	if (end == lo + 1 && p->allocations == its->allocations &&
	    p->bytes == its->allocated_bytes && p->leaked == its->live_count &&
	    p->leaked_bytes == its->live_bytes && p->temporary == its->temporary) {
		fprintf(f, ",%u", p->cell);
		return;
	}
	fputs(",[", f);
	for (size_t i = lo; i < end; i++)
		fprintf(f, "%s%u,%llu,%llu,%llu,%llu,%llu", i > lo ? "," : "", st->pairs[i].cell,
			(unsigned long long)st->pairs[i].allocations,
			(unsigned long long)st->pairs[i].bytes,
			(unsigned long long)st->pairs[i].leaked,
			(unsigned long long)st->pairs[i].leaked_bytes,
			(unsigned long long)st->pairs[i].temporary);
	fputc(']', f);
}
