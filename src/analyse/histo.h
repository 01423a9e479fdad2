/*
 * histo.h - a process's allocations by size and by lifetime: heaptrack's
 * size histogram, and how long blocks lived (memray's and bytehound's
 * question), for `memtrace report --sizes` and the report page.
 *
 * Sizes fall into power-of-two buckets (bucket k holds the sizes up to 2^k
 * above the previous bound: 0-1, 2, 3-4, 5-8, ...); lifetimes into decades
 * (under 1 ms, 1-10 ms, ... 10 s and more), and the blocks never freed
 * apart.  Built from a replay of the events, memory bounded by the live
 * blocks.
 */
#ifndef MEMTRACE_HISTO_H
#define MEMTRACE_HISTO_H

#include <stddef.h>
#include <stdint.h>

#include "blockrecs.h"
#include "select.h"

#define MT_SIZE_BUCKETS 41 /* up to 2^40 bytes, then everything bigger */
#define MT_LIFE_BUCKETS 6  /* <1ms, <10ms, <100ms, <1s, <10s, more */

/* The upper bounds of the lifetime buckets, in seconds (the last has none). */
extern const double mt_life_bounds_s[MT_LIFE_BUCKETS - 1];

struct mt_histo {
	uint64_t size_count[MT_SIZE_BUCKETS], size_bytes[MT_SIZE_BUCKETS];
	uint64_t life_count[MT_LIFE_BUCKETS], life_bytes[MT_LIFE_BUCKETS];
	uint64_t never_freed, never_freed_bytes; /* live at the end */
	struct mt_blockrecs live;		 /* during the replay */
};

/* The bucket of SIZE, and the largest size bucket B holds (UINT64_MAX for
 * the last). */
int mt_size_bucket(uint64_t size);
uint64_t mt_size_bucket_max(int b);
int mt_life_bucket(uint64_t ns);

void mt_histo_init(struct mt_histo *h);
void mt_histo_alloc(struct mt_histo *h, uint64_t ts, uint64_t ptr, uint64_t size);
void mt_histo_free(struct mt_histo *h, uint64_t ts, uint64_t ptr);
/* The blocks still live counted as never freed; the live table freed. */
void mt_histo_finish(struct mt_histo *h);

/* Replays SEL: OUT[i] for process i of sel->matched (an array of
 * sel->matched.nprocs).  0, or -1 with a reason in ERR. */
int mt_histograms(struct mt_selection *sel, struct mt_histo *out, char *err, size_t errlen);

#endif
