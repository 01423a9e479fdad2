/*
 * cmd_attach.c - `memtrace -p PID` / `memtrace attach`: watch running
 * processes through the BPF backend, with no restart.
 *
 * Every interval it prints the top call sites by bytes outstanding (allocated
 * since attaching and not freed); at the end (Ctrl-C, SIGTERM, --duration, or
 * when every traced process has exited) the leak report; with -o it also
 * writes a recording of every event.  Detaching removes every probe: the
 * processes run on exactly as before.
 */
#include "commands.h"
#include "options.h"
#include "capture/bpf/procmaps.h"
#include "watch/livescan.h"
#include "watch/session.h"
#include "analyse/runtime_held.h"
#include "report/report.h"
#include "report/top.h"
#include "base/util.h"
#include "base/clock.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: memtrace -p PID [-p PID...] [options]\n"
	"       memtrace attach -p PID [-p PID...] [options]\n"
	"\n"
	"Attaches to running processes (BPF uprobes on their allocators; needs root\n"
	"or CAP_BPF and CAP_PERFMON), prints the top call sites by bytes outstanding\n"
	"every interval, and the leak report when it stops.\n"
	"\n"
	"options:\n";

static const char epilogue[] =
	"\n"
	"Outstanding and leaked count only allocations made while attached.\n"
	"See memtrace-attach(1).\n";

/* The table of outstanding call sites, every interval; the leak scan and
 * report on demand (SIGUSR2, --scan-interval). */
struct attach_table {
	struct mt_watch *live;
	struct mt_top *tp;
	uint64_t interval_ns, next_ns;
	int show; /* --interval 0: only the leak report at the end */
	long top;
	struct mt_session *ss;
	const struct mt_pids *pids;
	int no_scan;
	uint64_t scan_every_ns, next_scan_ns; /* --scan-interval (0: none) */
};

static volatile sig_atomic_t scan_asked;

static void on_usr2(int sig)
{
	(void)sig;
	scan_asked = 1;
}

static void scan_and_report(struct attach_table *t, uint64_t start_ns);

static int print_table(void *ctx, uint64_t elapsed_ns, int rescanned)
{
	struct attach_table *t = ctx;
	(void)rescanned;
	if (scan_asked || (t->scan_every_ns && elapsed_ns >= t->next_scan_ns)) {
		scan_asked = 0;
		t->next_scan_ns = elapsed_ns + t->scan_every_ns;
		scan_and_report(t, mt_now_ns() - elapsed_ns);
	}
	if (!t->show || elapsed_ns < t->next_ns)
		return 0;
	t->next_ns = elapsed_ns + t->interval_ns;
	struct mt_recording snap;
	mt_watch_snapshot(t->live, 0, &snap);
	mt_top_print(t->tp, stdout, &snap, (double)elapsed_ns / 1e9, t->top, 0);
	mt_recording_free(&snap);
	return 0;
}

/* The leak report from the maps, once the last events are in; with the
 * leak scan's kinds when SCANS (one per pid of PIDS) is not NULL. */
static void print_leaks(struct mt_session *ss, struct mt_watch *live, uint64_t start_ns, long top,
			const struct mt_pids *pids, const struct mt_live_scan *scans)
{
	mt_session_poll(ss, 0);
	mt_watch_refresh(live);
	struct mt_recording snap;
	mt_watch_snapshot(live, 0, &snap);
	uint64_t end = mt_now_ns() - start_ns;
	for (size_t i = 0; i < snap.nprocs; i++) {
		/* one that exited ran until then, not until now */
		int64_t st;
		uint64_t ets;
		int gone = mt_bpf_exit_status(ss->b, snap.procs[i]->pid, &st, &ets) &&
			   ets > start_ns && ets - start_ns < end;
		snap.procs[i]->end_ts = gone ? ets - start_ns : end;
		/* stdio's buffers are no leaks, as in a recording's report */
		mt_process_stdio_held(snap.procs[i]);
		for (size_t k = 0; scans && k < pids->n; k++)
			if (scans[k].pid == (pid_t)snap.procs[i]->pid)
				mt_live_scan_apply(&scans[k], ss->b, snap.procs[i], 0);
	}
	/* every process attached to, each asked for by its -p */
	struct mt_report_opts ro = {
		.view = MT_VIEW_LEAKS, .threshold = 0.5, .limit = top, .pid = -1, .all_images = 1
	};
	printf("\n");
	if (snap.nprocs) {
		/* fitted to the terminal, as report's text is */
		FILE *f = mt_fit_open(stdout, mt_output_width());
		mt_report_text(f, &snap, &ro);
		mt_fit_close(f, stdout);
	} else {
		printf("no allocation made while attached is still outstanding\n");
	}
	mt_recording_free(&snap);
}

/* The leak scan of every process (unless --no-scan), then the leak
 * report: at the end, and on demand while attached. */
static void scan_and_report(struct attach_table *t, uint64_t start_ns)
{
	struct mt_live_scan *scans = NULL;
	if (!t->no_scan) {
		mt_session_poll(t->ss, 0);
		scans = xcalloc(t->pids->n, sizeof *scans);
		mt_live_scan_all(t->ss->b, t->pids->v, t->pids->n, scans);
	}
	print_leaks(t->ss, t->live, start_ns, t->top, t->pids, scans);
	for (size_t i = 0; scans && i < t->pids->n; i++)
		mt_live_scan_free(&scans[i]);
	free(scans);
	fflush(stdout);
}

int cmd_attach(int argc, char **argv)
{
	struct mt_pids pids = { .n = 0 };
	double duration = 0, interval = 5, scan_interval = 0;
	uint64_t top = 10;
	const char *output = NULL;
	int embed = 0, no_scan = 0;
	struct mt_bpf_opts maps = { .events = 0 };
	const struct mt_option opts[] = {
		MT_OPT_PIDS(&pids, "a process to attach to (repeatable)"),
		{ .longopt = "--duration",
		  .argh = "S",
		  .help = "stop after S seconds (default: at Ctrl-C, or when\n"
			  "every process has exited)",
		  .type = MT_OPT_SECONDS,
		  .target = &duration,
		  .err = "--duration needs a duration: " MT_DURATION_FORMS },
		{ .longopt = "--interval",
		  .argh = "S",
		  .help = "print the top call sites every S seconds (default 5;\n"
			  "0: only at the end)",
		  .type = MT_OPT_SECONDS,
		  .target = &interval,
		  .err = "--interval needs a duration: " MT_DURATION_FORMS },
		MT_OPT_TOP(&top, 1000000, "call sites shown (default 10)"),
		MT_OPT_OUTPUT(&output, "FILE", "also write a recording of every event"),
		{ .longopt = "--embed-binaries",
		  .help = "put the binaries the processes mapped into the\n"
			  "recording (-o), to report it on another machine",
		  .type = MT_OPT_FLAG,
		  .target = &embed },
		{ .longopt = "--scan-interval",
		  .argh = "S",
		  .help = "also scan and print the leak report every S seconds\n"
			  "(and whenever memtrace gets SIGUSR2)",
		  .type = MT_OPT_SECONDS,
		  .target = &scan_interval,
		  .flags = MT_OPTF_POSITIVE,
		  .err = "--scan-interval needs a positive duration: " MT_DURATION_FORMS },
		{ .longopt = "--no-scan",
		  .help = "no leak scan at the end: every outstanding block\n"
			  "is reported as leaked (by default each process is\n"
			  "held still for a moment and its memory scanned, to\n"
			  "tell blocks nothing points at from those still held)",
		  .type = MT_OPT_FLAG,
		  .target = &no_scan },
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = {
		.cmd = "attach", .opts = opts, .usage = usage_text, .col = 23, .epilogue = epilogue
	};
	int st = mt_options_bpf(&cl, &maps, argc, argv);
	if (st != MT_OPTS_GO_ON)
		return st;
	if (!pids.n)
		return mt_usage_error("attach", "no process given (-p PID)");
	if (embed && !output)
		return mt_usage_error("attach", "--embed-binaries goes with -o FILE");
	if (mt_pids_running(pids.v, pids.n) < 0)
		return MT_EXIT_RUNTIME;

	/* Caught before tracing begins: a stop signal while the processes are
	 * scanned ends the session as soon as they are, detached and
	 * reported as at any other time. */
	mt_catch_stop_signals();
	struct mt_session ss;
	int r = mt_session_start(&ss, &maps, output, embed, 0, pids.v, pids.n, "attach");
	if (r < 0) {
		/* a recording of nothing, once it was made */
		if (r == -2 && output)
			unlink(output);
		return MT_EXIT_RUNTIME;
	}
	struct attach_table t = {
		.live = mt_watch_new(ss.b),
		.tp = mt_top_new(),
		.interval_ns = (uint64_t)(interval * 1e9),
		.next_ns = (uint64_t)(interval * 1e9),
		.show = interval > 0,
		.top = (long)top,
		.ss = &ss,
		.pids = &pids,
		.no_scan = no_scan,
		.scan_every_ns = (uint64_t)(scan_interval * 1e9),
		.next_scan_ns = (uint64_t)(scan_interval * 1e9),
	};
	struct sigaction sa = { .sa_handler = on_usr2 };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	struct mt_session_loop loop = {
		.poll_ms = 10,
		.duration = duration,
		.watch = t.live,
		.exited = "every traced process has exited",
		.tick = print_table,
		.ctx = &t,
	};
	/* named now, before the note that says it is traced: a process that
	 * exits before the first refresh is still */
	for (size_t i = 0; i < pids.n; i++)
		mt_watch_add(t.live, (uint32_t)pids.v[i]);
	mt_note("attached to %zu process%s; Ctrl-C to stop and print the leaks", pids.n,
		pids.n == 1 ? "" : "es");
	mt_session_run(&ss, &loop);
	scan_and_report(&t, loop.start_ns);
	mt_top_free(t.tp);
	mt_watch_free(t.live);
	return mt_session_close(&ss);
}
