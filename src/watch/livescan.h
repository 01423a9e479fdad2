/*
 * livescan.h - the leak scan of a process watched through BPF (attach,
 * top, sweep): its threads held still (scan/threads.h), its live blocks
 * read from the kernel's live map, its memory scanned (scan/procscan.h)
 * with the heap outside those blocks as roots (blocks allocated before
 * the attach may point at them: they are roots, never candidates), then
 * let go; the kinds found go into the watch's snapshot of it, as a
 * recording's scan goes into its process, so that the report prints them.
 */
#ifndef MEMTRACE_LIVESCAN_H
#define MEMTRACE_LIVESCAN_H

#include <stdint.h>
#include <sys/types.h>

#include "capture/bpf/capture.h"
#include "analyse/recording.h"
#include "scan/procscan.h"

struct mt_live_block {
	uint64_t addr, size, stack_id;
	uint64_t ts;	 /* its allocation's, CLOCK_MONOTONIC ns */
	uint64_t weight; /* mt_bpf_block's: allocations it stands for, 16.16 */
};

struct mt_live_scan {
	pid_t pid;
	int ran;		   /* 0: not scanned (res.why says why) */
	struct mt_scan_result res; /* res.ns: how long the process was held */
	struct mt_live_block *blocks;
	uint8_t *kinds; /* per block */
	size_t n;
};

/* Holds PID, scans it, lets it go.  Returns 0, or -1 when it could not be
 * held or read (out->res.why: another tracer, ptrace not allowed, gone). */
int mt_live_scan(struct mt_bpf *b, pid_t pid, struct mt_live_scan *out);

/* The leak scan of each of the N processes PIDS that is still running,
 * one at a time (each held only for its own scan), said on stderr
 * (mt_scan_say): SCANS[i] for PIDS[i] (one that exited: not run). */
void mt_live_scan_all(struct mt_bpf *b, const pid_t *pids, size_t n, struct mt_live_scan *scans);

/* Puts what S found into P (the watch's snapshot of the same process): its
 * kinds per site and in total, of the blocks allocated before BEFORE
 * (CLOCK_MONOTONIC ns; 0: all), as the snapshot counts those alone (sweep's
 * --min-age).  Blocks allocated after the scan, which it did not see,
 * count as still reachable (never a false leak). */
void mt_live_scan_apply(const struct mt_live_scan *s, struct mt_bpf *b, struct mt_process *p,
			uint64_t before);

void mt_live_scan_free(struct mt_live_scan *s);

#endif
