/*
 * sitetimes.c - see sitetimes.h.
 */
#include "sitetimes.h"
#include "base/bisect.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* Pairs kept in memory before the grid coarsens (about 48 MB); threads'
 * pairs beyond it are given up. */
#define MAX_PAIRS (1u << 20)
/* What each kind may add to a page: a few bytes a site, and this much. */
#define PAGE_EXTRA (1u << 20)
#define SITE_BYTES 4
/* About what a pair written as an array costs. */
#define PAIR_BYTES 24
/* Threads numbered at most (a cell is 16 bits) */
#define MAX_THREADS 65535

/* The grids, finest first: each divides the one before. */
static const int grids[] = { MT_ST_GRID, 150, 75, 25, 5, 1 };

static void table_init(struct mt_st_table *t)
{
	memset(t, 0, sizeof *t);
	if (mt_ptrmap_init(&t->index, 1u << 12) < 0)
		t->failed = 1;
}

static void table_free(struct mt_st_table *t)
{
	mt_ptrmap_destroy(&t->index);
	free(t->pairs);
	memset(t, 0, sizeof *t);
}

void mt_st_init(struct mt_site_times *st)
{
	memset(st, 0, sizeof *st);
	st->cells = MT_ST_GRID;
	mt_blockrecs_init(&st->blocks);
	table_init(&st->times);
	table_init(&st->threads);
	if (mt_ptrmap_init(&st->tids, 64) < 0)
		st->threads.failed = 1;
}

void mt_st_destroy(struct mt_site_times *st)
{
	mt_blockrecs_destroy(&st->blocks);
	table_free(&st->times);
	table_free(&st->threads);
	mt_ptrmap_destroy(&st->tids);
	free(st->tid);
	memset(st, 0, sizeof *st);
}

static uint64_t key(uint32_t site, uint32_t cell)
{
	return ((uint64_t)site << 16 | cell) + 1;
}

/* The pair (SITE, CELL) of T, made when new; NULL when T has failed. */
static struct mt_st_pair *pair(struct mt_st_table *t, uint32_t site, uint32_t cell)
{
	uint64_t i;
	if (t->failed)
		return NULL;
	if (mt_ptrmap_get(&t->index, key(site, cell), &i))
		return &t->pairs[i - 1];
	mt_grow(&t->pairs, &t->cap, t->n, sizeof *t->pairs);
	t->pairs[t->n] = (struct mt_st_pair){ .site = site, .cell = cell };
	if (mt_ptrmap_put(&t->index, key(site, cell), ++t->n) < 0)
		t->failed = 1;
	return &t->pairs[t->n - 1];
}

/* The times' pair of SITE in the cell of fine bucket FINE. */
static struct mt_st_pair *time_pair(struct mt_site_times *st, uint32_t site, int fine)
{
	return pair(&st->times, site, (uint32_t)(fine * st->cells / MT_ST_GRID));
}

/* The number of thread TID (made when new), or -1 past MAX_THREADS. */
static int thread_number(struct mt_site_times *st, uint32_t tid)
{
	uint64_t v;
	if (mt_ptrmap_get(&st->tids, (uint64_t)tid + 1, &v))
		return (int)v - 1;
	if (st->ntids >= MAX_THREADS)
		return -1;
	mt_grow(&st->tid, &st->tids_cap, st->ntids, sizeof *st->tid);
	st->tid[st->ntids++] = tid;
	mt_ptrmap_xput(&st->tids, (uint64_t)tid + 1, st->ntids);
	return (int)st->ntids - 1;
}

/* The pair of block B's site and thread. */
static struct mt_st_pair *thread_pair(struct mt_site_times *st, const struct mt_block *b)
{
	int k = thread_number(st, b->tid);
	if (k < 0) {
		st->threads.failed = 1;
		return NULL;
	}
	return pair(&st->threads, b->site, (uint32_t)k);
}

static void merge(struct mt_st_pair *to, const struct mt_st_pair *p)
{
	to->allocations += p->allocations;
	to->bytes += p->bytes;
	to->leaked += p->leaked;
	to->leaked_bytes += p->leaked_bytes;
	to->temporary += p->temporary;
}

/* The grid coarsened to the next one: pairs of the same site and new cell
 * merged. */
static void coarsen(struct mt_site_times *st)
{
	int next = 1;
	for (size_t g = 0; g + 1 < sizeof grids / sizeof *grids; g++)
		if (grids[g] == st->cells)
			next = grids[g + 1];
	struct mt_st_table old = st->times;
	table_init(&st->times);
	int was = st->cells;
	st->cells = next;
	for (size_t i = 0; i < old.n && !st->times.failed; i++) {
		/* a cell of the old grid starts at fine bucket cell * GRID / was */
		struct mt_st_pair *p =
			time_pair(st, old.pairs[i].site,
				  (int)(old.pairs[i].cell * MT_ST_GRID / (uint32_t)was));
		if (p)
			merge(p, &old.pairs[i]);
	}
	table_free(&old);
}

/* One allocation into pair P, when there is one. */
static void count(struct mt_st_pair *p, uint64_t size)
{
	if (!p)
		return;
	p->allocations++;
	p->bytes += size;
}

void mt_st_alloc(struct mt_site_times *st, uint64_t ptr, uint64_t size, uint32_t site, uint32_t tid,
		 int fine)
{
	mt_st_free(st, ptr, 0); /* handed out again: its free was lost */
	struct mt_block b = {
		.ptr = ptr, .size = size, .site = site, .tid = tid, .aux = (uint32_t)fine
	};
	count(time_pair(st, site, fine), size);
	count(thread_pair(st, &b), size);
	mt_blockrecs_put(&st->blocks, &b);
	if (st->times.n > MAX_PAIRS && st->cells > 1)
		coarsen(st);
	if (st->threads.n > MAX_PAIRS)
		st->threads.failed = 1;
}

void mt_st_free(struct mt_site_times *st, uint64_t ptr, int temporary)
{
	struct mt_block b;
	if (!mt_blockrecs_take(&st->blocks, ptr, &b) || !temporary)
		return;
	struct mt_st_pair *p = time_pair(st, b.site, (int)b.aux), *q = thread_pair(st, &b);
	if (p)
		p->temporary++;
	if (q)
		q->temporary++;
}

static int by_site(const void *a, const void *b)
{
	const struct mt_st_pair *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->cell < y->cell ? -1 : x->cell > y->cell;
}

/* What T's pairs would add to the page. */
static size_t page_bytes(const struct mt_st_table *t)
{
	size_t bytes = 0;
	for (size_t i = 0; i < t->n; i++) {
		int alone = (i == 0 || t->pairs[i - 1].site != t->pairs[i].site) &&
			    (i + 1 == t->n || t->pairs[i + 1].site != t->pairs[i].site);
		bytes += alone ? SITE_BYTES : PAIR_BYTES;
	}
	return bytes;
}

void mt_st_finish(struct mt_site_times *st, size_t nsites, const struct mt_figures *figures)
{
	/* the blocks left were never freed: leaked, where they were made */
	size_t pos = 0;
	for (const struct mt_block *b; (b = mt_blockrecs_next(&st->blocks, &pos));) {
		if (!mt_figures_is_live(figures, b->ptr))
			continue; /* held by the runtime until exit: not a leak */
		struct mt_st_pair *p = time_pair(st, b->site, (int)b->aux), *q = thread_pair(st, b);
		for (int k = 0; k < 2; k++) {
			struct mt_st_pair *x = k ? q : p;
			if (x) {
				x->leaked++;
				x->leaked_bytes += b->size;
			}
		}
	}
	mt_blockrecs_destroy(&st->blocks);
	size_t bound = (size_t)SITE_BYTES * nsites + PAGE_EXTRA;
	for (;;) {
		if (st->times.n)
			qsort(st->times.pairs, st->times.n, sizeof *st->times.pairs, by_site);
		if (st->times.failed || st->cells == 1 || page_bytes(&st->times) <= bound)
			break;
		coarsen(st);
	}
	if (st->threads.n)
		qsort(st->threads.pairs, st->threads.n, sizeof *st->threads.pairs, by_site);
	if (page_bytes(&st->threads) > bound)
		st->threads.failed = 1;
	mt_ptrmap_destroy(&st->times.index);
	mt_ptrmap_destroy(&st->threads.index);
}

int mt_st_has_times(const struct mt_site_times *st)
{
	return !st->times.failed && st->cells > 1;
}

int mt_st_has_threads(const struct mt_site_times *st)
{
	return !st->threads.failed && st->ntids > 1;
}

void mt_st_site_json(FILE *f, struct mt_site_times *st, int by_thread, uint32_t s,
		     const struct mt_site_stats *its)
{
	const struct mt_st_table *t = by_thread ? &st->threads : &st->times;
	/* the site's pairs: found by bisection in the sorted array */
	size_t lo = MT_PARTITION(t->n, i, t->pairs[i].site < s);
	size_t end = lo;
	while (end < t->n && t->pairs[end].site == s)
		end++;
	const struct mt_st_pair *p = &t->pairs[lo];
	if (end == lo + 1 && p->allocations == its->allocations &&
	    p->bytes == its->allocated_bytes && p->leaked == its->live_count &&
	    p->leaked_bytes == its->live_bytes && p->temporary == its->temporary) {
		fprintf(f, ",%u", p->cell);
		return;
	}
	fputs(",[", f);
	for (size_t i = lo; i < end; i++)
		fprintf(f, "%s%u,%llu,%llu,%llu,%llu,%llu", i > lo ? "," : "", t->pairs[i].cell,
			(unsigned long long)t->pairs[i].allocations,
			(unsigned long long)t->pairs[i].bytes,
			(unsigned long long)t->pairs[i].leaked,
			(unsigned long long)t->pairs[i].leaked_bytes,
			(unsigned long long)t->pairs[i].temporary);
	fputc(']', f);
}

void mt_st_tids_json(FILE *f, const struct mt_site_times *st)
{
	fputc('[', f);
	for (size_t i = 0; i < st->ntids; i++)
		fprintf(f, "%s%u", i ? "," : "", st->tid[i]);
	fputc(']', f);
}
