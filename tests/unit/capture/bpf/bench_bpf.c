/*
 * bench_bpf.c - what tracing costs the traced program: gt-bpf-bench's loop
 * of malloc/free pairs run natively, then under the BPF capture layer in
 * events mode (drained every 10 ms) and in aggregation mode.  Prints ns per
 * pair for each, and the difference per pair.  Not a test.
 *
 * Usage: bench-bpf GT_BENCH [PAIRS [MODE [RUNS]]]   (MODE: malloc,
 * posix_memalign, calloc; the best of RUNS runs is kept)
 * MEMTRACE_BPF_PROBE_AT_ENTRY=1 puts every probe at the function's entry,
 * to compare with the places src/capture/bpf/elf.c chooses.
 */
#include "bpf_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void ignore(void *ctx, const struct mt_bpf_event *ev)
{
	(*(uint64_t *)ctx)++;
	(void)ev;
}

/* ns per pair of one run; TRACE: 0 native, 1 events, 2 aggregation. */
static double run(const char *gt, const char *pairs, const char *mode, int trace, uint64_t *events)
{
	struct mt_bpf *b = NULL;
	struct bt_child c;
	char *argv[] = { (char *)gt, (char *)pairs, (char *)mode, NULL };
	char err[512];

	if (trace) {
		struct mt_bpf_opts o = { .events = trace == 1 };
		b = bt_open(&o);
	}
	bt_spawn(&c, argv);
	if (b && mt_bpf_trace_exec(b, c.pid, gt, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_trace_exec: %s\n", err);
		exit(1);
	}
	bt_go(&c);
	bt_write_input(&c, "go\n");
	while (!bt_reap(&c, 0)) {
		if (trace == 1)
			mt_bpf_poll(b, 10, ignore, events);
		else
			bt_sleep_ms(10);
	}
	if (trace == 1)
		mt_bpf_poll(b, 0, ignore, events);
	long long ns = 0;
	long n = 1;
	if (!c.buf || sscanf(c.buf, "ns %lld pairs %ld", &ns, &n) != 2) {
		fprintf(stderr, "bench output: %s\n", c.buf ? c.buf : "(none)");
		exit(1);
	}
	if (b) {
		uint64_t lost[MT_LOST_KIND_COUNT];
		mt_bpf_lost(b, 0, lost);
		for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
			if (lost[k])
				fprintf(stderr, "lost %s: %llu\n", mt_lost_names[k], (unsigned long long)lost[k]);
		mt_bpf_close(b);
	}
	free(c.buf);
	return (double)ns / n;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GT_BENCH [PAIRS [MODE [RUNS]]]\n", argv[0]);
		return 2;
	}
	const char *pairs = argc > 2 ? argv[2] : "200000";
	const char *mode = argc > 3 ? argv[3] : "malloc";
	int runs = argc > 4 ? atoi(argv[4]) : 3;
	double best[3] = { 1e30, 1e30, 1e30 };
	uint64_t events = 0;

	bt_require_bpf();
	for (int r = 0; r < runs; r++)
		for (int t = 0; t < 3; t++) {
			double v = run(argv[1], pairs, mode, t, &events);
			if (v < best[t])
				best[t] = v;
		}
	printf("%s/free pairs: native %.0f ns, events mode %.0f ns (+%.0f), aggregation mode %.0f ns (+%.0f)%s\n",
	       mode, best[0], best[1], best[1] - best[0], best[2], best[2] - best[0],
	       getenv("MEMTRACE_BPF_PROBE_AT_ENTRY") && strcmp(getenv("MEMTRACE_BPF_PROBE_AT_ENTRY"), "0")
		       ? " [probes at entry]" : "");
	return 0;
}
