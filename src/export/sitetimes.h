/*
 * sitetimes.h - each call site's figures by when its allocations were made
 * and by the thread that made them, for the html report: a range dragged
 * across its chart, or a thread picked in its bar, then selects in the page
 * itself what the flamegraph, the call sites and the functions count (the
 * allocations made in the range, as the filters from and to mean it; or
 * those of the thread, as the filter thread does), with no server to ask.
 *
 * Times: the run is cut into a grid of at most MT_ST_GRID intervals (the
 * chart's); per site and interval (a "pair"): the allocations made, their
 * bytes, those of them never freed (count and bytes) and the temporary
 * ones.  The grid coarsens (fewer, longer intervals) when the pairs kept
 * outgrow a bound in memory, and again when writing them would outgrow a
 * bound on the page's size: a recording of 100,000 sites keeps its page
 * under 10 MB, at the price of a coarser grid, or of no times at all.
 * Threads: the same figures per site and thread, written only for a
 * process of several threads and when they fit the same bound.  Memory:
 * the live blocks and the pairs, not the events.
 */
#ifndef MEMTRACE_SITETIMES_H
#define MEMTRACE_SITETIMES_H

#include <stdint.h>
#include <stdio.h>

#include "analyse/blockrecs.h"
#include "analyse/figures.h"
#include "base/ptrmap.h"

/* The finest grid: the chart's buckets (html.c's BUCKETS). */
#define MT_ST_GRID 300

struct mt_st_pair {
	uint32_t site, cell; /* cell: of the grid, or a thread's number */
	uint64_t allocations, bytes, leaked, leaked_bytes, temporary;
};

/* Pairs of one kind, found by (site, cell). */
struct mt_st_table {
	struct mt_ptrmap index; /* (site << 16 | cell) + 1 -> pair + 1 */
	struct mt_st_pair *pairs;
	size_t n, cap;
	int failed; /* out of memory, or too many to write: none written */
};

struct mt_site_times {
	struct mt_blockrecs blocks; /* live blocks: size, site, tid, aux its fine cell */
	struct mt_st_table times, threads;
	int cells; /* intervals of the grid now: a divisor of MT_ST_GRID */
	/* the threads, numbered in the order they first allocated */
	struct mt_ptrmap tids; /* tid + 1 -> number + 1 */
	uint32_t *tid;	       /* number -> tid */
	size_t ntids, tids_cap;
};

void mt_st_init(struct mt_site_times *st);
void mt_st_destroy(struct mt_site_times *st);
/* A block PTR of SIZE bytes of SITE, allocated by thread TID in the
 * chart's bucket FINE. */
void mt_st_alloc(struct mt_site_times *st, uint64_t ptr, uint64_t size, uint32_t site, uint32_t tid,
		 int fine);
/* Block PTR freed; TEMPORARY: by the next call of its thread. */
void mt_st_free(struct mt_site_times *st, uint64_t ptr, int temporary);
/* After the replay: the blocks still live are the leaked ones (those
 * FIGURES, the process's, count as leaked: not the runtime's); then the
 * grid coarsened until the pairs of the NSITES written fit the page's
 * bound, the threads' dropped when they do not, and both sorted by site. */
void mt_st_finish(struct mt_site_times *st, size_t nsites, const struct mt_figures *figures);
/* Whether the page gets times (a grid finer than the whole run), and
 * threads (several, and they fit). */
int mt_st_has_times(const struct mt_site_times *st);
int mt_st_has_threads(const struct mt_site_times *st);
/* ",FIELD": site S's times (BY_THREAD 0) or threads (1), the fields of the
 * page (src/export/web/report.js): the cell (thread number) where all of
 * its allocations fell when those are all of ITS figures, else [cell,
 * allocations, bytes, leaked, leaked bytes, temporary, ...] by cell. */
void mt_st_site_json(FILE *f, struct mt_site_times *st, int by_thread, uint32_t s,
		     const struct mt_site_stats *its);
/* The threads' ids by number, as a JSON array. */
void mt_st_tids_json(FILE *f, const struct mt_site_times *st);

#endif
