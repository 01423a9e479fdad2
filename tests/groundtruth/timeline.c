/*
 * timeline.c - allocations at moments the program measures itself: 200
 * spread evenly over 20 ms, then a peak between two markers.
 *
 *   spread: memtrace_marker("spread"), bracketed by two reads of
 *           CLOCK_MONOTONIC (m0, m1); then for i = 0..199: wait (spinning
 *           on the clock) until m1 + 100 us * i, read the clock (b_i),
 *           malloc(1000) (kept), read the clock (a_i).  The allocations
 *           are 100 us apart, over 19.9 ms, by construction.
 *   sleep 30 ms
 *   summit: memtrace_marker("summit") bracketed by (s0, s1); malloc(1 MiB)
 *           bracketed by (p0, p1): the peak, 200 x 1000 + 1,048,576 =
 *           1,248,576 bytes in 201 blocks (never more before or after)
 *   sleep 30 ms; free the summit block; sleep 30 ms; free the 200 blocks.
 *
 * It prints "marker m0 m1", then "spread i b_i a_i" per allocation and
 * "summit s0 s1 p0 p1", every figure in ns since m0.  A recorded time is
 * taken between the two clock reads around its call, and a report gives
 * times from the same start for markers and allocations: so allocation i
 * must be recorded (b_i - m1) to (a_i - m0) after the "spread" marker, and
 * the peak (p0 - s1) to (p1 - s0) after the "summit" marker, give or take
 * the recording's time step.  The brackets hold however loaded the machine
 * is (a late thread only widens them).
 *
 * Totals: 201 allocations (200,000 + 1,048,576 = 1,248,576 bytes), 201
 * frees, nothing leaked.
 */
#include "gt.h"

#include <stdint.h>

#define N 200

extern void memtrace_marker(const char *) __attribute__((weak));

static void *blocks[N];

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void mark(const char *text)
{
	if (memtrace_marker)
		memtrace_marker(text);
}

NOINLINE void *spread(void)
{
	void *p = malloc(1000); /* @site:spread */
	gt_keep(p);
	return p;
}

NOINLINE void *summit(void)
{
	void *p = malloc(1 << 20); /* @site:summit */
	gt_keep(p);
	return p;
}

int main(void)
{
	static int64_t b[N], a[N];
	int64_t m0 = now_ns();
	mark("spread");
	int64_t m1 = now_ns();
	for (int i = 0; i < GT_N(N); i++) {
		while (now_ns() < m1 + 100000 * (int64_t)i) {
		}
		b[i] = now_ns();
		blocks[i] = spread(); /* @call:spread */
		a[i] = now_ns();
	}
	gt_sleep_ms(30);
	int64_t s0 = now_ns();
	mark("summit");
	int64_t s1 = now_ns();
	int64_t p0 = now_ns();
	void *top = summit(); /* @call:summit */
	int64_t p1 = now_ns();
	gt_sleep_ms(30);
	free(top);
	gt_sleep_ms(30);
	for (int i = 0; i < GT_N(N); i++)
		free(blocks[i]);
	gt_say("marker 0 %ld\n", (long)(m1 - m0));
	for (int i = 0; i < N; i++)
		gt_say("spread %d %ld %ld\n", i, (long)(b[i] - m0), (long)(a[i] - m0));
	gt_say("summit %ld %ld %ld %ld\n", (long)(s0 - m0), (long)(s1 - m0), (long)(p0 - m0),
	       (long)(p1 - m0));
	return 0;
}
