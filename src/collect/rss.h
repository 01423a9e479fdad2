/*
 * rss.h - sampling a traced process's memory as the kernel counts it
 * (resident, anonymous, file-backed, shared, mapped data), for the RSS
 * series recordings carry beside the heap (record --rss-interval).
 */
#ifndef MEMTRACE_RSS_H
#define MEMTRACE_RSS_H

#include <stdint.h>

#include "format/codec.h"

/* Reads /proc/PID/status into *M: 0, or -1 (the process is gone, or its
 * status is not ours to read). */
int mt_rss_read(uint32_t pid, struct mt_rss *m);
/* Takes memtrace's own ring out of *M: the shim's ring is a memfd the
 * traced process maps, so its pages count in the process's rss and shmem.
 * RING (LEN bytes) is the recorder's mapping of the same memfd: its pages
 * in memory, less than rss and shmem, go from both into m->ring. */
void mt_rss_exclude(struct mt_rss *m, const void *ring, size_t len);

#endif
