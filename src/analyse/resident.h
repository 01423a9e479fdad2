/*
 * resident.h - what a process's memory samples (RSS, MT_EXT_RSS) say beside
 * its heap: the resident peak, and how much anonymous memory the process
 * held beyond the heap in use (allocator overhead, fragmentation, free
 * memory the allocator keeps, stacks), at the end and at its largest.
 */
#ifndef MEMTRACE_RESIDENT_H
#define MEMTRACE_RESIDENT_H

#include <stddef.h>
#include <stdint.h>

#include "recording.h"

struct mt_resident {
	size_t samples; /* 0: the recording has none (the rest is 0) */
	/* the sample with the most resident memory, and its kinds */
	uint64_t peak_ts, peak_rss, peak_heap, peak_anon, peak_file, peak_shmem;
	/* the last sample */
	uint64_t end_ts, end_rss, end_anon, end_file, end_shmem, end_heap, end_beyond;
	/* the sample where anonymous memory most exceeded the heap */
	uint64_t beyond_ts, beyond_bytes, beyond_heap;
	uint64_t vm_data_peak;
	/* memtrace's ring at its largest: resident in the process, taken out
	 * of every figure here (0: none, or a recording from before) */
	uint64_t ring_peak;
};

void mt_resident_of(const struct mt_process *p, struct mt_resident *r);

#endif
