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

#endif
