/*
 * stamp.c - the time of each event: read raw on the hot path, converted to
 * CLOCK_MONOTONIC nanoseconds when the event is written out.
 *
 * Where the kernel keeps CLOCK_MONOTONIC on the CPU's time-stamp counter
 * (x86_64 with the "tsc" clocksource: the counter runs at a constant rate
 * and the kernel has checked that all CPUs' counters agree), a hook reads
 * the counter itself with RDTSCP, a few ns and no call; elsewhere it calls
 * clock_gettime(CLOCK_MONOTONIC).  Either way the stamps of all threads are
 * in the order in which the events happened, which is what tbuf.c merges
 * the threads' buffers by, and they are fine enough for a timeline (the
 * coarse clock this replaces moved in 4 ms steps).
 *
 * Conversion: ns = mono0 + (tsc - tsc0) * rate, where (tsc0, mono0) is a
 * pair read at start and RATE is re-measured against CLOCK_MONOTONIC
 * whenever a merge runs more than 10 ms after the last measurement, over
 * the whole run so far: the error of a converted time is that of one pair's
 * reading (tens of ns), whatever the run's length.
 */
#include "shim.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int mt_stamp_tsc;
uint64_t mt_stamp_quantum = 1;
struct mt_stamp_conv mt_stamp_conv = { .mult = 1ull << 32 }; /* ns: 1 to 1 */
static uint64_t last_cal;
static double rate = 1.0; /* ns per tick */

static void set_rate(double r)
{
	rate = r;
	__atomic_store_n(&mt_stamp_conv.mult, (uint64_t)(r * 4294967296.0), __ATOMIC_RELAXED);
}

/* Whether the kernel's clock runs on the TSC: then it is invariant and in
 * step across CPUs (the kernel drops it as a clocksource otherwise). */
static int kernel_uses_tsc(void)
{
	char buf[32] = { 0 };
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n >= 3 && memcmp(buf, "tsc", 3) == 0 && (buf[3] == '\n' || buf[3] == 0);
}

/* A (tsc, mono) pair read as close together as the clock allows: the
 * tightest of three tries. */
static void read_pair(uint64_t *tsc, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t a = mt_stamp(), m = mt_now_ns(), b = mt_stamp();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*mono = m;
		}
	}
}

void mt_stamp_init(int precise)
{
	mt_stamp_quantum = precise ? 1 : MT_STAMP_QUANTUM;
#if defined(__x86_64__)
	mt_stamp_tsc = kernel_uses_tsc();
#endif
	if (!mt_stamp_tsc)
		return;
	/* a first rate over 50 us (0.1% off at worst: 20 us over the 20 ms
	 * until the flusher's first merge measures it over the run so far) */
	uint64_t tsc0, mono0, t, m;
	read_pair(&tsc0, &mono0);
	do
		read_pair(&t, &m);
	while (m - mono0 < 50000 || t <= tsc0);
	mt_stamp_conv.tsc0 = tsc0;
	mt_stamp_conv.mono0 = mono0;
	set_rate((double)(m - mono0) / (double)(t - tsc0));
	last_cal = m;
}

void mt_stamp_recalibrate(uint64_t now)
{
	if (!mt_stamp_tsc || mt_stamp_ns_exact(now) - last_cal < 10000000ull)
		return;
	uint64_t t, m;
	read_pair(&t, &m);
	uint64_t tsc0 = mt_stamp_conv.tsc0, mono0 = mt_stamp_conv.mono0;
	if (t > tsc0 && m > mono0)
		set_rate((double)(m - mono0) / (double)(t - tsc0));
	last_cal = m;
}

double mt_stamp_ns_per_tick(void)
{
	return rate;
}
