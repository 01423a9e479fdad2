/*
 * clock.h - time as one number: nanoseconds of a clock_gettime clock
 * (CLOCK_MONOTONIC unless said), what memtrace keeps and compares times
 * in.  Inline only, so that the shim can use it too.
 */
#ifndef MEMTRACE_CLOCK_H
#define MEMTRACE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* T in ns (a time after 1970, or a duration). */
static inline uint64_t mt_timespec_ns(struct timespec t)
{
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t mt_clock_ns(clockid_t clock)
{
	struct timespec t;
	clock_gettime(clock, &t);
	return mt_timespec_ns(t);
}

/* CLOCK_MONOTONIC in ns: for durations, timeouts and event times. */
static inline uint64_t mt_now_ns(void)
{
	return mt_clock_ns(CLOCK_MONOTONIC);
}

#endif
