/*
 * sitetimes.h - each call site's figures by when its allocations were made,
 * for the html report: a range dragged across its chart then selects, in
 * the page itself, what the flamegraph, the call sites and the functions
 * count (the allocations made in the range, as the filters from and to
 * mean it), with no server to ask.
 *
 * The run is cut into a grid of at most MT_ST_GRID intervals (the chart's);
 * per site and interval: the allocations made, their bytes, those of them
 * never freed (count and bytes) and the temporary ones.  The grid coarsens
 * (fewer, longer intervals) when the pairs kept outgrow a bound in memory,
 * and again when writing them would outgrow a bound on the page's size: a
 * recording of 100,000 sites keeps its page under 10 MB, at the price of a
 * coarser grid.  Memory: the live blocks and the pairs, not the events.
 */
#ifndef MEMTRACE_SITETIMES_H
#define MEMTRACE_SITETIMES_H

#include <stdint.h>
#include <stdio.h>

#include "analyse/blocks.h"
#include "analyse/figures.h"
#include "base/ptrmap.h"

/* The finest grid: the chart's buckets (html.c's BUCKETS). */
#define MT_ST_GRID 300

struct mt_st_pair {
	uint32_t site, cell;
	uint64_t allocations, bytes, leaked, leaked_bytes, temporary;
};

struct mt_site_times {
	struct mt_blocks blocks; /* live blocks: size, site, aux its fine cell */
	struct mt_ptrmap index;	 /* (site << 16 | cell) + 1 -> pair + 1 */
	struct mt_st_pair *pairs;
	size_t n, cap;
	int cells;  /* intervals of the grid now: a divisor of MT_ST_GRID */
	int failed; /* out of memory: no times written */
};

void mt_st_init(struct mt_site_times *st);
void mt_st_destroy(struct mt_site_times *st);
/* A block PTR of SIZE bytes of SITE, allocated in the chart's bucket FINE. */
void mt_st_alloc(struct mt_site_times *st, uint64_t ptr, uint64_t size, uint32_t site, int fine);
/* Block PTR freed; TEMPORARY: by the next call of its thread. */
void mt_st_free(struct mt_site_times *st, uint64_t ptr, int temporary);
/* After the replay: the blocks still live are the leaked ones (those COL,
 * the process's collector, counts as leaked: not the runtime's); then the
 * grid coarsened until the pairs of the NSITES written fit the page's
 * bound, and sorted by site. */
void mt_st_finish(struct mt_site_times *st, size_t nsites, const struct mt_collector *col);
/* ",TIMES": site S's field of the page (src/export/web/report.js):
 * the cell where all of its allocations fell when those are all of ITS
 * figures, else [cell, allocations, bytes, leaked, leaked bytes,
 * temporary, ...] by cell. */
void mt_st_site_json(FILE *f, struct mt_site_times *st, uint32_t s,
		     const struct mt_site_stats *its);

#endif
