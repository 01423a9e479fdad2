/*
 * cmd_top.c - `memtrace top`: periodic top-N call-site snapshots of running
 * processes (or of every process, --all), aggregated in BPF maps: outstanding
 * bytes and blocks and the allocation rate per call site, as a table or as
 * one JSON object per line.
 */
#include "bpf_stream.h"
#include "commands.h"
#include "watch.h"
#include "live_print.h"
#include "procmaps.h"
#include "recorder.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
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
	"  -h, --help         show this help\n";

int cmd_top(int argc, char **argv)
{
	pid_t pids[256];
	size_t npids = 0;
	int all = 0, json = 0;
	double interval = 1;
	uint64_t count = 0;
	long top = 10;
	const char *val;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return MT_EXIT_OK;
		} else if (!strncmp(a, "-p", 2) || !strcmp(a, "--pid") || mt_opt(a, "pid", &val)) {
			if (!strcmp(a, "-p") || !strcmp(a, "--pid"))
				val = ++i < argc ? argv[i] : NULL;
			else if (a[1] == 'p')
				val = a + 2; /* -pPID */
			uint64_t pid;
			if (!val || mt_parse_u64(val, &pid) || pid == 0 || pid > 0x3fffffff)
				return mt_usage_error("top", "-p needs a process id, not '%s'", val ? val : "");
			if (npids == sizeof pids / sizeof *pids)
				return mt_usage_error("top", "at most %zu processes", npids);
			pids[npids++] = (pid_t)pid;
		} else if (!strcmp(a, "-a") || !strcmp(a, "--all")) {
			all = 1;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--interval") || mt_opt(a, "interval", &val)) {
			if (!strcmp(a, "--interval"))
				val = ++i < argc ? argv[i] : NULL;
			if (mt_parse_seconds(val, &interval) || interval <= 0)
				return mt_usage_error("top", "--interval needs a positive number of seconds");
		} else if (!strcmp(a, "--count") || mt_opt(a, "count", &val)) {
			if (!strcmp(a, "--count"))
				val = ++i < argc ? argv[i] : NULL;
			if (mt_parse_u64(val, &count) || count == 0)
				return mt_usage_error("top", "--count needs a positive number of snapshots");
		} else if (!strcmp(a, "-n") || !strcmp(a, "--top") || mt_opt(a, "top", &val)) {
			if (a[1] == 'n' || !strcmp(a, "--top"))
				val = ++i < argc ? argv[i] : NULL;
			uint64_t n;
			if (!val || mt_parse_u64(val, &n) || n == 0 || n > 1000000)
				return mt_usage_error("top", "-n needs a positive number of call sites");
			top = (long)n;
		} else {
			return mt_usage_error("top", "unknown option '%s'", a);
		}
	}
	if (!all && !npids)
		return mt_usage_error("top", "say which processes: -p PID or --all");
	if (all && npids)
		return mt_usage_error("top", "-p and --all exclude each other");
	for (size_t i = 0; i < npids; i++)
		if (!mt_pid_alive(pids[i])) {
			mt_error("no process %d", (int)pids[i]);
			return MT_EXIT_RUNTIME;
		}

	char err[512];
	struct mt_bpf_opts bo = {.events = 0};
	struct mt_bpf *b;
	if (mt_bpf_open(&b, &bo, err, sizeof err) < 0) {
		mt_error("cannot trace: %s", err);
		return MT_EXIT_RUNTIME;
	}
	int r = all ? mt_bpf_trace_all(b, err, sizeof err) : 0;
	for (size_t i = 0; !r && i < npids; i++)
		r = mt_bpf_trace_pid(b, pids[i], err, sizeof err);
	if (r < 0) {
		mt_error("%s", err);
		mt_bpf_close(b);
		return MT_EXIT_RUNTIME;
	}
	mt_catch_stop_signals();
	struct mt_watch *live = mt_watch_new(b);
	struct mt_top *tp = mt_top_new();
	uint64_t t0 = mt_now_ns(), next = t0 + (uint64_t)(interval * 1e9), next_scan = t0 + 1000000000ull;
	uint64_t shown = 0;
	while (!mt_stop && (!count || shown < count)) {
		mt_bpf_poll(b, 20, mt_bpf_ignore_event, NULL);
		uint64_t now = mt_now_ns();
		if (now >= next_scan) {
			next_scan = now + 1000000000ull;
			mt_bpf_rescan(b);
			size_t left = all;
			for (size_t i = 0; i < npids; i++)
				left += mt_pid_alive(pids[i]);
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
		mt_top_print(tp, stdout, &snap, (double)(now - t0) / 1e9, top, json);
		mt_recording_free(&snap);
		shown++;
	}
	mt_top_free(tp);
	mt_watch_free(live);
	mt_bpf_close(b);
	return MT_EXIT_OK;
}
