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
#include "watch/livescan.h"
#include "watch/session.h"
#include "analyse/runtime_held.h"
#include "analyse/sites.h"
#include "report/report.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
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
	uint64_t key[4]; /* lost, possibly lost, not scanned, still held bytes */
};

/* A site's leaked bytes by what the scan found: lost (definitely and
 * indirectly), possibly lost, not scanned (a process no scan classified:
 * --no-scan, or one that could not be held), still reachable. */
static void site_key(const struct mt_process *p, uint32_t s, uint64_t key[4])
{
	const struct mt_leak_kinds *k = &p->kinds;
	uint64_t n;
	key[0] = key[1] = key[2] = key[3] = 0;
	if (!k->ran || !k->sites || s >= k->nsites) {
		key[2] = p->figures.sites[s].live_bytes;
		return;
	}
	mt_kind_sum(&k->sites[s], MT_LEAK_LOST, &n, &key[0]);
	mt_kind_sum(&k->sites[s], MT_LEAK_MASK(MT_LEAK_POSSIBLE), &n, &key[1]);
	mt_kind_sum(&k->sites[s], MT_LEAK_MASK(MT_LEAK_REACHABLE), &n, &key[3]);
}

/* Definitely lost first: then possibly lost, then what no scan told
 * apart, then still held. */
static int by_leak(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	for (int i = 0; i < 4; i++)
		if (x->key[i] != y->key[i])
			return x->key[i] > y->key[i] ? -1 : 1;
	return 0;
}

/* "12 KB lost in 120 blocks, 100 B possibly lost in 1, 4 KB still held
 * in 3" of a site, the parts that are not 0. */
static void print_site_kinds(const struct mt_process *p, uint32_t s)
{
	const struct mt_site_stats *st = &p->figures.sites[s];
	char a[32], b[32];
	if (!p->kinds.ran || !p->kinds.sites || s >= p->kinds.nsites) {
		printf("%s outstanding in %s block%s (not scanned)",
		       mt_fmt_bytes(st->live_bytes, a), mt_fmt_count(st->live_count, b),
		       mt_s(st->live_count));
		return;
	}
	static const struct {
		unsigned mask;
		const char *what;
	} parts[] = { { MT_LEAK_LOST, "lost" },
		      { MT_LEAK_MASK(MT_LEAK_POSSIBLE), "possibly lost" },
		      { MT_LEAK_MASK(MT_LEAK_REACHABLE), "still held" } };
	int said = 0;
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
		uint64_t n, bytes;
		mt_kind_sum(&p->kinds.sites[s], parts[i].mask, &n, &bytes);
		if (!n)
			continue;
		printf("%s%s %s in %s block%s", said++ ? ", " : "", mt_fmt_bytes(bytes, a),
		       parts[i].what, mt_fmt_count(n, b), mt_s(n));
	}
}

static void print_text(struct mt_recording *snap, long top, double duration, double min_age,
		       const struct mt_live_scan *scans)
{
	size_t n = 0, cap = 0;
	struct ranked *v = NULL;
	uint64_t total = 0, kinds[4] = { 0 };
	for (size_t i = 0; i < snap->nprocs; i++) {
		struct mt_process *p = snap->procs[i];
		for (uint32_t s = 0; s < p->figures.nsites; s++)
			if (p->figures.sites[s].live_count) {
				mt_grow(&v, &cap, n, sizeof *v);
				v[n] = (struct ranked){ .p = p, .site = s };
				site_key(p, s, v[n].key);
				for (int k = 0; k < 4; k++)
					kinds[k] += v[n].key[k];
				n++;
				total += p->figures.sites[s].live_bytes;
			}
	}
	if (n) /* (qsort wants a non-null array even for no elements) */
		qsort(v, n, sizeof *v, by_leak);
	char a[32], b[32], c[32];
	size_t leaking = 0;
	for (size_t i = 0; i < snap->nprocs; i++)
		leaking += snap->procs[i]->figures.t.live_count > 0;
	printf("memtrace sweep: %.0f s, %zu of %zu process%s with outstanding allocations older than %.1f s: %s\n",
	       duration, leaking, snap->nprocs, snap->nprocs == 1 ? "" : "es", min_age,
	       mt_fmt_bytes(total, a));
	if (scans)
		printf("  leak scan: %s lost (definitely and indirectly), %s possibly lost, %s still "
		       "held (reachable: not leaks)\n",
		       mt_fmt_bytes(kinds[0], a), mt_fmt_bytes(kinds[1], b),
		       mt_fmt_bytes(kinds[3], c));
	for (size_t i = 0; scans && i < snap->nprocs; i++)
		if (snap->procs[i]->figures.t.live_count && !scans[i].ran) {
			printf("  not scanned: pid %u (", snap->procs[i]->pid);
			mt_text_str(stdout, mt_process_name(snap->procs[i]));
			fputs("): ", stdout);
			mt_text_str(stdout, scans[i].res.why);
			fputs("\n", stdout);
		}
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < n && (long)i < top; i++) {
		struct mt_process *p = v[i].p;
		putchar('\n');
		print_site_kinds(p, v[i].site);
		printf(", pid %u (", p->pid);
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

/* The leak scan of every process of SNAP with outstanding blocks, one at
 * a time (none is held longer than its own scan), their kinds put into
 * SNAP: of the blocks older than MIN_AGE, as its figures count.  The
 * scans, one per process of SNAP. */
static struct mt_live_scan *scan_all(struct mt_bpf *b, struct mt_recording *snap, double min_age,
				     int progress)
{
	struct mt_live_scan *scans = xcalloc(snap->nprocs + 1, sizeof *scans);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t before = mt_timespec_ns(now) - (uint64_t)(min_age * 1e9);
	size_t todo = 0, done = 0;
	for (size_t i = 0; i < snap->nprocs; i++)
		todo += snap->procs[i]->figures.t.live_count > 0;
	for (size_t i = 0; i < snap->nprocs; i++) {
		struct mt_process *p = snap->procs[i];
		if (!p->figures.t.live_count)
			continue;
		if (progress)
			fprintf(stderr, "\rmemtrace: leak scan: %zu of %zu processes\033[K", ++done,
				todo);
		int64_t st;
		scans[i].pid = (pid_t)p->pid;
		if (mt_bpf_exit_status(b, p->pid, &st, NULL) ||
		    (kill((pid_t)p->pid, 0) < 0 && errno == ESRCH))
			snprintf(scans[i].res.why, sizeof scans[i].res.why,
				 "it exited during the sweep");
		else if (mt_live_scan(b, (pid_t)p->pid, &scans[i]) == 0)
			mt_live_scan_apply(&scans[i], b, p, before);
	}
	if (progress)
		fprintf(stderr, "\r\033[K");
	return scans;
}

/* How far the sweep is: it ends after --duration. */
struct sweep_clock {
	double duration, elapsed;
	int progress; /* on a terminal: a line saying so, at every rescan */
	int probed;   /* the first look at the machine's processes is done */
};

static int sweep_tick(void *ctx, uint64_t elapsed_ns, int rescanned)
{
	struct sweep_clock *c = ctx;
	c->elapsed = (double)elapsed_ns / 1e9;
	if (rescanned && !c->probed && !c->progress)
		/* from now on what the processes allocate is seen (a log, or
		 * a script that starts its workload then, wants to know) */
		mt_note("sweep: every process probed; watching for %.0f s", c->duration);
	c->probed |= rescanned;
	if (rescanned && c->progress)
		fprintf(stderr, "\rmemtrace: sweeping: %.0f of %.0f s", c->elapsed, c->duration);
	return c->elapsed >= c->duration;
}

int cmd_sweep(int argc, char **argv)
{
	double duration = 10, min_age = 1;
	uint64_t top = 20;
	int json = 0, no_scan = 0;
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
		{ .longopt = "--no-scan",
		  .help = "no leak scan at the end: every outstanding block\n"
			  "counts as leaked (by default each process is held\n"
			  "still in turn for a moment and its memory scanned)",
		  .type = MT_OPT_FLAG,
		  .target = &no_scan },
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
	struct mt_live_scan *scans = no_scan ? NULL : scan_all(ss.b, &snap, min_age, c.progress);
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
		print_text(&snap, (long)top, c.elapsed, min_age, scans);
	}
	for (size_t i = 0; scans && i < snap.nprocs; i++)
		mt_live_scan_free(&scans[i]);
	free(scans);
	mt_recording_free(&snap);
	return rc;
}
