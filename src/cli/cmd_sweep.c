/*
 * cmd_sweep.c - `memtrace sweep`: a leak sweep of the whole machine.
 *
 * Every process that maps a traced allocator is watched for --duration
 * (processes started meanwhile and libcs at other paths, as in containers,
 * included); at the end, the call sites whose allocations are still
 * outstanding and older than --min-age are ranked across the system.  The
 * JSON form is the report schema, one entry per process.
 */
#include "commands.h"
#include "options.h"
#include "watch/session.h"
#include "analyse/runtime_held.h"
#include "analyse/sites.h"
#include "report/report.h"
#include "base/json.h"
#include "base/util.h"

#include <stdlib.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: memtrace sweep [options]\n"
	"\n"
	"Watches every process on the machine that uses a traced allocator and\n"
	"reports the call sites whose allocations are still outstanding at the\n"
	"end, older than --min-age, ranked across the system.  Needs root or\n"
	"CAP_BPF and CAP_PERFMON.\n"
	"\n"
	"options:\n";

struct ranked {
	struct mt_process *p;
	uint32_t site;
};

static int by_leak(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	uint64_t bx = x->p->figures.sites[x->site].live_bytes,
		 by = y->p->figures.sites[y->site].live_bytes;
	return bx == by ? 0 : bx > by ? -1 : 1;
}

static void print_text(struct mt_recording *snap, long top, double duration, double min_age)
{
	size_t n = 0, cap = 0;
	struct ranked *v = NULL;
	uint64_t total = 0;
	for (size_t i = 0; i < snap->nprocs; i++) {
		struct mt_process *p = snap->procs[i];
		for (uint32_t s = 0; s < p->figures.nsites; s++)
			if (p->figures.sites[s].live_count) {
				mt_grow(&v, &cap, n, sizeof *v);
				v[n++] = (struct ranked){ .p = p, .site = s };
				total += p->figures.sites[s].live_bytes;
			}
	}
	if (n) /* (qsort wants a non-null array even for no elements) */
		qsort(v, n, sizeof *v, by_leak);
	char a[32], b[32];
	size_t leaking = 0;
	for (size_t i = 0; i < snap->nprocs; i++)
		leaking += snap->procs[i]->figures.t.live_count > 0;
	printf("memtrace sweep: %.0f s, %zu of %zu process%s with outstanding allocations older than %.1f s: %s\n",
	       duration, leaking, snap->nprocs, snap->nprocs == 1 ? "" : "es", min_age,
	       mt_fmt_bytes(total, a));
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < n && (long)i < top; i++) {
		struct mt_process *p = v[i].p;
		const struct mt_site_stats *st = &p->figures.sites[v[i].site];
		printf("\n%s in %s block%s, pid %u (", mt_fmt_bytes(st->live_bytes, a),
		       mt_fmt_count(st->live_count, b), st->live_count == 1 ? "" : "s", p->pid);
		mt_text_str(stdout, p->exe ? p->exe : "?");
		fputs("):\n", stdout);
		struct mt_symbolizer *sym = mt_process_symbolizer(p);
		int k = mt_site_frames(p, sym, v[i].site, fr, MT_SYM_MAX_FRAMES);
		mt_print_frames(stdout, fr, k, 8, "    ", NULL);
		mt_sym_free(sym);
	}
	if ((long)n > top)
		printf("\n... and %zu more call sites (use -n)\n", n - (size_t)top);
	free(v);
}

/* How far the sweep is: it ends after --duration. */
struct sweep_clock {
	double duration, elapsed;
	int progress; /* on a terminal: a line saying so, at every rescan */
};

static int sweep_tick(void *ctx, uint64_t elapsed_ns, int rescanned)
{
	struct sweep_clock *c = ctx;
	c->elapsed = (double)elapsed_ns / 1e9;
	if (rescanned && c->progress)
		fprintf(stderr, "\rmemtrace: sweeping: %.0f of %.0f s", c->elapsed, c->duration);
	return c->elapsed >= c->duration;
}

int cmd_sweep(int argc, char **argv)
{
	double duration = 10, min_age = 1;
	uint64_t top = 20;
	int json = 0;
	const char *output = NULL;
	struct mt_bpf_opts maps = { .events = 0 };
	const struct mt_option opts[] = {
		{ .longopt = "--duration",
		  .argh = "S",
		  .help = "how long to watch (default 10)",
		  .type = MT_OPT_SECONDS,
		  .target = &duration,
		  .flags = MT_OPTF_POSITIVE,
		  .err = "--duration needs a positive duration: " MT_DURATION_FORMS },
		{ .longopt = "--min-age",
		  .argh = "S",
		  .help = "only allocations at least S seconds old at the end\n"
			  "(default 1: younger ones are likely still in use)",
		  .type = MT_OPT_SECONDS,
		  .target = &min_age,
		  .err = "--min-age needs a duration: " MT_DURATION_FORMS },
		MT_OPT_TOP(&top, 1000000, "call sites shown (default 20)"),
		MT_OPT_JSON(&json, "print the JSON report (memtrace-report(1) schema)"),
		MT_OPT_OUTPUT(&output, "FILE", "also write a recording of every event"),
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = {
		.cmd = "sweep", .opts = opts, .usage = usage_text, .col = 21
	};
	int st = mt_options_bpf(&cl, &maps, argc, argv);
	if (st != MT_OPTS_GO_ON)
		return st;
	/* Caught before tracing begins: a stop signal while the processes are
	 * scanned ends the session as soon as they are, detached and
	 * reported as at any other time. */
	mt_catch_stop_signals();
	struct mt_session ss;
	if (mt_session_start(&ss, &maps, output, 0, 1, NULL, 0, "sweep") < 0)
		return MT_EXIT_RUNTIME;
	struct mt_watch *live = mt_watch_new(ss.b);
	struct sweep_clock c = { .duration = duration, .progress = isatty(2) };
	struct mt_session_loop loop = {
		.poll_ms = 20,
		.scan_at_start = 1,
		.watch = live,
		.tick = sweep_tick,
		.ctx = &c,
	};
	mt_session_run(&ss, &loop);
	if (c.progress)
		fprintf(stderr, "\r\033[K");
	mt_session_poll(&ss, 0);
	mt_watch_refresh(live);
	struct mt_recording snap;
	mt_watch_snapshot(live, (uint64_t)(min_age * 1e9), &snap);
	for (size_t i = 0; i < snap.nprocs; i++) {
		snap.procs[i]->end_ts = (uint64_t)(c.elapsed * 1e9);
		mt_process_stdio_held(snap.procs[i]); /* no leaks, as in a report */
	}
	/* The figures are in: every process runs untraced again before the
	 * report is symbolized, which takes seconds on a busy machine. */
	mt_watch_free(live);
	int rc = mt_session_close(&ss);
	if (json) {
		struct mt_report_opts ro = { .view = MT_VIEW_LEAKS,
					     .json = 1,
					     .threshold = 0.5,
					     .limit = (long)top,
					     .pid = -1 };
		mt_report_json(stdout, &snap, &ro);
	} else {
		print_text(&snap, (long)top, c.elapsed, min_age);
	}
	mt_recording_free(&snap);
	return rc;
}
