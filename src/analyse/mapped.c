/*
 * mapped.c - see mapped.h.
 *
 * The ranges mmap mapped are kept sorted and disjoint in one array: mapping
 * calls are few (a program that makes millions of them would want a tree).
 */
#include "mapped.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

struct ranges {
	uint64_t *lo, *hi; /* [lo, hi), sorted, disjoint */
	size_t n, cap;
	uint64_t bytes;
};

/* Takes [A, B) out of R (what of it R holds). */
static void ranges_cut(struct ranges *r, uint64_t a, uint64_t b)
{
	if (a >= b)
		return;
	size_t i = 0;
	while (i < r->n && r->hi[i] <= a)
		i++;
	while (i < r->n && r->lo[i] < b) {
		uint64_t lo = r->lo[i], hi = r->hi[i];
		uint64_t cl = lo > a ? lo : a, ch = hi < b ? hi : b;
		r->bytes -= ch - cl;
		if (lo < a && hi > b) { /* a hole in the middle: split */
			mt_grow(&r->lo, &r->cap, r->n, sizeof *r->lo);
			r->hi = xrealloc(r->hi, r->cap * sizeof *r->hi);
			memmove(r->lo + i + 1, r->lo + i, (r->n - i) * sizeof *r->lo);
			memmove(r->hi + i + 1, r->hi + i, (r->n - i) * sizeof *r->hi);
			r->n++;
			r->hi[i] = a;
			r->lo[i + 1] = b;
			return;
		}
		if (lo < a) {
			r->hi[i++] = a;
		} else if (hi > b) {
			r->lo[i] = b;
			return;
		} else {
			memmove(r->lo + i, r->lo + i + 1, (r->n - i - 1) * sizeof *r->lo);
			memmove(r->hi + i, r->hi + i + 1, (r->n - i - 1) * sizeof *r->hi);
			r->n--;
		}
	}
}

static void ranges_add(struct ranges *r, uint64_t a, uint64_t b)
{
	if (a >= b)
		return;
	ranges_cut(r, a, b);
	size_t i = 0;
	while (i < r->n && r->lo[i] < a)
		i++;
	mt_grow(&r->lo, &r->cap, r->n, sizeof *r->lo);
	r->hi = xrealloc(r->hi, r->cap * sizeof *r->hi);
	memmove(r->lo + i + 1, r->lo + i, (r->n - i) * sizeof *r->lo);
	memmove(r->hi + i + 1, r->hi + i, (r->n - i) * sizeof *r->hi);
	r->lo[i] = a;
	r->hi[i] = b;
	r->n++;
	r->bytes += b - a;
}

static uint64_t page_up(uint64_t n)
{
	return (n + 4095) & ~(uint64_t)4095;
}

struct state {
	struct ranges mm;
	int64_t brk;	 /* the break's moves, all told */
	uint64_t brk_at; /* the last break seen (0: none) */
	uint64_t blocks; /* blocks' own mappings, live */
};

static uint64_t total(const struct state *s)
{
	return s->mm.bytes + (s->brk > 0 ? (uint64_t)s->brk : 0) + s->blocks;
}

static void step(struct state *s, const struct mt_mapev *e)
{
	const struct mt_mapcall *m = &e->m;
	if (m->error && m->kind != MT_MAP_BLOCK_END)
		return;
	switch (m->kind) {
	case MT_MAP_MMAP:
		ranges_add(&s->mm, m->addr, m->addr + page_up(m->len));
		break;
	case MT_MAP_MUNMAP:
		ranges_cut(&s->mm, m->addr, m->addr + page_up(m->len));
		break;
	case MT_MAP_MREMAP: {
		/* only what was traced of the old range moves */
		struct ranges *r = &s->mm;
		uint64_t before = r->bytes;
		ranges_cut(r, m->old_addr, m->old_addr + page_up(m->old_len));
		if (r->bytes != before || m->by == MT_MAP_BY_ALLOCATOR)
			ranges_add(r, m->addr, m->addr + page_up(m->len));
		break;
	}
	case MT_MAP_BRK:
		s->brk += mt_brk_move(m, &s->brk_at);
		break;
	case MT_MAP_BLOCK:
		s->blocks += m->len;
		break;
	case MT_MAP_BLOCK_END:
		s->blocks -= s->blocks >= m->len ? m->len : s->blocks;
		break;
	}
}

int64_t mt_brk_move(const struct mt_mapcall *m, uint64_t *last)
{
	uint64_t from = m->old_addr ? m->old_addr : *last ? *last : m->addr;
	*last = m->addr;
	return (int64_t)(m->addr - from);
}

void mt_mapped_walk(const struct mt_process *p, mt_mapped_fn fn, void *ctx)
{
	struct state s = { 0 };
	for (size_t i = 0; i < p->nmaps; i++) {
		step(&s, &p->maps[i]);
		fn(ctx, &p->maps[i], total(&s));
	}
	free(s.mm.lo);
	free(s.mm.hi);
}

void mt_mapped_of(const struct mt_process *p, struct mt_mapped *r)
{
	memset(r, 0, sizeof *r);
	struct state s = { 0 };
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct mt_mapev *e = &p->maps[i];
		step(&s, e);
		if (e->m.kind < MT_MAP_KIND_COUNT) {
			r->calls++;
			r->kind[e->m.kind]++;
			r->failed += e->m.error != 0;
			r->by_allocator += e->m.by == MT_MAP_BY_ALLOCATOR;
			if (e->m.kind == MT_MAP_MMAP && !e->m.error)
				r->mmap_bytes += e->m.len;
		}
		uint64_t t = total(&s);
		if (t > r->peak_bytes) {
			r->peak_bytes = t;
			r->peak_ts = e->ts;
		}
	}
	r->end_mmap = s.mm.bytes;
	r->end_brk = s.brk > 0 ? (uint64_t)s.brk : 0;
	r->end_blocks = s.blocks;
	r->end_bytes = total(&s);
	free(s.mm.lo);
	free(s.mm.hi);
}
