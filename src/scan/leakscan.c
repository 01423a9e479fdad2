/*
 * leakscan.c - see leakscan.h.
 *
 * Two passes, as memcheck's leak check makes them.  From the roots: a
 * pointer to a block's start from a root or a reachable block makes it
 * reachable; any other pointer into it (an interior pointer, or one from a
 * possibly lost block) makes an unreached block possibly lost.  A block
 * whose state changes is pushed and scanned (again): at most twice, once
 * possible and once reachable.  Then the blocks nothing reached, in address
 * order, each as the leader of a clique: every unreached block it reaches,
 * by any pointer, is indirectly lost (a former leader too); the leaders left
 * are definitely lost.
 */
#include "leakscan.h"
#include "base/bisect.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* How much is read at a time, of how many blocks at most. */
#define SCAN_PIECE (256u * 1024u)
#define BATCH_BLOCKS 512

/* The index's granule: a word's block starts in the word's granule, the one
 * before (a block crossing into it) or is larger than a granule. */
#define GRANULE_SHIFT 12

/* The clique pass's "no clique": the roots' pass. */
#define NO_CLIQUE SIZE_MAX

/* Regions of 1 GB; a region where at least DENSE_STARTS granules have a
 * block starting gets a table (2 MB) of its own. */
#define REGION_SHIFT 30
#define REGION_GRANULES ((size_t)1 << (REGION_SHIFT - GRANULE_SHIFT))
#define DENSE_STARTS 2048
/* A block spanning more regions than this makes the index "wide". */
#define MAX_SPAN_REGIONS 64

static int add_region(struct mt_leakscan *s, size_t *cap, uint64_t r)
{
	if (s->nregions && s->regions[s->nregions - 1].region >= r) {
		/* blocks come in address order: only a spanning block's later
		 * regions, or the same region again */
		for (size_t i = s->nregions; i-- > 0 && s->regions[i].region >= r;)
			if (s->regions[i].region == r)
				return 0;
	}
	if (s->nregions == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct mt_scan_region *v = realloc(s->regions, c * sizeof *v);
		if (!v)
			return -1;
		s->regions = v;
		*cap = c;
	}
	s->regions[s->nregions++] = (struct mt_scan_region){ r, NULL };
	return 0;
}

static int by_region(const void *a, const void *b)
{
	const struct mt_scan_region *x = a, *y = b;
	return x->region < y->region ? -1 : x->region > y->region;
}

/* The region entry of address >> REGION_SHIFT R, or NULL. */
static const struct mt_scan_region *region_of(const struct mt_leakscan *s, uint64_t r)
{
	size_t lo = MT_PARTITION(s->nregions, i, s->regions[i].region < r);
	return lo < s->nregions && s->regions[lo].region == r ? &s->regions[lo] : NULL;
}

/* Granule G's entry (first | count << 32) into *V, R being G's region
 * (region_of; NULL: none): 1, or 0 when no block starts in it. */
static int granule_in(const struct mt_leakscan *s, const struct mt_scan_region *r, uint64_t g,
		      uint64_t *v)
{
	if (!r)
		return 0;
	if (r->table) {
		*v = r->table[g & (REGION_GRANULES - 1)];
		return *v != 0;
	}
	return mt_ptrmap_get(&s->granules, g + 1, v);
}

/* The regions, their tables, the hash of the sparse regions' granules
 * and the list of large blocks. */
static int index_blocks(struct mt_leakscan *s)
{
	size_t granules = 0, slots = 1024, cap = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct mt_scan_block *b = &s->blocks[i];
		granules += !i ||
			    b->addr >> GRANULE_SHIFT != s->blocks[i - 1].addr >> GRANULE_SHIFT;
		s->nlarge += b->size >> GRANULE_SHIFT != 0;
		uint64_t r0 = b->addr >> REGION_SHIFT, end = b->addr + (b->size ? b->size - 1 : 0);
		uint64_t r1 = (end < b->addr ? UINT64_MAX : end) >> REGION_SHIFT;
		if (r1 - r0 >= MAX_SPAN_REGIONS) {
			s->wide = 1;
			r1 = r0;
		}
		for (uint64_t r = r0; r <= r1; r++)
			if (add_region(s, &cap, r) < 0)
				return -1;
	}
	if (s->nregions)
		qsort(s->regions, s->nregions, sizeof *s->regions, by_region);
	/* the starts per region: the dense ones get a table */
	size_t *starts = calloc(s->nregions ? s->nregions : 1, sizeof *starts);
	if (!starts)
		return -1;
	for (size_t i = 0; i < s->n; i++)
		if (!i ||
		    s->blocks[i].addr >> GRANULE_SHIFT != s->blocks[i - 1].addr >> GRANULE_SHIFT)
			starts[region_of(s, s->blocks[i].addr >> REGION_SHIFT) - s->regions]++;
	for (size_t k = 0; k < s->nregions; k++) {
		if (starts[k] < DENSE_STARTS)
			continue;
		s->regions[k].table = mt_ptrmap_mem(REGION_GRANULES * sizeof(uint64_t));
		if (!s->regions[k].table) {
			free(starts);
			return -1;
		}
		granules -= starts[k];
	}
	free(starts);
	while (slots < 2 * granules)
		slots *= 2;
	s->large = malloc((s->nlarge ? s->nlarge : 1) * sizeof *s->large);
	if (!s->large || mt_ptrmap_init(&s->granules, slots) < 0)
		return -1;
	size_t nl = 0;
	for (size_t i = 0, first = 0; i < s->n; i++) {
		uint64_t g = s->blocks[i].addr >> GRANULE_SHIFT;
		if (s->blocks[i].size >> GRANULE_SHIFT)
			s->large[nl++] = (uint32_t)i;
		if (i + 1 < s->n && s->blocks[i + 1].addr >> GRANULE_SHIFT == g)
			continue;
		uint64_t v = first | (uint64_t)(i + 1 - first) << 32;
		const struct mt_scan_region *r = region_of(s, g >> (REGION_SHIFT - GRANULE_SHIFT));
		if (r->table)
			r->table[g & (REGION_GRANULES - 1)] = v;
		else if (mt_ptrmap_put(&s->granules, g + 1, v) < 0)
			return -1;
		first = i + 1;
	}
	return 0;
}

int mt_leakscan_init(struct mt_leakscan *s, const struct mt_scan_block *blocks, size_t n,
		     mt_scan_read_fn read, void *ctx)
{
	memset(s, 0, sizeof *s);
	s->blocks = blocks;
	s->n = n;
	s->read = read;
	s->ctx = ctx;
	if (n >= UINT32_MAX)
		return -1;
	for (size_t i = 1; i < n; i++)
		if (blocks[i].addr < blocks[i - 1].addr)
			return -1;
	s->kind = calloc(n ? n : 1, 1);
	s->buf = malloc(SCAN_PIECE);
	s->batch = malloc(BATCH_BLOCKS * sizeof *s->batch);
	s->batch_idx = malloc(BATCH_BLOCKS * sizeof *s->batch_idx);
	if (!s->kind || !s->buf || !s->batch || !s->batch_idx || index_blocks(s) < 0) {
		mt_leakscan_free(s);
		return -1;
	}
	if (n) {
		s->lo = blocks[0].addr;
		for (size_t i = 0; i < n; i++) {
			/* a block's end, saturated: a hostile size cannot wrap */
			uint64_t end = blocks[i].addr + blocks[i].size;
			end = end < blocks[i].addr ? UINT64_MAX : end;
			s->hi = end > s->hi ? end : s->hi;
		}
		if (s->hi == s->lo)
			s->hi = s->lo + 1; /* one block of size 0 */
	}
	return 0;
}

void mt_leakscan_free(struct mt_leakscan *s)
{
	free(s->kind);
	free(s->stack);
	free(s->buf);
	free(s->large);
	free(s->batch);
	free(s->batch_idx);
	s->batch = NULL;
	s->batch_idx = NULL;
	mt_ptrmap_destroy(&s->granules);
	for (size_t k = 0; k < s->nregions; k++)
		if (s->regions[k].table)
			munmap(s->regions[k].table, REGION_GRANULES * sizeof(uint64_t));
	free(s->regions);
	s->regions = NULL;
	s->nregions = 0;
	s->kind = NULL;
	s->stack = NULL;
	s->buf = NULL;
	s->large = NULL;
}

static int covers(const struct mt_scan_block *b, uint64_t addr)
{
	return addr == b->addr || addr - b->addr < b->size;
}

/* The last of the blocks [LO, HI) (indices) that starts at or below ADDR,
 * if it holds ADDR; IDX maps a position to a block (NULL: itself). */
static ptrdiff_t search(const struct mt_leakscan *s, const uint32_t *idx, size_t lo, size_t hi,
			uint64_t addr)
{
#define AT(k) (idx ? idx[k] : (k))
	if (lo == hi || s->blocks[AT(lo)].addr > addr)
		return -1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->blocks[AT(mid)].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return covers(&s->blocks[AT(lo)], addr) ? (ptrdiff_t)AT(lo) : -1;
#undef AT
}

/* The block holding ADDR (within the blocks' span), R being its region
 * (region_of; NULL: none), or -1. */
static ptrdiff_t find_in(const struct mt_leakscan *s, const struct mt_scan_region *r, uint64_t addr)
{
	/* (a word in no region of blocks: at once) */
	if (!r && !s->wide)
		return -1;
	uint64_t g = addr >> GRANULE_SHIFT, v;
	if (granule_in(s, r, g, &v)) {
		size_t first = (uint32_t)v, count = (size_t)(v >> 32);
		if (addr >= s->blocks[first].addr) {
			if (count > 8)
				return search(s, NULL, first, first + count, addr);
			/* a few blocks (most granules): in a line or two */
			size_t k = first;
			while (k + 1 < first + count && s->blocks[k + 1].addr <= addr)
				k++;
			return covers(&s->blocks[k], addr) ? (ptrdiff_t)k : -1;
		}
		/* before the granule's first block: the block before it */
		return first && covers(&s->blocks[first - 1], addr) ? (ptrdiff_t)first - 1 : -1;
	}
	/* no block starts in this granule: one crossing from the granule
	 * before (the region's, or the region before's), or a large one */
	const struct mt_scan_region *rp =
		g & (REGION_GRANULES - 1) ? r :
					    region_of(s, (g - 1) >> (REGION_SHIFT - GRANULE_SHIFT));
	if (g && granule_in(s, rp, g - 1, &v)) {
		size_t last = (uint32_t)v + (size_t)(v >> 32) - 1;
		if (covers(&s->blocks[last], addr))
			return (ptrdiff_t)last;
	}
	return search(s, s->large, 0, s->nlarge, addr);
}

ptrdiff_t mt_leakscan_find(const struct mt_leakscan *s, uint64_t addr)
{
	if (addr - s->lo >= s->hi - s->lo)
		return -1;
	return find_in(s, region_of(s, addr >> REGION_SHIFT), addr);
}

static void push(struct mt_leakscan *s, size_t i)
{
	if (s->top == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint32_t *st = realloc(s->stack, cap * sizeof *st);
		if (!st) {
			s->failed = 1;
			return;
		}
		s->stack = st;
		s->cap = cap;
	}
	s->stack[s->top++] = (uint32_t)i;
}

/* A pointer WORD found in memory, into block J (-1: none): DEFINITE_FROM
 * when that memory is a root or a reachable block; CLIQUE the leader in the
 * clique pass. */
static void reach(struct mt_leakscan *s, uint64_t word, ptrdiff_t j, int definite_from,
		  size_t clique)
{
	if (j < 0)
		return;
	uint8_t *k = &s->kind[j];
	if (clique != NO_CLIQUE) {
		if (*k == MT_LEAK_DEFINITE && (size_t)j != clique) {
			*k = MT_LEAK_INDIRECT;
			push(s, (size_t)j);
		}
		return;
	}
	if (word == s->blocks[j].addr && definite_from) {
		if (*k != MT_LEAK_REACHABLE) {
			*k = MT_LEAK_REACHABLE;
			push(s, (size_t)j);
		}
	} else if (*k == MT_LEAK_DEFINITE && !(s->starts_only && clique == NO_CLIQUE)) {
		*k = MT_LEAK_POSSIBLE;
		push(s, (size_t)j);
	}
}

/* The words that look like pointers are looked up a batch at a time, in
 * three steps over the batch: their granules' entries prefetched, then
 * the blocks and kinds those name, then the lookups: on a heap of random
 * pointers a lookup otherwise waits on three cache misses in a row. */
#define BATCH 32

static void prefetch_granule(const struct mt_leakscan *s, const struct mt_scan_region *r,
			     uint64_t g)
{
	if (r && r->table) {
		__builtin_prefetch(&r->table[g & (REGION_GRANULES - 1)]);
	} else {
		size_t slot = mt_ptrmap_hash(g + 1) & s->granules.mask;
		__builtin_prefetch(&s->granules.keys[slot]);
		__builtin_prefetch(&s->granules.vals[slot]);
	}
}

/* The candidates CAND, each in region REG (region_of), N of them. */
static void lookup_batch(struct mt_leakscan *s, const uint64_t *cand,
			 const struct mt_scan_region *const *reg, size_t n, int definite_from,
			 size_t clique)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t v;
		if (granule_in(s, reg[k], cand[k] >> GRANULE_SHIFT, &v)) {
			__builtin_prefetch(&s->blocks[(uint32_t)v]);
			__builtin_prefetch(&s->kind[(uint32_t)v]);
		}
	}
	for (size_t k = 0; k < n; k++)
		reach(s, cand[k], find_in(s, reg[k], cand[k]), definite_from, clique);
}

static void scan_words(struct mt_leakscan *s, const uintptr_t *w, size_t nw, int definite_from,
		       size_t clique)
{
	uint64_t lo = s->lo, span = s->hi - s->lo, cand[BATCH];
	const struct mt_scan_region *reg[BATCH];
	size_t n = 0;
	for (size_t i = 0; i < nw; i++) {
		if ((uint64_t)w[i] - lo >= span)
			continue;
		uint64_t g = (uint64_t)w[i] >> GRANULE_SHIFT;
		const struct mt_scan_region *r = region_of(s, g >> (REGION_SHIFT - GRANULE_SHIFT));
		if (!r && !s->wide)
			continue; /* in no region of blocks */
		prefetch_granule(s, r, g);
		reg[n] = r;
		cand[n++] = w[i];
		if (n == BATCH) {
			lookup_batch(s, cand, reg, n, definite_from, clique);
			n = 0;
		}
	}
	lookup_batch(s, cand, reg, n, definite_from, clique);
	s->scanned += nw * sizeof *w;
}

void mt_leakscan_roots(struct mt_leakscan *s, const void *words, size_t len)
{
	const unsigned char *p = words;
	/* the process's words are aligned in its memory: so is the buffer */
	size_t skip = (size_t)(-(uintptr_t)p & (sizeof(uintptr_t) - 1));
	if (skip >= len || !s->n)
		return;
	scan_words(s, (const uintptr_t *)(const void *)(p + skip), (len - skip) / sizeof(uintptr_t),
		   1, NO_CLIQUE);
}

/* The aligned words of block I: [*A, *END). */
static void words_of(const struct mt_scan_block *b, uint64_t *a, uint64_t *end)
{
	const uint64_t wsz = sizeof(uintptr_t);
	*a = (b->addr + wsz - 1) & ~(wsz - 1);
	*end = b->addr + b->size < b->addr ? UINT64_MAX : b->addr + b->size;
	*end = *end > *a ? *a + ((*end - *a) & ~(wsz - 1)) : *a;
}

/* A block larger than a batch, a piece at a time. */
static void scan_large(struct mt_leakscan *s, size_t i, size_t clique)
{
	uint64_t a, end;
	words_of(&s->blocks[i], &a, &end);
	int definite_from = s->kind[i] != MT_LEAK_POSSIBLE;
	while (a < end && !s->incomplete) {
		struct mt_scan_piece p = { a, end - a > SCAN_PIECE ? SCAN_PIECE : end - a };
		if (s->read(s->ctx, &p, 1, s->buf) < 0) {
			s->incomplete = 1;
			return;
		}
		scan_words(s, s->buf, (size_t)(p.len / sizeof(uintptr_t)), definite_from, clique);
		a += p.len;
	}
}

/* Pops blocks off the mark stack while they fit in a batch, reads them in
 * one call and scans each. */
static void scan_batch(struct mt_leakscan *s, size_t clique)
{
	size_t n = 0, bytes = 0;
	while (s->top && n < BATCH_BLOCKS) {
		size_t i = s->stack[s->top - 1];
		uint64_t a, end;
		words_of(&s->blocks[i], &a, &end);
		if (end - a > SCAN_PIECE) {
			if (n)
				break;
			s->top--;
			scan_large(s, i, clique);
			return;
		}
		if (bytes + (end - a) > SCAN_PIECE)
			break;
		s->top--;
		if (end == a)
			continue;
		s->batch[n] = (struct mt_scan_piece){ a, end - a };
		s->batch_idx[n++] = (uint32_t)i;
		bytes += end - a;
	}
	if (!n)
		return;
	if (s->read(s->ctx, s->batch, n, s->buf) < 0) {
		s->incomplete = 1;
		return;
	}
	const uintptr_t *w = s->buf;
	for (size_t k = 0; k < n; k++) {
		size_t nw = (size_t)(s->batch[k].len / sizeof *w);
		scan_words(s, w, nw, s->kind[s->batch_idx[k]] != MT_LEAK_POSSIBLE, clique);
		w += nw;
	}
}

static void drain(struct mt_leakscan *s, size_t clique)
{
	while (s->top && !s->incomplete && !s->failed)
		scan_batch(s, clique);
}

void mt_leakscan_finish(struct mt_leakscan *s)
{
	drain(s, NO_CLIQUE);
	for (size_t i = 0; i < s->n && !s->incomplete && !s->failed; i++) {
		if (s->kind[i] != MT_LEAK_DEFINITE)
			continue;
		push(s, i);
		drain(s, i);
	}
	if (s->incomplete || s->failed)
		memset(s->kind, MT_LEAK_REACHABLE, s->n);
	s->top = 0;
}
