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
#include "collect/bpf_stream.h"
#include "commands.h"
#include "collect/watch.h"
#include "report/top.h"
#include "capture/bpf/procmaps.h"
#include "report/report.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: memtrace -p PID [-p PID...] [options]\n"
	"       memtrace attach -p PID [-p PID...] [options]\n"
	"\n"
	"Attaches to running processes (BPF uprobes on their allocators; needs root\n"
	"or CAP_BPF and CAP_PERFMON), prints the top call sites by bytes outstanding\n"
	"every interval, and the leak report when it stops.\n"
	"\n"
	"options:\n"
	"  -p, --pid PID        a process to attach to (repeatable)\n"
	"  --duration S         stop after S seconds (default: at Ctrl-C, or when\n"
	"                       every process has exited)\n"
	"  --interval S         print the top call sites every S seconds (default 5;\n"
	"                       0: only at the end)\n"
	"  -n, --top N          call sites shown (default 10)\n"
	"  -o, --output FILE    also write a recording of every event\n"
	"  --max-live N         entries of the kernel's map of live blocks (default\n"
	"                       1048576); a full map is counted as a loss\n"
	"  --max-stacks N       entries of the kernel's stack map (default 65536)\n"
	"  -h, --help           show this help\n"
	"\n"
	"Outstanding and leaked count only allocations made while attached.\n"
	"See memtrace-attach(1).\n";

int cmd_attach(int argc, char **argv)
{
	pid_t pids[256];
	size_t npids = 0;
	double duration = 0, interval = 5;
	uint64_t top = 10;
	const char *output = NULL, *val;
	struct mt_bpf_opts maps = {0};
	for (int i = 1, r; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return MT_EXIT_OK;
		} else if (mt_arg(argc, argv, &i, "-p", "--pid", &val)) {
			if (npids == sizeof pids / sizeof *pids)
				return mt_usage_error("attach", "at most %zu processes", npids);
			if (mt_arg_pid("attach", val, &pids[npids++]))
				return MT_EXIT_USAGE;
		} else if (mt_arg(argc, argv, &i, NULL, "--duration", &val)) {
			if (mt_parse_seconds(val, &duration))
				return mt_usage_error("attach", "--duration needs seconds");
		} else if (mt_arg(argc, argv, &i, NULL, "--interval", &val)) {
			if (mt_parse_seconds(val, &interval))
				return mt_usage_error("attach", "--interval needs seconds");
		} else if (mt_arg(argc, argv, &i, "-n", "--top", &val)) {
			if (mt_arg_count("attach", "-n", val, 1000000, &top))
				return MT_EXIT_USAGE;
		} else if (mt_arg(argc, argv, &i, "-o", "--output", &val)) {
			if (!val || !*val)
				return mt_usage_error("attach", "-o needs a file name");
			output = val;
		} else if ((r = mt_arg_bpf_maps("attach", argc, argv, &i, &maps)) != 0) {
			if (r < 0)
				return MT_EXIT_USAGE;
		} else {
			return mt_usage_error("attach", "unknown option '%s'", a);
		}
	}
	if (!npids)
		return mt_usage_error("attach", "no process given (-p PID)");
	if (mt_pids_running(pids, npids) < 0)
		return MT_EXIT_RUNTIME;

	char err[512];
	struct mt_session ss;
	if (mt_session_open(&ss, &maps, output, err, sizeof err) < 0) {
		mt_error("cannot attach: %s", err);
		return MT_EXIT_RUNTIME;
	}
	for (size_t i = 0; i < npids; i++)
		if (mt_bpf_trace_pid(ss.b, pids[i], err, sizeof err) < 0) {
			mt_error("%s", err);
			mt_session_close(&ss);
			if (output)
				unlink(output);
			return MT_EXIT_RUNTIME;
		}
	mt_catch_stop_signals();
	mt_note("attached to %zu process%s; Ctrl-C to stop and print the leaks", npids, npids == 1 ? "" : "es");

	struct mt_watch *live = mt_watch_new(ss.b);
	struct mt_top *tp = mt_top_new();
	uint64_t t0 = mt_now_ns(), next_table = t0 + (uint64_t)(interval * 1e9), next_scan = t0 + 1000000000ull;
	while (!mt_stop) {
		mt_session_poll(&ss, 10);
		uint64_t now = mt_now_ns();
		if (duration > 0 && now - t0 >= (uint64_t)(duration * 1e9))
			break;
		if (now >= next_scan) {
			next_scan = now + 1000000000ull;
			mt_session_rescan(&ss);
			mt_watch_refresh(live);
			size_t left = 0;
			for (size_t i = 0; i < npids; i++)
				left += mt_pid_alive(pids[i]);
			if (!left) {
				mt_note("every traced process has exited");
				break;
			}
		}
		if (interval > 0 && now >= next_table) {
			next_table = now + (uint64_t)(interval * 1e9);
			struct mt_recording snap;
			mt_watch_snapshot(live, 0, &snap);
			mt_top_print(tp, stdout, &snap, (double)(now - t0) / 1e9, (long)top, 0);
			mt_recording_free(&snap);
		}
	}
	/* the last events, then the leak report from the maps */
	mt_session_poll(&ss, 0);
	mt_watch_refresh(live);
	struct mt_recording snap;
	mt_watch_snapshot(live, 0, &snap);
	uint64_t end = mt_now_ns() - t0;
	for (size_t i = 0; i < snap.nprocs; i++)
		snap.procs[i]->end_ts = end;
	struct mt_report_opts ro = {MT_VIEW_LEAKS, 0, 0.5, (long)top, -1};
	printf("\n");
	if (snap.nprocs)
		mt_report_text(stdout, &snap, &ro);
	else
		printf("no allocation made while attached is still outstanding\n");
	mt_recording_free(&snap);
	mt_top_free(tp);
	mt_watch_free(live);
	return mt_session_close(&ss);
}
