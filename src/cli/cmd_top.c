/*
 * cmd_top.c - `memtrace top`: periodic top-N call-site snapshots of running
 * processes (or of every process, --all), aggregated in BPF maps: outstanding
 * bytes and blocks and the allocation rate per call site, as a table or as
 * one JSON object per line.
 */
#include "collect/bpf_stream.h"
#include "commands.h"
#include "collect/watch.h"
#include "report/top.h"
#include "capture/bpf/procmaps.h"
#include "collect/writer.h"
#include "base/util.h"

#include <string.h>

static const char usage_text[] =
	"usage: memtrace top [-p PID...|--all] [options]\n"
	"\n"
	"Prints, every interval, the call sites of running processes with the most\n"
	"bytes outstanding (allocated since tracing began and not freed), with\n"
	"their allocation rate.  Needs root or CAP_BPF and CAP_PERFMON.\n"
	"\n"
	"options:\n"
	"  -p, --pid PID      a process to watch (repeatable)\n"
	"  -a, --all          every process that uses a traced allocator\n"
	"  --interval S       seconds between snapshots (default 1)\n"
	"  --count K          stop after K snapshots (default: at Ctrl-C)\n"
	"  -n, --top N        call sites per snapshot (default 10)\n"
	"  --json             one JSON object per snapshot and line\n"
	"  --max-live N       entries of the kernel's map of live blocks (default\n"
	"                     1048576); a full map is counted as a loss\n"
	"  --max-stacks N     entries of the kernel's stack map (default 65536)\n"
	"  -h, --help         show this help\n";

int cmd_top(int argc, char **argv)
{
	pid_t pids[256];
	size_t npids = 0;
	int all = 0, json = 0;
	double interval = 1;
	uint64_t count = 0, top = 10;
	const char *val;
	struct mt_bpf_opts maps = {0};
	for (int i = 1, r; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return MT_EXIT_OK;
		} else if (mt_arg(argc, argv, &i, "-p", "--pid", &val)) {
			if (npids == sizeof pids / sizeof *pids)
				return mt_usage_error("top", "at most %zu processes", npids);
			if (mt_arg_pid("top", val, &pids[npids++]))
				return MT_EXIT_USAGE;
		} else if (!strcmp(a, "-a") || !strcmp(a, "--all")) {
			all = 1;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (mt_arg(argc, argv, &i, NULL, "--interval", &val)) {
			if (mt_parse_seconds(val, &interval) || interval <= 0)
				return mt_usage_error("top", "--interval needs a positive number of seconds");
		} else if (mt_arg(argc, argv, &i, NULL, "--count", &val)) {
			if (mt_arg_count("top", "--count", val, UINT64_MAX, &count))
				return MT_EXIT_USAGE;
		} else if (mt_arg(argc, argv, &i, "-n", "--top", &val)) {
			if (mt_arg_count("top", "-n", val, 1000000, &top))
				return MT_EXIT_USAGE;
		} else if ((r = mt_arg_bpf_maps("top", argc, argv, &i, &maps)) != 0) {
			if (r < 0)
				return MT_EXIT_USAGE;
		} else {
			return mt_usage_error("top", "unknown option '%s'", a);
		}
	}
	if (!all && !npids)
		return mt_usage_error("top", "say which processes: -p PID or --all");
	if (all && npids)
		return mt_usage_error("top", "-p and --all exclude each other");
	if (mt_pids_running(pids, npids) < 0)
		return MT_EXIT_RUNTIME;

	char err[512];
	struct mt_session ss;
	if (mt_session_open(&ss, &maps, NULL, err, sizeof err) < 0) {
		mt_error("cannot trace: %s", err);
		return MT_EXIT_RUNTIME;
	}
	int r = all ? mt_bpf_trace_all(ss.b, err, sizeof err) : 0;
	for (size_t i = 0; !r && i < npids; i++)
		r = mt_bpf_trace_pid(ss.b, pids[i], err, sizeof err);
	if (r < 0) {
		mt_error("%s", err);
		mt_session_close(&ss);
		return MT_EXIT_RUNTIME;
	}
	mt_catch_stop_signals();
	struct mt_watch *live = mt_watch_new(ss.b);
	struct mt_top *tp = mt_top_new();
	uint64_t t0 = mt_now_ns(), next = t0 + (uint64_t)(interval * 1e9), next_scan = t0 + 1000000000ull;
	uint64_t shown = 0;
	while (!mt_stop && (!count || shown < count)) {
		mt_session_poll(&ss, 20);
		uint64_t now = mt_now_ns();
		if (now >= next_scan) {
			next_scan = now + 1000000000ull;
			mt_session_rescan(&ss);
			size_t left = (size_t)all;
			for (size_t i = 0; i < npids; i++)
				left += (size_t)mt_pid_alive(pids[i]);
			if (!left) {
				mt_note("every watched process has exited");
				break;
			}
		}
		if (now < next)
			continue;
		next += (uint64_t)(interval * 1e9);
		mt_watch_refresh(live);
		struct mt_recording snap;
		mt_watch_snapshot(live, 0, &snap);
		mt_top_print(tp, stdout, &snap, (double)(now - t0) / 1e9, (long)top, json);
		mt_recording_free(&snap);
		shown++;
	}
	mt_top_free(tp);
	mt_watch_free(live);
	return mt_session_close(&ss);
}
