/*
 * cmd_top.c - `memtrace top`: periodic top-N call-site snapshots of running
 * processes (or of every process, --all), aggregated in BPF maps: outstanding
 * bytes and blocks and the allocation rate per call site, as a table or as
 * one JSON object per line.
 */
#include "commands.h"
#include "options.h"
#include "capture/bpf/procmaps.h"
#include "watch/session.h"
#include "report/top.h"
#include "base/util.h"

static const char usage_text[] =
	"usage: memtrace top [-p PID...|--all] [options]\n"
	"\n"
	"Prints, every interval, the call sites of running processes with the most\n"
	"bytes outstanding (allocated since tracing began and not freed), with\n"
	"their allocation rate.  Needs root or CAP_BPF and CAP_PERFMON.\n"
	"\n"
	"options:\n";

/* A snapshot every interval, COUNT of them (0: no limit). */
struct top_snapshots {
	struct mt_watch *live;
	struct mt_top *tp;
	uint64_t interval_ns, next_ns, count, shown;
	long top;
	int json;
};

static int print_snapshot(void *ctx, uint64_t elapsed_ns, int rescanned)
{
	struct top_snapshots *t = ctx;
	(void)rescanned;
	if (elapsed_ns < t->next_ns)
		return 0;
	t->next_ns += t->interval_ns;
	mt_watch_refresh(t->live);
	struct mt_recording snap;
	mt_watch_snapshot(t->live, 0, &snap);
	mt_top_print(t->tp, stdout, &snap, (double)elapsed_ns / 1e9, t->top, t->json);
	mt_recording_free(&snap);
	t->shown++;
	return t->count && t->shown >= t->count;
}

int cmd_top(int argc, char **argv)
{
	struct mt_pids pids = { .n = 0 };
	int all = 0, json = 0;
	double interval = 1;
	uint64_t count = 0, top = 10;
	struct mt_bpf_opts maps = { .events = 0 };
	const struct mt_option opts[] = {
		MT_OPT_PIDS(&pids, "a process to watch (repeatable)"),
		{ .shortopt = "-a",
		  .longopt = "--all",
		  .help = "every process that uses a traced allocator",
		  .type = MT_OPT_FLAG,
		  .target = &all },
		{ .longopt = "--interval",
		  .argh = "S",
		  .help = "seconds between snapshots (default 1)",
		  .type = MT_OPT_SECONDS,
		  .target = &interval,
		  .flags = MT_OPTF_POSITIVE,
		  .err = "--interval needs a positive duration: " MT_DURATION_FORMS },
		{ .longopt = "--count",
		  .argh = "K",
		  .help = "stop after K snapshots (default: at Ctrl-C)",
		  .type = MT_OPT_COUNT,
		  .target = &count,
		  .max = UINT64_MAX },
		MT_OPT_TOP(&top, 1000000, "call sites per snapshot (default 10)"),
		MT_OPT_JSON(&json, "one JSON object per snapshot and line"),
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = { .cmd = "top", .opts = opts, .usage = usage_text, .col = 21 };
	int st = mt_options_bpf(&cl, &maps, argc, argv);
	if (st != MT_OPTS_GO_ON)
		return st;
	if (!all && !pids.n)
		return mt_usage_error("top", "say which processes: -p PID or --all");
	if (all && pids.n)
		return mt_usage_error("top", "-p and --all exclude each other");
	if (mt_pids_running(pids.v, pids.n) < 0)
		return MT_EXIT_RUNTIME;

	/* Caught before tracing begins: a stop signal while the processes are
	 * scanned ends the session as soon as they are, detached and
	 * reported as at any other time. */
	mt_catch_stop_signals();
	struct mt_session ss;
	if (mt_session_start(&ss, &maps, NULL, 0, all, pids.v, pids.n, "trace") < 0)
		return MT_EXIT_RUNTIME;
	struct top_snapshots t = {
		.live = mt_watch_new(ss.b),
		.tp = mt_top_new(),
		.interval_ns = (uint64_t)(interval * 1e9),
		.next_ns = (uint64_t)(interval * 1e9),
		.count = count,
		.top = (long)top,
		.json = json,
	};
	for (size_t i = 0; i < pids.n; i++)
		mt_watch_add(t.live, (uint32_t)pids.v[i]); /* named even if it exits at once */
	/* with --all, new processes are watched as they come: it never ends */
	struct mt_session_loop loop = {
		.poll_ms = 20,
		.exited = "every watched process has exited",
		.tick = print_snapshot,
		.ctx = &t,
	};
	mt_session_run(&ss, &loop);
	mt_top_free(t.tp);
	mt_watch_free(t.live);
	return mt_session_close(&ss);
}
