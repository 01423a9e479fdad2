/*
 * cull.c - see cull.h.
 *
 * Pending events live in a ring (FIFO) of decoded entries; a hash table maps
 * the address of each pending allocation to its entry so that a free can
 * find it in O(1).  An allocation culled from the middle of the FIFO leaves a
 * dead entry behind, skipped when it reaches the front.
 */
#include "cull.h"
#include "codec.h"
#include "base/ptrmap.h"

#include <string.h>
#include <sys/mman.h>

struct entry {
	uint8_t type, fn, dead, pad;
	uint32_t tid;
	uint64_t ts, ptr, old, size, stack;
};

struct agg {
	uint64_t stack; /* 0: empty */
	uint64_t count, bytes, temporary;
};

struct lastalloc {
	uint32_t key; /* tid + 1 */
	uint64_t ptr;
};

struct mt_cull {
	uint64_t threshold, pending_limit;
	mt_cull_emit_fn emit;
	void *ctx;
	struct mt_dec dec; /* input state */
	struct mt_enc enc; /* output state */
	struct entry *fifo;
	uint64_t fifo_cap, first, last; /* entries [first, last) */
	struct mt_ptrmap index;		/* pending allocation address -> fifo position */
	struct mt_ptrmap sizes;		/* every live block -> its size, for the true peak */
	uint64_t live, live_count, peak, peak_count, peak_ts;
	int peak_dirty;
	struct agg *aggs;
	size_t aggs_mask, aggs_used;
	int dirty;
	struct lastalloc *threads;
	size_t threads_mask;
	uint8_t out[1 << 16];
	size_t outlen;
	struct mt_event ev;
};

static void *get(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void put(void *p, size_t n)
{
	if (p)
		munmap(p, n);
}

struct mt_cull *mt_cull_new(uint64_t threshold_ns, mt_cull_emit_fn emit, void *ctx)
{
	struct mt_cull *c = get(sizeof *c);
	if (!c)
		return NULL;
	c->threshold = threshold_ns;
	c->pending_limit = 1u << 20;
	c->emit = emit;
	c->ctx = ctx;
	c->fifo_cap = 1u << 12;
	c->fifo = get(c->fifo_cap * sizeof *c->fifo);
	c->aggs_mask = 1023;
	c->aggs = get((c->aggs_mask + 1) * sizeof *c->aggs);
	c->threads_mask = 255;
	c->threads = get((c->threads_mask + 1) * sizeof *c->threads);
	if (mt_ptrmap_init(&c->index, 1u << 12) < 0 || mt_ptrmap_init(&c->sizes, 1u << 12) < 0 ||
	    !c->fifo || !c->aggs || !c->threads) {
		mt_cull_free(c);
		return NULL;
	}
	return c;
}

void mt_cull_set_pending_limit(struct mt_cull *c, uint64_t entries)
{
	c->pending_limit = entries ? entries : 1;
}

void mt_cull_free(struct mt_cull *c)
{
	if (!c)
		return;
	put(c->fifo, c->fifo_cap * sizeof *c->fifo);
	mt_ptrmap_destroy(&c->index);
	mt_ptrmap_destroy(&c->sizes);
	put(c->aggs, (c->aggs_mask + 1) * sizeof *c->aggs);
	put(c->threads, (c->threads_mask + 1) * sizeof *c->threads);
	put(c, sizeof *c);
}

/* ---- output ---- */

static void flush_out(struct mt_cull *c)
{
	if (c->outlen)
		c->emit(c->ctx, c->out, c->outlen);
	c->outlen = 0;
}

static uint8_t *room(struct mt_cull *c, size_t n)
{
	if (c->outlen + n > sizeof c->out)
		flush_out(c);
	return c->out + c->outlen;
}

static void emit_entry(struct mt_cull *c, const struct entry *e)
{
	uint8_t *w = room(c, 2 * MT_REC_MAX_SMALL), *s = w;
	w = mt_enc_thread(&c->enc, w, e->tid);
	if (e->type == MT_REC_ALLOC)
		w = mt_enc_alloc(&c->enc, w, e->fn, e->ts, e->ptr, e->size, e->stack);
	else if (e->type == MT_REC_REALLOC)
		w = mt_enc_realloc(&c->enc, w, e->fn, e->ts, e->old, e->ptr, e->size, e->stack);
	else
		w = mt_enc_free(&c->enc, w, e->ts, e->ptr);
	c->outlen += (size_t)(w - s);
}

/* ---- tables ---- */

static struct agg *agg_for(struct mt_cull *c, uint64_t stack)
{
	uint64_t key = stack + 1;
	if ((c->aggs_used + 1) * 2 > c->aggs_mask + 1) {
		struct agg *old = c->aggs;
		size_t n = c->aggs_mask + 1;
		struct agg *na = get(2 * n * sizeof *na);
		if (na) {
			c->aggs = na;
			c->aggs_mask = 2 * n - 1;
			for (size_t i = 0; i < n; i++) {
				if (!old[i].stack)
					continue;
				size_t j = mt_hash64(old[i].stack) & c->aggs_mask;
				while (c->aggs[j].stack)
					j = (j + 1) & c->aggs_mask;
				c->aggs[j] = old[i];
			}
			put(old, n * sizeof *old);
		}
	}
	size_t i = mt_hash64(key) & c->aggs_mask;
	while (c->aggs[i].stack && c->aggs[i].stack != key)
		i = (i + 1) & c->aggs_mask;
	if (!c->aggs[i].stack) {
		c->aggs[i].stack = key;
		c->aggs_used++;
	}
	return &c->aggs[i];
}

static uint64_t *last_alloc(struct mt_cull *c, uint32_t tid)
{
	uint32_t key = tid + 1;
	size_t i = mt_hash64(key) & c->threads_mask;
	for (size_t probes = 0; probes <= c->threads_mask;
	     probes++, i = (i + 1) & c->threads_mask) {
		if (c->threads[i].key == key)
			return &c->threads[i].ptr;
		if (!c->threads[i].key) {
			c->threads[i].key = key;
			return &c->threads[i].ptr;
		}
	}
	/* more threads than slots: reuse one (the temporary flag of that
	 * thread may then be missed, never invented) */
	c->threads[i].key = key;
	c->threads[i].ptr = 0;
	return &c->threads[i].ptr;
}

static int fifo_push(struct mt_cull *c, const struct entry *e)
{
	if (c->last - c->first == c->fifo_cap) {
		struct entry *n = get(2 * c->fifo_cap * sizeof *n);
		if (!n)
			return -1;
		for (uint64_t p = c->first; p < c->last; p++)
			n[p & (2 * c->fifo_cap - 1)] = c->fifo[p & (c->fifo_cap - 1)];
		put(c->fifo, c->fifo_cap * sizeof *c->fifo);
		c->fifo = n;
		c->fifo_cap *= 2;
	}
	c->fifo[c->last & (c->fifo_cap - 1)] = *e;
	c->last++;
	return 0;
}

/* Emits from the front every entry that no longer needs to wait. */
static void advance(struct mt_cull *c, uint64_t now, int all)
{
	while (c->first < c->last) {
		struct entry *e = &c->fifo[c->first & (c->fifo_cap - 1)];
		if (!e->dead) {
			int young = e->type != MT_REC_FREE && e->ts + c->threshold > now;
			if (young && !all && c->last - c->first <= c->pending_limit)
				break;
			uint64_t pos;
			if (e->type != MT_REC_FREE)
				mt_ptrmap_take(&c->index, e->ptr, &pos);
			emit_entry(c, e);
		}
		c->first++;
	}
}

/* Culled allocations never reach the figures (analyse/figures.h), so the peak is tracked
 * here over every event and written as a PEAK record. */
static void track_free(struct mt_cull *c, uint64_t ptr)
{
	uint64_t size;
	if (mt_ptrmap_take(&c->sizes, ptr, &size)) {
		c->live -= size;
		c->live_count--;
	}
}

static void track_alloc(struct mt_cull *c, uint64_t ptr, uint64_t size, uint64_t ts)
{
	uint64_t old;
	if (mt_ptrmap_take(&c->sizes, ptr, &old)) {
		c->live -= old;
		c->live_count--;
	}
	/* A block the full map cannot hold is left out of the live figures
	 * rather than added and never taken away. */
	if (mt_ptrmap_put(&c->sizes, ptr, size) < 0)
		return;
	c->live += size;
	c->live_count++;
	if (c->live > c->peak) {
		c->peak = c->live;
		c->peak_count = c->live_count;
		c->peak_ts = ts;
		c->peak_dirty = 1;
	}
}

static void emit_aggregates(struct mt_cull *c)
{
	if (c->peak_dirty) {
		uint8_t *w = room(c, MT_REC_MAX_SMALL), *s = w;
		c->outlen += (size_t)(mt_enc_peak(w, c->peak_ts, c->peak, c->peak_count) - s);
		c->peak_dirty = 0;
	}
	if (!c->dirty)
		return;
	for (size_t i = 0; i <= c->aggs_mask; i++) {
		struct agg *a = &c->aggs[i];
		if (!a->stack || !a->count)
			continue;
		uint8_t *w = room(c, MT_REC_MAX_SMALL), *s = w;
		w = mt_enc_culled(w, a->stack - 1, a->count, a->bytes, a->temporary);
		c->outlen += (size_t)(w - s);
		a->count = a->bytes = a->temporary = 0;
	}
	c->dirty = 0;
}

/* A free (or the free half of a realloc) of PTR at TS.  Returns 1 if it ended
 * a pending allocation younger than the threshold, which is then culled.  The
 * age is judged from the events' own times: the FIFO may not have been
 * advanced for a while (the process was idle). */
static int cull_free(struct mt_cull *c, uint64_t ts, uint64_t ptr, uint64_t *last)
{
	uint64_t pos;
	int temporary = *last == ptr;
	*last = 0;
	if (!mt_ptrmap_take(&c->index, ptr, &pos))
		return 0;
	struct entry *e = &c->fifo[pos & (c->fifo_cap - 1)];
	if (ts >= e->ts + c->threshold)
		return 0; /* lived long enough: it and its free are kept */
	struct agg *a = agg_for(c, e->stack);
	a->count++;
	a->bytes += e->size;
	a->temporary += (uint64_t)temporary;
	c->dirty = 1;
	if (e->type == MT_REC_REALLOC) {
		/* its free half stays: the old block did end there */
		e->type = MT_REC_FREE;
		e->ptr = e->old;
	} else {
		e->dead = 1;
	}
	return 1;
}

size_t mt_cull_feed(struct mt_cull *c, const uint8_t *records, size_t len, uint64_t now, int final)
{
	struct mt_event *ev = &c->ev;
	const uint8_t *at = records;
	c->dec.p = records;
	c->dec.end = records + len;
	while (records && mt_dec_next(&c->dec, ev) > 0) {
		int alloc = ev->type == MT_REC_ALLOC || ev->type == MT_REC_REALLOC ||
			    ev->type == MT_REC_FREE;
		/* no real record comes near; a recorder's client could send any */
		if (!alloc && mt_event_size(ev) > sizeof c->out)
			break;
		at = c->dec.p;
		if (alloc) {
			uint64_t *last = last_alloc(c, ev->tid);
			struct entry e = { (uint8_t)ev->type, (uint8_t)ev->fn, 0,	0,
					   ev->tid,	      ev->ts,	       ev->ptr, ev->old_ptr,
					   ev->size,	      ev->stack };
			if (ev->type == MT_REC_FREE)
				track_free(c, ev->ptr);
			else if (ev->type == MT_REC_REALLOC)
				track_free(c, ev->old_ptr);
			if (ev->type != MT_REC_FREE)
				track_alloc(c, ev->ptr, ev->size, ev->ts);
			if (ev->type == MT_REC_FREE) {
				if (cull_free(c, ev->ts, ev->ptr, last))
					continue;
			} else if (ev->type == MT_REC_REALLOC) {
				if (cull_free(c, ev->ts, ev->old_ptr, last)) {
					/* the old block was pending and is culled: what
					 * remains is a fresh allocation */
					e.type = MT_REC_ALLOC;
				}
			}
			if (ev->type != MT_REC_FREE)
				*last = ev->ptr;
			if (fifo_push(c, &e) < 0) {
				advance(c, now, 1);
				emit_entry(c, &e);
				continue;
			}
			/* Unindexed (the map is full), its free will not find it
			 * pending: both pass through, uncull'd but exact. */
			if (e.type != MT_REC_FREE)
				(void)mt_ptrmap_put(&c->index, e.ptr, c->last - 1);
			continue;
		}
		/* Everything else passes straight through; an EXIT ends the process,
		 * so nothing may stay pending behind it. */
		if (ev->type == MT_REC_EXIT)
			advance(c, now, 1);
		uint8_t *s = room(c, mt_event_size(ev) + 8), *w = s;
		if (ev->type == MT_REC_EXT && ev->ext == MT_EXT_MMAP)
			w = mt_enc_thread(&c->enc, w, ev->tid); /* (its thread) */
		c->outlen += (size_t)(mt_enc_passthrough(&c->enc, w, ev) - s);
	}
	advance(c, now, final);
	if (final || c->dirty || c->peak_dirty)
		emit_aggregates(c);
	flush_out(c);
	return (size_t)(at - records);
}
