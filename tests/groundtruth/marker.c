/*
 * marker.c - moments marked by the program with memtrace_marker().
 *
 *   before: 3 x malloc(11), then memtrace_marker("one");
 *   middle: 2 x malloc(22), then memtrace_marker("two"), 50 ms later;
 *   nothing is freed.
 * The report lists the two markers in order, values 1 and 2, "two" after
 * "one", and all 5 allocations; the stream has the allocations and markers
 * in the order the program made them.  (The 50 ms pause is not measured: a
 * test asserts order, never durations, which depend on the machine's load.)  Run without the shim the
 * program works the same (the weak symbol is then null).
 */
#include "gt.h"

#include <time.h>

extern void memtrace_marker(const char *) __attribute__((weak));

static void *kept[5];

NOINLINE void before(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		kept[i] = malloc(11); /* @site:before */
		gt_keep(kept[i]);
	}
}

NOINLINE void middle(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		kept[3 + i] = malloc(22); /* @site:middle */
		gt_keep(kept[3 + i]);
	}
}

int main(void)
{
	before();
	if (memtrace_marker)
		memtrace_marker("one");
	middle();
	gt_sleep_ms(50);
	if (memtrace_marker)
		memtrace_marker("two");
	return 0;
}
