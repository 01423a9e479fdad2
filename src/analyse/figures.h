/*
 * figures.h - a process's figures, the one place where allocation events
 * become figures (struct mt_figures).
 *
 * Fed the events of one process in stream order, it tracks live blocks, the
 * global peak, temporaries and per-site totals with the semantics of
 * the interface (man/memtrace-report.1):
 *   - realloc is one allocation of the new size and one free of the old block;
 *   - peak_bytes is the maximum of the live requested bytes; a site's
 *     peak_bytes is what it had live at the moment of the global peak
 *     (computed lazily, O(1) per event: a site's live bytes are copied into
 *     its peak figure the first time it changes after a new global peak);
 *   - temporary: freed by the next allocator event on the same thread;
 *   - leaked: live when the stream ends, except the blocks held by the
 *     runtime (runtime_held.c): those are counted apart, as held;
 *   - a free of an unknown block is an unmatched free, not an error;
 *   - address 0 is no block: a free of it does nothing (free(NULL)), and an
 *     allocation at it (which only a damaged file holds) is left out.
 * Memory is bounded by the live blocks, threads and sites, not by events.
 */
#ifndef MEMTRACE_FIGURES_H
#define MEMTRACE_FIGURES_H

#include <stddef.h>
#include <stdint.h>

#include "base/window.h"

/* The fields every event touches come first, so that an event costs one or
 * two cache lines of its site rather than three. */
struct mt_site_stats {
	uint64_t allocations, allocated_bytes;
	uint64_t live_count, live_bytes; /* after finish: leaked */
	uint64_t stamp;			 /* event index of the last change */
	uint64_t frees, temporary;
	uint64_t min_size, max_size;
	uint64_t peak_bytes, peak_count;
	uint64_t culled;		 /* allocations known only from aggregates */
	uint64_t held_count, held_bytes; /* after finish: held by the runtime at exit */
	int fn;				 /* allocator function of its first allocation */
};

/* When a site allocated, apart from its figures: the server's groups and
 * the filters want these, a report does not (mt_figures_shed frees them: 1.5 MB
 * at 65,536 sites). */
struct mt_site_span {
	uint64_t first_ts;  /* of its first allocation (0: none seen) */
	uint64_t last_ts;   /* of its last allocation */
	uint64_t first_seq; /* event index of its first allocation (0: none seen) */
};

struct mt_totals {
	uint64_t allocations, frees, allocated_bytes;
	uint64_t live_bytes, live_count; /* after finish: leaked */
	uint64_t peak_bytes, peak_count, peak_ts;
	uint64_t temporary, unmatched_frees, culled;
	uint64_t first_ts, last_ts;
	/* leaked blocks a suppression took out of live_* (analyse/suppress.h) */
	uint64_t suppressed_count, suppressed_bytes;
	uint64_t held_count, held_bytes; /* after finish: held by the runtime at exit */
};

struct mt_live {
	uint64_t ptr; /* 0: empty slot */
	uint64_t size;
	uint32_t site;
	uint32_t seq; /* event index of its allocation, at most UINT32_MAX */
};

/* A block of the window (below): its key is its place.  12 bytes rather
 * than 16 (at 500,000 live blocks, 2 MB of a report's peak): a block of
 * 4 GB or more goes to `live` instead. */
struct mt_wslot {
	uint32_t size;
	uint32_t site;
	uint32_t seq; /* as above, >= 1; 0: empty slot */
};

struct mt_thread_last {
	uint32_t tid;
	uint64_t last_alloc; /* the block its previous event allocated, or 0 */
	/* what it allocated (the thread selectors of the GUI and the html
	 * report list the threads with these) */
	uint64_t allocations, allocated_bytes;
};

struct mt_figures {
	struct mt_site_stats *sites;
	size_t nsites, sites_cap;
	struct mt_site_span *times; /* beside sites (NULL after mt_figures_shed) */
	struct mt_live *live;
	size_t live_mask, live_used;
	/* Blocks named by allocation serial (MT_SERIAL_KEY: the recorder's
	 * compact records) whose serial is at least win.base sit in a window
	 * of struct mt_wslot (base/window.h): found without hashing, and
	 * close together when freed in about the order they came.  Older ones
	 * live in `live`, and so do blocks too big for a slot. */
	struct mt_window win;
	int win_big; /* a block too big for a slot went to `live`: look there too */
	struct mt_thread_last *threads;
	size_t threads_mask, threads_used;
	size_t thread_hint; /* slot of the thread of the last event */
	struct mt_totals t;
	uint64_t seq, peak_seq;
	uint64_t true_peak_bytes, true_peak_count, true_peak_ts;
	uint64_t salt; /* of the tables' hash (mt_hash_salt) */
	/* A sampled recording's mean (MT_EXT_SAMPLED), 0 when every call was
	 * recorded: each block then counts as the allocations it stands for
	 * (mt_figures_weight).  Set before the first event. */
	uint64_t sample_mean;
	int finished;
};

/* A random key for a table's hash: block addresses, stack ids and stream
 * numbers come from files, and a file whose keys all fall into one slot of
 * an unkeyed table makes every lookup scan it (70,000 blocks: 10 s). */
uint64_t mt_hash_salt(void);

/* How many allocations block B stands for: 1, or in a sampled recording
 * its share of the estimate (figures.c says how). */
uint64_t mt_figures_sampled_weight(const struct mt_figures *c, const struct mt_live *b);
static inline uint64_t mt_figures_weight(const struct mt_figures *c, const struct mt_live *b)
{
	return c->sample_mean ? mt_figures_sampled_weight(c, b) : 1;
}

void mt_figures_init(struct mt_figures *c);
void mt_figures_destroy(struct mt_figures *c);
/* Makes site index SITE valid (sites are numbered by the caller from 0). */
void mt_figures_reserve_site(struct mt_figures *c, uint32_t site);
void mt_figures_alloc(struct mt_figures *c, uint32_t tid, uint64_t ts, uint64_t ptr, uint64_t size,
		      uint32_t site, int fn);
void mt_figures_free(struct mt_figures *c, uint32_t tid, uint64_t ts, uint64_t ptr);
void mt_figures_realloc(struct mt_figures *c, uint32_t tid, uint64_t ts, uint64_t old, uint64_t ptr,
			uint64_t size, uint32_t site, int fn);
/* An event of thread TID at TS that is not fed (a filter left it out): the
 * thread's next free is then no temporary, as in the whole stream. */
void mt_figures_touch(struct mt_figures *c, uint32_t tid, uint64_t ts);
/* Allocations culled before they reached the stream, each also freed. */
void mt_figures_culled(struct mt_figures *c, uint32_t site, uint64_t count, uint64_t bytes,
		       uint64_t temporary);
/* The peak over every event, when culling kept some out of the stream; the
 * stream's own peak can only be lower.  Per-site peaks stay the stream's. */
void mt_figures_true_peak(struct mt_figures *c, uint64_t ts, uint64_t bytes, uint64_t count);
/* Settles per-site peaks and the leak figures; no events after this. */
void mt_figures_finish(struct mt_figures *c);

/* After finish, for a reader that wants the figures alone (report): frees
 * the blocks (mt_figures_is_live and mt_figures_each_live then see none), the
 * sites' times and the room grown for sites that did not come. */
void mt_figures_shed(struct mt_figures *c);

/* After finish: the leaked blocks IS_HELD picks are the runtime's (held
 * by the C or C++ runtime until exit): counted as held, not as leaked. */
void mt_figures_runtime_held(struct mt_figures *c,
			     int (*is_held)(void *ctx, const struct mt_live *b), void *ctx);

/* Whether the block at PTR is live (after finish: leaked; a block the
 * runtime holds is not). */
int mt_figures_is_live(const struct mt_figures *c, uint64_t ptr);

/* For a reader that sees events coming: asks the memory of the block at
 * PTR (a free's) to be fetched, and says the site of the block when it
 * is at hand (else UINT32_MAX), so that its figures can be fetched too. */
__attribute__((always_inline)) static inline void
mt_figures_prefetch_block(const struct mt_figures *c, uint64_t ptr)
{
	uint64_t s = ptr & ~(1ull << 63);
	if ((ptr >> 63) && c->win.slots && s - c->win.base <= c->win.mask)
		__builtin_prefetch((const struct mt_wslot *)c->win.slots + (s & c->win.mask));
}
__attribute__((always_inline)) static inline uint32_t
mt_figures_block_site(const struct mt_figures *c, uint64_t ptr)
{
	uint64_t s = ptr & ~(1ull << 63);
	if ((ptr >> 63) && c->win.slots && s - c->win.base <= c->win.mask) {
		const struct mt_wslot *w =
			(const struct mt_wslot *)c->win.slots + (s & c->win.mask);
		if (w->seq)
			return w->site;
	}
	return UINT32_MAX;
}
__attribute__((always_inline)) static inline void
mt_figures_prefetch_site(const struct mt_figures *c, uint32_t site)
{
	if (site < c->sites_cap) {
		__builtin_prefetch(&c->sites[site], 1);
		__builtin_prefetch((const char *)&c->sites[site] + 64, 1);
		__builtin_prefetch(&c->times[site], 1);
	}
}

/* The threads of the events fed or touched, by tid (theirs, not the
 * table's key), in a new array of *N (NULL when none). */
struct mt_thread_last *mt_figures_threads(const struct mt_figures *c, size_t *n);

/* Visits every live block (after finish: every leaked block). */
void mt_figures_each_live(struct mt_figures *c, void (*fn)(void *ctx, const struct mt_live *),
			  void *ctx);

#endif
