/*
 * cmd_top.c - `memtrace top`: periodic top-N call-site snapshots of running
 * processes (or of every process, --all), aggregated in BPF maps: outstanding
 * bytes and blocks and the allocation rate per call site.  On a terminal, a
 * screen redrawn in place, whose keys sort it or quit; elsewhere a table
 * per interval, one after the other, or one JSON object per line.  At the
 * end, each process asked for with -p is scanned for leaks, as attach's.
 */
#include "commands.h"
#include "options.h"
#include "capture/bpf/procmaps.h"
#include "watch/livescan.h"
#include "watch/session.h"
#include "report/top.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: memtrace top [-p PID...|--all] [options]\n"
	"\n"
	"Prints, every interval, the call sites of running processes with the most\n"
	"bytes outstanding (allocated since tracing began and not freed), with\n"
	"their allocation rate.  On a terminal, a screen redrawn in place: keys\n"
	"o, b and r sort it by outstanding bytes, blocks or rate, q quits.\n"
	"At the end, each process of -p is scanned for leaks (see memtrace -p).\n"
	"Needs root or CAP_BPF and CAP_PERFMON.\n"
	"\n"
	"options:\n";

/* A snapshot every interval, COUNT of them (0: no limit). */
struct top_snapshots {
	struct mt_watch *live;
	struct mt_top *tp;
	uint64_t interval_ns, next_ns, count, shown;
	long top;
	int json;
	int screen;    /* stdout is a terminal: the live screen */
	int keys;      /* stdin is a terminal, read a key at a time */
	int top_given; /* -n: the screen shows no more rows */
	struct termios saved;
	double last_s; /* the time of the last screen's interval */
};

/* The key pressed, if any: 'q' ends, o/b/r sort.  1 when the screen is to
 * be drawn again, -1 to quit. */
static int read_keys(struct top_snapshots *t)
{
	char k[16];
	ssize_t n = t->keys ? read(0, k, sizeof k) : 0;
	int redraw = 0;
	for (ssize_t i = 0; i < n; i++) {
		switch (k[i]) {
		case 'q':
		case 'Q':
			return -1;
		case 'o':
			mt_top_sort_by(t->tp, MT_TOP_OUTSTANDING), redraw = 1;
			break;
		case 'b':
			mt_top_sort_by(t->tp, MT_TOP_BLOCKS), redraw = 1;
			break;
		case 'r':
			mt_top_sort_by(t->tp, MT_TOP_RATE), redraw = 1;
			break;
		default:
			break;
		}
	}
	return redraw;
}

static void draw(struct top_snapshots *t, double time_s, int redraw)
{
	struct winsize ws = { .ws_col = 0 };
	if (ioctl(1, TIOCGWINSZ, &ws) != 0 || !ws.ws_col || !ws.ws_row)
		ws.ws_col = 80, ws.ws_row = 24;
	struct mt_top_screen s = {
		.n = t->top_given ? t->top : 0,
		.width = ws.ws_col,
		.height = ws.ws_row,
		.redraw = redraw,
	};
	mt_watch_refresh(t->live);
	struct mt_recording snap;
	mt_watch_snapshot(t->live, 0, &snap);
	mt_top_draw(t->tp, stdout, &snap, time_s, &s);
	mt_recording_free(&snap);
}

static int print_snapshot(void *ctx, uint64_t elapsed_ns, int rescanned)
{
	struct top_snapshots *t = ctx;
	(void)rescanned;
	if (t->screen) {
		int key = read_keys(t);
		if (key < 0)
			return 1;
		if (key && t->shown) /* a key: the last interval, sorted anew */
			draw(t, t->last_s, 1);
	}
	if (elapsed_ns < t->next_ns)
		return 0;
	t->next_ns += t->interval_ns;
	if (t->screen) {
		t->last_s = (double)elapsed_ns / 1e9;
		draw(t, t->last_s, 0);
	} else {
		mt_watch_refresh(t->live);
		struct mt_recording snap;
		mt_watch_snapshot(t->live, 0, &snap);
		mt_top_print(t->tp, stdout, &snap, (double)elapsed_ns / 1e9, t->top, t->json);
		mt_recording_free(&snap);
	}
	t->shown++;
	return t->count && t->shown >= t->count;
}

/* The screen: the terminal's other buffer (what was on it comes back at
 * the end, as with top(1)), no cursor, keys read as they are typed (Ctrl-C
 * still a signal). */
static void screen_begin(struct top_snapshots *t)
{
	if (isatty(0) && tcgetattr(0, &t->saved) == 0) {
		struct termios raw = t->saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		t->keys = tcsetattr(0, TCSANOW, &raw) == 0;
	}
	fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
	fflush(stdout);
}

static void screen_end(struct top_snapshots *t)
{
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (t->keys)
		tcsetattr(0, TCSANOW, &t->saved);
}

static int opt_sort(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	static const char *const names[] = { "outstanding", "blocks", "rate" };
	(void)arg;
	for (size_t i = 0; val && i < sizeof names / sizeof *names; i++)
		if (!strcmp(val, names[i])) {
			*(int *)o->target = (int)i;
			return 0;
		}
	return mt_usage_error(cmd, "--sort needs one of outstanding, blocks, rate");
}

int cmd_top(int argc, char **argv)
{
	struct mt_pids pids = { .n = 0 };
	int all = 0, json = 0, sort = MT_TOP_OUTSTANDING, no_scan = 0;
	double interval = 1;
	uint64_t count = 0, top = 0; /* 0: not given */
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
		MT_OPT_TOP(&top, 1000000,
			   "call sites per snapshot (default 10; on a terminal,\nas many as fit)"),
		MT_OPT_JSON(&json, "one JSON object per snapshot and line"),
		{ .longopt = "--sort",
		  .argh = "KEY",
		  .help = "sort by outstanding (bytes, the default),\nblocks or rate",
		  .type = MT_OPT_CALLBACK,
		  .target = &sort,
		  .cb = opt_sort },
		{ .longopt = "--no-scan",
		  .help = "no leak scan of the processes of -p at the end\n"
			  "(by default each is held still for a moment and\n"
			  "its memory scanned, as memtrace -p does)",
		  .type = MT_OPT_FLAG,
		  .target = &no_scan },
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
		.top = top ? (long)top : 10,
		.json = json,
		.screen = !json && isatty(1),
		.top_given = top != 0,
	};
	mt_top_sort_by(t.tp, (enum mt_top_sort)sort);
	if (t.screen)
		screen_begin(&t);
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
	if (t.screen)
		screen_end(&t);
	/* (not with --all: every process of the machine held in turn is
	 * sweep's to do) */
	if (!no_scan && pids.n) {
		struct mt_live_scan *scans = xcalloc(pids.n, sizeof *scans);
		mt_live_scan_all(ss.b, pids.v, pids.n, scans);
		for (size_t i = 0; i < pids.n; i++)
			mt_live_scan_free(&scans[i]);
		free(scans);
	}
	mt_top_free(t.tp);
	mt_watch_free(t.live);
	return mt_session_close(&ss);
}
