/*
 * deltas.h - the allocations of each interval, from the running totals of
 * top's snapshots: a continuous profile's alloc_objects and alloc_space
 * are what a site allocated since the previous profile (as Go's delta heap
 * profiles, which Pyroscope and Parca store, give them), its inuse_*
 * what is live now.  The BPF maps only count up from the attachment.
 */
#ifndef MEMTRACE_DELTAS_H
#define MEMTRACE_DELTAS_H

#include "analyse/recording.h"

struct mt_deltas;

struct mt_deltas *mt_deltas_new(void);
void mt_deltas_free(struct mt_deltas *d);
/* Turns the allocations and allocated bytes of every site of SNAP (a
 * snapshot from mt_watch_snapshot) into what they grew by since the
 * previous snapshot given here (the first: since tracing began), and the
 * process totals into their sums. */
void mt_deltas_take(struct mt_deltas *d, struct mt_recording *snap);

#endif
