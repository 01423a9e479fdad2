/*
 * figures.c - a process's figures: see figures.h for the semantics.
 *
 * The live table is open addressing on the block address with linear probing
 * and backward-shift deletion (no tombstones), so a long run of malloc/free
 * pairs never degrades it.  Address 0 marks an empty slot, and no allocator
 * returns it: a recording that says otherwise is damaged, and its events at
 * address 0 are left out (free(NULL) does nothing either).  The tables are
 * made on first use, so a process with no events (a file can name thousands
 * of empty streams) costs only its struct.
 *
 * Blocks of the recorder's compact records are named by serial, in the
 * order they were allocated: those sit in a window indexed by serial
 * instead (figures.h), which costs no hash and keeps blocks allocated
 * together next to each other, so that a recording of many live blocks is
 * read at the speed of memory rather than of its misses.
 */
#include "figures.h"
#include "base/hash.h"
#include "base/window.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

uint64_t mt_hash_salt(void)
{
	uint64_t s;
	if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		s = mt_hash64((uint64_t)t.tv_nsec ^ (uint64_t)(uintptr_t)&t ^
			      ((uint64_t)t.tv_sec << 32));
	}
	return s;
}

/* Where KEY's search starts in a table of MASK + 1 slots. */
static inline size_t home(const struct mt_figures *c, uint64_t key, size_t mask)
{
	return mt_hash64(key ^ c->salt) & mask;
}

void mt_figures_init(struct mt_figures *c)
{
	memset(c, 0, sizeof *c);
	c->salt = mt_hash_salt();
}

void mt_figures_destroy(struct mt_figures *c)
{
	free(c->sites);
	free(c->times);
	free(c->live);
	mt_window_free(&c->win);
	free(c->threads);
	memset(c, 0, sizeof *c);
}

void mt_figures_shed(struct mt_figures *c)
{
	/* the threads stay: one slot a thread, and the reports list them
	 * with what each allocated */
	free(c->live);
	mt_window_free(&c->win);
	c->live = NULL;
	c->live_mask = c->live_used = 0;
	free(c->times);
	c->times = NULL;
	/* the eighth grown for sites that did not come */
	if (c->nsites && c->nsites < c->sites_cap) {
		c->sites = xrealloc(c->sites, c->nsites * sizeof *c->sites);
		c->sites_cap = c->nsites;
	}
}

void mt_figures_reserve_site(struct mt_figures *c, uint32_t site)
{
	size_t old = c->sites_cap;
	if (site >= c->sites_cap) {
		/* by an eighth: a table of 65,536 sites is 9 MB, and doubling
		 * it for the few more most programs have would cost as much
		 * again (a quarter left 2.3 MB unused there; realloc moves a
		 * table this big by remapping its pages, not copying them) */
		size_t n = c->sites_cap < 64 ? 64 : c->sites_cap + c->sites_cap / 8;
		if (n <= site)
			n = (size_t)site + 1;
		c->sites = xrealloc(c->sites, n * sizeof *c->sites);
		memset(c->sites + old, 0, (n - old) * sizeof *c->sites);
		c->times = xrealloc(c->times, n * sizeof *c->times);
		memset(c->times + old, 0, (n - old) * sizeof *c->times);
		c->sites_cap = n;
	}
	for (size_t i = old; i < c->sites_cap; i++)
		c->sites[i].min_size = UINT64_MAX;
	if (site >= c->nsites)
		c->nsites = site + 1;
}

/* A process's first live table: sparse enough that the few dozen blocks most
 * programs hold at a time are found in one probe and freed without shifting
 * (16 slots, three-quarters full, made report 40% slower on churn), small
 * enough (32 KB) that a file of thousands of streams costs little, since
 * only streams with events get one. */
#define LIVE_FIRST_SLOTS 1024

static void live_grow(struct mt_figures *c)
{
	struct mt_live *old = c->live;
	size_t n = old ? c->live_mask + 1 : 0, m = n ? n * 2 : LIVE_FIRST_SLOTS;
	c->live_mask = m - 1;
	c->live = xcalloc(m, sizeof *c->live);
	for (size_t i = 0; i < n; i++) {
		if (!old[i].ptr)
			continue;
		size_t j = home(c, old[i].ptr, c->live_mask);
		while (c->live[j].ptr)
			j = (j + 1) & c->live_mask;
		c->live[j] = old[i];
	}
	free(old);
}

static struct mt_live *live_find(struct mt_figures *c, uint64_t ptr)
{
	if (!c->live || !ptr)
		return NULL;
	for (size_t i = home(c, ptr, c->live_mask);; i = (i + 1) & c->live_mask) {
		if (c->live[i].ptr == ptr)
			return &c->live[i];
		if (!c->live[i].ptr)
			return NULL;
	}
}

/* Puts a block that is not in the table. */
static void live_insert(struct mt_figures *c, const struct mt_live *b)
{
	if (!c->live || (c->live_used + 1) * 4 > (c->live_mask + 1) * 3)
		live_grow(c);
	size_t i = home(c, b->ptr, c->live_mask);
	while (c->live[i].ptr)
		i = (i + 1) & c->live_mask;
	c->live[i] = *b;
	c->live_used++;
}

static void live_remove(struct mt_figures *c, struct mt_live *e)
{
	size_t i = (size_t)(e - c->live);
	for (size_t j = (i + 1) & c->live_mask;; j = (j + 1) & c->live_mask) {
		if (!c->live[j].ptr)
			break;
		size_t h = home(c, c->live[j].ptr, c->live_mask);
		/* move j into the hole at i if its home is not in (i, j] */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			c->live[i] = c->live[j];
			i = j;
		}
	}
	c->live[i].ptr = 0;
	c->live_used--;
}

/* ---- the window of serial-keyed blocks (figures.h, base/window.h) ---- */

#define SERIAL_BIT (1ull << 63)

static int wslot_live(const void *slot)
{
	return ((const struct mt_wslot *)slot)->seq != 0;
}

/* An older serial's block goes to the hash table, which keeps every serial
 * below the window's base. */
static void wslot_spill(void *owner, uint64_t s, const void *slot)
{
	const struct mt_wslot *w = slot;
	live_insert(owner, &(struct mt_live){ SERIAL_BIT | s, w->size, w->site, w->seq });
}

/* 12 KB: what a process with events costs at least */
static const struct mt_window_kind wkind = { sizeof(struct mt_wslot), wslot_live, wslot_spill };

static inline struct mt_wslot *wslot(const struct mt_figures *c, uint64_t s)
{
	return mt_window_slot(&c->win, sizeof(struct mt_wslot), s);
}

/* ---- blocks: the window, then the hash table ---- */

/* Takes the block at PTR out: 1 with it in *OUT, 0 if unknown. */
static inline int block_take(struct mt_figures *c, uint64_t ptr, struct mt_live *out)
{
	if ((ptr & SERIAL_BIT) && c->win.slots && (ptr & ~SERIAL_BIT) >= c->win.base) {
		uint64_t s = ptr & ~SERIAL_BIT;
		struct mt_wslot *w = wslot(c, s);
		if (s - c->win.base <= c->win.mask && w->seq) {
			*out = (struct mt_live){ ptr, w->size, w->site, w->seq };
			w->seq = 0;
			c->win.used--;
			return 1;
		}
		/* a block of 4 GB or more sits in the hash table (below) */
		if (!c->win_big)
			return 0;
	}
	struct mt_live *e = live_find(c, ptr);
	if (!e)
		return 0;
	*out = *e;
	live_remove(c, e);
	return 1;
}

/* Puts block B: 1 with the block it replaced in *OLD (one at the same
 * address, allocated again without a free seen), else 0. */
static inline int block_put(struct mt_figures *c, const struct mt_live *b, struct mt_live *old)
{
	if (b->ptr & SERIAL_BIT) {
		uint64_t s = b->ptr & ~SERIAL_BIT;
		if (!c->win.slots)
			mt_window_start(&c->win, &wkind, MT_WINDOW_FIRST_SLOTS, s);
		/* (an older serial goes to the hash table, and so does a block
		 * too big for a slot) */
		if (s >= c->win.base && b->size <= UINT32_MAX) {
			struct mt_wslot *w = mt_window_reach(&c->win, &wkind, c, s);
			int had = w->seq != 0;
			if (had) {
				*old = (struct mt_live){ b->ptr, w->size, w->site, w->seq };
			} else if (c->win_big && block_take(c, b->ptr, old)) {
				had = 1; /* (a big one of the same serial: crafted) */
			}
			if (!had)
				c->win.used++;
			*w = (struct mt_wslot){ (uint32_t)b->size, b->site, b->seq };
			return had;
		}
		if (s >= c->win.base)
			c->win_big = 1;
		struct mt_wslot *w = wslot(c, s);
		if (mt_window_covers(&c->win, s) && w->seq) {
			/* a small one of the same serial (crafted): replaced */
			*old = (struct mt_live){ b->ptr, w->size, w->site, w->seq };
			w->seq = 0;
			c->win.used--;
			struct mt_live *e = live_find(c, b->ptr);
			if (e)
				*e = *b;
			else
				live_insert(c, b);
			return 1;
		}
	}
	struct mt_live *e = live_find(c, b->ptr);
	if (e) {
		*old = *e;
		*e = *b;
		return 1;
	}
	live_insert(c, b);
	return 0;
}

/* Threads are keyed by tid + 1 so that a zeroed slot is empty (no kernel
 * gives tid 2^32 - 1, which shares the key of the one below it). */
static struct mt_thread_last *thread(struct mt_figures *c, uint32_t tid)
{
	uint32_t key = tid == UINT32_MAX ? tid : tid + 1;
	/* most events are of the thread before them */
	if (c->threads && c->threads[c->thread_hint & c->threads_mask].tid == key)
		return &c->threads[c->thread_hint & c->threads_mask];
	if (!c->threads) {
		c->threads_mask = 3;
		c->threads = xcalloc(c->threads_mask + 1, sizeof *c->threads);
	}
	for (size_t i = home(c, key, c->threads_mask);; i = (i + 1) & c->threads_mask) {
		struct mt_thread_last *t = &c->threads[i];
		if (t->tid == key) {
			c->thread_hint = i;
			return t;
		}
		if (t->tid)
			continue;
		if ((c->threads_used + 1) * 2 <= c->threads_mask + 1) {
			*t = (struct mt_thread_last){ .tid = key };
			c->threads_used++;
			return t;
		}
		struct mt_thread_last *old = c->threads;
		size_t n = c->threads_mask + 1;
		c->threads_mask = n * 2 - 1;
		c->threads = xcalloc(n * 2, sizeof *c->threads);
		for (size_t k = 0; k < n; k++) {
			if (!old[k].tid)
				continue;
			size_t j = home(c, old[k].tid, c->threads_mask);
			while (c->threads[j].tid)
				j = (j + 1) & c->threads_mask;
			c->threads[j] = old[k];
		}
		free(old);
		return thread(c, tid);
	}
}

static int by_tid(const void *a, const void *b)
{
	uint32_t x = ((const struct mt_thread_last *)a)->tid,
		 y = ((const struct mt_thread_last *)b)->tid;
	return x < y ? -1 : x > y;
}

struct mt_thread_last *mt_figures_threads(const struct mt_figures *c, size_t *n)
{
	*n = 0;
	if (!c->threads_used)
		return NULL;
	struct mt_thread_last *out = xcalloc(c->threads_used, sizeof *out);
	for (size_t i = 0; c->threads && i <= c->threads_mask; i++) {
		if (!c->threads[i].tid)
			continue;
		out[*n] = c->threads[i];
		/* the key is tid + 1, but for UINT32_MAX (see thread) */
		if (out[*n].tid != UINT32_MAX)
			out[*n].tid--;
		++*n;
	}
	if (*n)
		qsort(out, *n, sizeof *out, by_tid);
	return out;
}

/* Before a site's live figures change: if they last changed no later than
 * the latest global peak, they are its figures at the peak. */
static inline void site_touch(struct mt_figures *c, struct mt_site_stats *s)
{
	if (s->stamp <= c->peak_seq && c->peak_seq) {
		s->peak_bytes = s->live_bytes;
		s->peak_count = s->live_count;
	}
	s->stamp = c->seq;
}

uint64_t mt_figures_sampled_weight(const struct mt_figures *c, const struct mt_live *b)
{
	/* A block of S bytes was sampled with probability p = 1 - exp(-S/R):
	 * it stands for 1/p allocations of its size, rounded up or down at
	 * random (from its own key, so that every reading agrees), so that
	 * counts stay whole and both they and the bytes stay unbiased. */
	if (!b->size)
		return 1;
	double p = -expm1(-(double)b->size / (double)c->sample_mean), n = 1.0 / p;
	if (!(n < 0x1p52))
		return (uint64_t)1 << 52;
	uint64_t whole = (uint64_t)n;
	uint64_t h = mt_hash64(b->ptr ^ mt_hash64(((uint64_t)b->seq << 32) ^ b->size));
	double u = (double)(h >> 11) * 0x1p-53;
	return whole + (u < n - (double)whole);
}

static inline uint32_t seq32(const struct mt_figures *c)
{
	return c->seq < UINT32_MAX ? (uint32_t)c->seq : UINT32_MAX;
}

/* A block taken out of the live figures: FREED (or found again under a
 * new one at its place), else held by the runtime (after the stream: the
 * peaks are settled).  Returns the allocations it stood for. */
static uint64_t block_out(struct mt_figures *c, const struct mt_live *b, int freed)
{
	uint64_t n = mt_figures_weight(c, b), bytes = n * b->size;
	struct mt_site_stats *s = &c->sites[b->site];
	if (freed)
		site_touch(c, s);
	s->live_bytes -= bytes;
	s->live_count -= n;
	c->t.live_bytes -= bytes;
	c->t.live_count -= n;
	if (freed) {
		s->frees += n;
		c->t.frees += n;
	}
	return n;
}

static void on_alloc(struct mt_figures *c, uint32_t tid, uint64_t ts, uint64_t ptr, uint64_t size,
		     uint32_t site, int fn)
{
	mt_figures_reserve_site(c, site);
	struct mt_site_stats *s = &c->sites[site];
	if (!s->allocations && !s->culled)
		s->fn = fn;
	const struct mt_live b = { ptr, size, site, seq32(c) };
	/* a sampled block stands for N allocations of its size */
	uint64_t n = mt_figures_weight(c, &b), bytes = n * size;
	s->allocations += n;
	s->allocated_bytes += bytes;
	if (size < s->min_size)
		s->min_size = size;
	if (size > s->max_size)
		s->max_size = size;
	struct mt_site_span *tm = &c->times[site];
	if (!tm->first_ts)
		tm->first_ts = ts;
	if (!tm->first_seq)
		tm->first_seq = c->seq;
	tm->last_ts = ts;
	site_touch(c, s);
	s->live_bytes += bytes;
	s->live_count += n;

	struct mt_live old;
	if (block_put(c, &b, &old))
		/* The block was allocated again without a free we saw (a free
		 * lost by the capture): count the old one as freed. */
		block_out(c, &old, 1);
	c->t.allocations += n;
	c->t.allocated_bytes += bytes;
	c->t.live_bytes += bytes;
	c->t.live_count += n;
	if (c->t.live_bytes > c->t.peak_bytes) {
		c->t.peak_bytes = c->t.live_bytes;
		c->t.peak_count = c->t.live_count;
		c->t.peak_ts = ts;
		c->peak_seq = c->seq;
	}
	struct mt_thread_last *th = thread(c, tid);
	th->last_alloc = ptr;
	th->allocations += n;
	th->allocated_bytes += bytes;
}

static void on_free(struct mt_figures *c, uint32_t tid, uint64_t ptr)
{
	struct mt_thread_last *t = thread(c, tid);
	struct mt_live b;
	if (!block_take(c, ptr, &b)) {
		c->t.unmatched_frees++;
		t->last_alloc = 0;
		return;
	}
	uint64_t n = block_out(c, &b, 1);
	if (t->last_alloc == ptr) {
		c->sites[b.site].temporary += n;
		c->t.temporary += n;
	}
	t->last_alloc = 0;
}

static void stamp_time(struct mt_figures *c, uint64_t ts)
{
	if (!c->t.first_ts || ts < c->t.first_ts)
		c->t.first_ts = ts;
	if (ts > c->t.last_ts)
		c->t.last_ts = ts;
}

void mt_figures_alloc(struct mt_figures *c, uint32_t tid, uint64_t ts, uint64_t ptr, uint64_t size,
		      uint32_t site, int fn)
{
	c->seq++;
	stamp_time(c, ts);
	if (ptr)
		on_alloc(c, tid, ts, ptr, size, site, fn);
}

void mt_figures_free(struct mt_figures *c, uint32_t tid, uint64_t ts, uint64_t ptr)
{
	c->seq++;
	stamp_time(c, ts);
	if (ptr)
		on_free(c, tid, ptr);
	else /* free(NULL), or calls a sampled recording left out: an event */
		thread(c, tid)->last_alloc = 0;
}

/* realloc(NULL, n) is malloc, and realloc to NULL only freed the block. */
void mt_figures_realloc(struct mt_figures *c, uint32_t tid, uint64_t ts, uint64_t old, uint64_t ptr,
			uint64_t size, uint32_t site, int fn)
{
	c->seq++;
	stamp_time(c, ts);
	if (old)
		on_free(c, tid, old);
	c->seq++;
	if (ptr)
		on_alloc(c, tid, ts, ptr, size, site, fn);
}

void mt_figures_touch(struct mt_figures *c, uint32_t tid, uint64_t ts)
{
	stamp_time(c, ts);
	thread(c, tid)->last_alloc = 0;
}

void mt_figures_culled(struct mt_figures *c, uint32_t site, uint64_t count, uint64_t bytes,
		       uint64_t temporary)
{
	mt_figures_reserve_site(c, site);
	struct mt_site_stats *s = &c->sites[site];
	s->allocations += count;
	s->allocated_bytes += bytes;
	s->frees += count;
	s->temporary += temporary;
	s->culled += count;
	c->t.allocations += count;
	c->t.allocated_bytes += bytes;
	c->t.frees += count;
	c->t.temporary += temporary;
	c->t.culled += count;
}

void mt_figures_true_peak(struct mt_figures *c, uint64_t ts, uint64_t bytes, uint64_t count)
{
	if (bytes > c->true_peak_bytes) {
		c->true_peak_bytes = bytes;
		c->true_peak_count = count;
		c->true_peak_ts = ts;
	}
}

void mt_figures_finish(struct mt_figures *c)
{
	if (c->finished)
		return;
	c->seq++;
	for (size_t i = 0; i < c->nsites; i++) {
		struct mt_site_stats *s = &c->sites[i];
		if (s->stamp <= c->peak_seq && c->peak_seq) {
			s->peak_bytes = s->live_bytes;
			s->peak_count = s->live_count;
		}
		if (s->min_size == UINT64_MAX)
			s->min_size = 0;
	}
	if (c->true_peak_bytes > c->t.peak_bytes) {
		c->t.peak_bytes = c->true_peak_bytes;
		c->t.peak_count = c->true_peak_count;
		c->t.peak_ts = c->true_peak_ts;
	}
	c->finished = 1;
}

/* The accounting of a leaked block that the runtime holds. */
static void to_held(struct mt_figures *c, const struct mt_live *b)
{
	uint64_t n = block_out(c, b, 0), bytes = n * b->size;
	struct mt_site_stats *s = &c->sites[b->site];
	s->held_bytes += bytes;
	s->held_count += n;
	c->t.held_bytes += bytes;
	c->t.held_count += n;
}

void mt_figures_runtime_held(struct mt_figures *c,
			     int (*is_held)(void *ctx, const struct mt_live *b), void *ctx)
{
	for (size_t i = 0; c->live && i <= c->live_mask; i++) {
		struct mt_live *e = &c->live[i];
		if (!e->ptr || !is_held(ctx, e))
			continue;
		to_held(c, e);
		live_remove(c, e);
		i--; /* live_remove may move a later entry here */
	}
	for (size_t i = 0; c->win.slots && i <= c->win.mask; i++) {
		struct mt_wslot *w = (struct mt_wslot *)c->win.slots + i;
		const struct mt_live b = { SERIAL_BIT | mt_window_serial(&c->win, i), w->size,
					   w->site, w->seq };
		if (!w->seq || !is_held(ctx, &b))
			continue;
		to_held(c, &b);
		w->seq = 0;
		c->win.used--;
	}
}

int mt_figures_is_live(const struct mt_figures *c, uint64_t ptr)
{
	if ((ptr & SERIAL_BIT) && c->win.slots && (ptr & ~SERIAL_BIT) >= c->win.base) {
		uint64_t s = ptr & ~SERIAL_BIT;
		if (s - c->win.base <= c->win.mask && wslot(c, s)->seq)
			return 1;
		if (!c->win_big) /* (else a block of 4 GB or more may be there) */
			return 0;
	}
	/* (live_find only reads) */
	return ptr && live_find((struct mt_figures *)c, ptr) != NULL;
}

void mt_figures_each_live(struct mt_figures *c, void (*fn)(void *ctx, const struct mt_live *),
			  void *ctx)
{
	for (size_t i = 0; c->live && i <= c->live_mask; i++)
		if (c->live[i].ptr)
			fn(ctx, &c->live[i]);
	const struct mt_wslot *w = c->win.slots;
	for (size_t i = 0; w && i <= c->win.mask; i++)
		if (w[i].seq)
			fn(ctx, &(struct mt_live){ SERIAL_BIT | mt_window_serial(&c->win, i),
						   w[i].size, w[i].site, w[i].seq });
}
