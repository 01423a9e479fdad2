/*
 * watch.h - the figures of running processes, for attach, top and sweep.
 *
 * The BPF maps hold per (process, stack) totals; this turns a reading of
 * them into an in-memory recording (recording.h) with each process's
 * identity and mapped objects from /proc, so that the report code prints
 * and symbolizes it like a recording read from a file.  What /proc said of a
 * process is kept, so a process that exits mid-sweep is still named.
 */
#ifndef MEMTRACE_WATCH_H
#define MEMTRACE_WATCH_H

#include <stdint.h>

#include "capture/bpf/capture.h"
#include "analyse/recording.h"

struct mt_watch;

struct mt_watch *mt_watch_new(struct mt_bpf *b);
void mt_watch_free(struct mt_watch *l);
/* Reads /proc for PID now: a process given by pid (-p) is named, and its
 * objects known, even if it exits before the first refresh (a program that
 * allocates and exits within a second of the attachment had its report
 * unnamed: "process N (?): ?", every frame a bare address). */
void mt_watch_add(struct mt_watch *l, uint32_t pid);
/* Reads /proc for processes with figures in the maps that it has not seen,
 * and again for those whose objects changed; call about once a second. */
void mt_watch_refresh(struct mt_watch *l);
/* Fills OUT (to be freed with mt_recording_free) with every process that has
 * sites: outstanding allocations older than MIN_AGE_NS count as live (and,
 * at the end of tracing, leaked); totals are the sums of the sites. */
void mt_watch_snapshot(struct mt_watch *l, uint64_t min_age_ns, struct mt_recording *out);

#endif
