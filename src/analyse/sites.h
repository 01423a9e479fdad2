/*
 * sites.h - what a call site weighs and how it reads: the figure each view
 * ranks sites by, sites ranked by it, and a site's frames as a user sees
 * them (symbolized, inlined frames expanded, the allocator's and memtrace's
 * own frames dropped).  Every front end (report, export, filter, server)
 * asks here, so that they all weigh a site the same way.
 */
#ifndef MEMTRACE_SITES_H
#define MEMTRACE_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "recording.h"
#include "symbols.h"

/* The most frames a site's stack is symbolized into (inlined frames count),
 * wherever frames are resolved.  Not codec.h's MT_MAX_FRAMES, which is how
 * deep the shim unwinds. */
#define MT_SYM_MAX_FRAMES 256

enum mt_view { MT_VIEW_SUMMARY, MT_VIEW_LEAKS, MT_VIEW_PEAK, MT_VIEW_TEMPORARY, MT_VIEW_FREQUENCY };

extern const char *const mt_view_names[];

/* What a site (or a process) weighs in a view: bytes and blocks.  Leaks:
 * what is live at the end; peak: what was live at the peak; temporary: the
 * temporary allocations (no byte figure of them is kept); summary and
 * frequency: every allocation. */
struct mt_amount {
	uint64_t bytes, count;
};

struct mt_amount mt_site_amount(const struct mt_site_stats *s, enum mt_view view);
struct mt_amount mt_total_amount(const struct mt_totals *t, enum mt_view view);

/* The one figure VIEW ranks by: its amount's count for frequency and
 * temporary, its bytes otherwise. */
uint64_t mt_amount_measure(struct mt_amount a, enum mt_view view);
uint64_t mt_site_measure(const struct mt_site_stats *s, enum mt_view view);
uint64_t mt_total_measure(const struct mt_totals *t, enum mt_view view);

/* Indices of P's sites, best first by VIEW's measure; with NONZERO only those
 * whose measure is not 0.  *n is set.  Reentrant (the server ranks from
 * several threads). */
uint32_t *mt_rank_sites(const struct mt_process *p, enum mt_view view, int nonzero, size_t *n);

/* Frames of site SITE, leaf first, into OUT (at most MAX, which is
 * MT_SYM_MAX_FRAMES wherever a whole stack is wanted).  Returns the count. */
int mt_site_frames(const struct mt_process *p, struct mt_symbolizer *sym, uint32_t site,
		   struct mt_frame *out, int max);
/* The same for a stack of N return addresses PCS that is no site's (a
 * mallopt call's). */
int mt_stack_frames(struct mt_symbolizer *sym, const uint64_t *pcs, uint32_t n,
		    struct mt_frame *out, int max);
/* The same for a mapping call's stack (its frames in the shim, and those of
 * the C library's wrapper under BPF, dropped as the allocator's are). */
int mt_mapev_frames(const struct mt_process *p, struct mt_symbolizer *sym, const struct mt_mapev *e,
		    struct mt_frame *out, int max);

/* A symbolizer loaded with P's modules. */
struct mt_symbolizer *mt_process_symbolizer(const struct mt_process *p);

#endif
