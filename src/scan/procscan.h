/*
 * procscan.h - the leak scan of a running process (leakscan.h's mark over
 * its memory, read through /proc/PID/mem while its threads are held).
 *
 * Roots: every readable and writable mapping except memtrace's own (the
 * shim's ring, its library's data, its "[anon:memtrace]" mappings) and the
 * allocator's (a mapping holding a live block: the heap, an arena, a large
 * block's own mapping), whose memory outside the live blocks is freed or
 * allocator metadata; a thread's stack from its stack pointer (less the
 * red zone below it) up; every thread's registers.  Pages never touched
 * (neither present nor swapped, in /proc/PID/pagemap) hold zeros and are
 * not read, so a sparse mapping of terabytes costs what it holds.
 */
#ifndef MEMTRACE_PROCSCAN_H
#define MEMTRACE_PROCSCAN_H

#include "leakscan.h"
#include "threads.h"

struct mt_scan_opts {
	/* The allocator's mappings outside the live blocks are roots too:
	 * for a process attached to, whose blocks allocated before the attach
	 * are not among the live ones (they may hold pointers to them). */
	int heap_gaps_are_roots;
};

struct mt_scan_result {
	uint64_t bytes[MT_LEAK_KINDS], blocks[MT_LEAK_KINDS];
	uint64_t scanned; /* bytes of memory read and scanned */
	uint64_t roots;	  /* of which roots */
	uint64_t ns;	  /* how long the scan took (the process held meanwhile) */
	int complete;	  /* 0: a read failed; every block counted reachable */
	int sampled;	  /* set by the caller: the blocks are a sample (--sample), and
			   * the bytes above theirs alone, not estimates */
	char why[160];	  /* when not complete */
};

/* Scans the process ST holds for the N live blocks B (sorted by address),
 * writing each one's enum mt_leak_kind to KINDS[i].  Returns 0, or -1 when
 * the scan could not run at all (RES->why says why; KINDS all reachable). */
int mt_scan_process(const struct mt_stopped *st, const struct mt_scan_block *b, size_t n,
		    const struct mt_scan_opts *o, uint8_t *kinds, struct mt_scan_result *res);

/* Says on stderr what the scan of PID found (RES, from mt_scan_process)
 * and how long the process was held, in one line; or, in a warning, why
 * it did not run (RAN 0) or could not tell (incomplete). */
void mt_scan_say(pid_t pid, int ran, const struct mt_scan_result *res);

#endif
