/*
 * cmd_top.c - `memtrace top`: periodic top-N call-site snapshots of running
 * processes (or of every process, --all), aggregated in BPF maps: outstanding
 * bytes and blocks and the allocation rate per call site.  On a terminal, a
 * screen redrawn in place, whose keys sort it or quit; elsewhere a table
 * per interval, one after the other, or one JSON object per line.  At the
 * end, each process asked for with -p is scanned for leaks, as attach's.
 * With --pprof-every, also a continuous profile: every S seconds one pprof
 * per process (Go's heap profile: what each site allocated in the interval,
 * what is live at its end), written to --output-dir and pushed to a profile
 * store (--push, watch/push.h).
 */
#include "commands.h"
#include "options.h"
#include "capture/bpf/procmaps.h"
#include "watch/livescan.h"
#include "watch/deltas.h"
#include "watch/push.h"
#include "watch/session.h"
#include "report/top.h"
#include "export/otlp.h"
#include "export/pprof.h"
#include "base/clock.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
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
	"With --pprof-every S, every S seconds one pprof file per process (Go's\n"
	"heap profile: alloc_* what each call site allocated in the interval,\n"
	"inuse_* what is live at its end), into --output-dir, pushed to a profile\n"
	"store with --push (a thread of its own, a bounded queue: a store that is\n"
	"slow or down never slows the tracing; what is dropped is counted).\n"
	"\n"
	"options:\n";

/* The continuous profile (--pprof-every). */
struct profiles {
	uint64_t every_ns, next_ns;
	uint64_t last_unix_ns; /* the end of the last interval (Unix time) */
	int dirfd;	       /* --output-dir, or -1 */
	struct mt_deltas *deltas;
	struct mt_push *push;
	int otlp;	 /* push OTLP requests, not the pprof files */
	const char *app; /* --push-name */
	uint64_t written, failed;
};

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
	double last_s;	     /* the time of the last screen's interval */
	struct profiles *pf; /* NULL without --pprof-every */
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

/* DIR/memtrace-PID-YYYYmmddTHHMMSS.mmmZ.pb.gz, the time that of its
 * interval's end; created anew, never through a link. */
static void write_profile(struct profiles *pf, uint32_t pid, uint64_t unix_ns, const char *buf,
			  size_t len)
{
	time_t sec = (time_t)(unix_ns / 1000000000u);
	struct tm tm;
	char stamp[32], name[96];
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", gmtime_r(&sec, &tm));
	snprintf(name, sizeof name, "memtrace-%u-%s.%03uZ.pb.gz", pid, stamp,
		 (unsigned)(unix_ns / 1000000u % 1000u));
	int fd =
		openat(pf->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	ssize_t w = fd >= 0 ? write(fd, buf, len) : -1;
	if (fd < 0 || w != (ssize_t)len || close(fd) != 0) {
		if (!pf->failed++)
			mt_warning("cannot write profile %s: %s", name,
				   strerror(errno ? errno : EIO));
		return;
	}
	pf->written++;
}

/* P's sites as a gzipped pprof (malloc'd, *LEN bytes), or NULL after
 * saying why not. */
static char *pprof_of(struct mt_process *p, const struct mt_pprof_head *h, size_t *len)
{
	char *buf = NULL, err[200];
	FILE *f = open_memstream(&buf, len);
	if (!f)
		mt_oom(1 << 16);
	int r = mt_pprof_write(f, &p, 1, h, err, sizeof err);
	if (fclose(f) != 0 || !buf)
		mt_oom(*len);
	if (r < 0) {
		mt_warning("profile of pid %u: %s", p->pid, err);
		free(buf);
		return NULL;
	}
	return buf;
}

/* One profile per process with sites: what they allocated since the last
 * one, and what is live now. */
static void take_profiles(struct top_snapshots *t)
{
	struct profiles *pf = t->pf;
	uint64_t now = mt_clock_ns(CLOCK_REALTIME);
	mt_watch_refresh(t->live);
	struct mt_recording snap;
	mt_watch_snapshot(t->live, 0, &snap);
	mt_deltas_take(pf->deltas, &snap);
	/* Period 1: every allocation is counted, as Go's heap profiles say of
	 * themselves when MemProfileRate is 1; sampled (--sample), the mean,
	 * the values estimates already (as Go's are). */
	uint64_t mean = snap.nprocs ? snap.procs[0]->figures.sample_mean : 0;
	struct mt_pprof_head h = {
		.time_ns = pf->last_unix_ns,
		.duration_ns = now > pf->last_unix_ns ? now - pf->last_unix_ns : 0,
		.period = mean ? mean : 1,
		.comment = mean ? "memtrace top: alloc_* = allocated in this interval, "
				  "inuse_* = live at its end; sampled, one allocation per period "
				  "bytes on average, every value an estimate" :
				  "memtrace top: alloc_* = allocated in this interval, "
				  "inuse_* = live at its end; every allocation counted, unsampled",
	};
	for (size_t i = 0; i < snap.nprocs; i++) {
		struct mt_process *p = snap.procs[i];
		if (!p->figures.t.allocations && !p->figures.t.live_count)
			continue;
		size_t len = 0;
		/* the pprof for the file and for the stores that take pprof */
		char *buf = NULL;
		if (pf->dirfd >= 0 || (pf->push && !pf->otlp))
			buf = pprof_of(p, &h, &len);
		if (buf && pf->dirfd >= 0)
			write_profile(pf, p->pid, now, buf, len);
		if (pf->push && pf->otlp) {
			free(buf);
			buf = (char *)mt_otlp_profiles(p, &h, pf->app, &len);
		}
		if (!pf->push || !buf) {
			free(buf);
			continue;
		}
		struct mt_push_profile pp = {
			.body = (uint8_t *)buf,
			.len = len,
			.from_ns = h.time_ns,
			.until_ns = now,
			.pid = p->pid,
		};
		snprintf(pp.name, sizeof pp.name, "%s", mt_process_name(p));
		mt_push_submit(pf->push, &pp);
	}
	mt_recording_free(&snap);
	pf->last_unix_ns = now;
}

static int print_snapshot(void *ctx, uint64_t elapsed_ns, int rescanned)
{
	struct top_snapshots *t = ctx;
	(void)rescanned;
	if (t->pf && elapsed_ns >= t->pf->next_ns) {
		t->pf->next_ns += t->pf->every_ns;
		if (t->pf->next_ns <= elapsed_ns) /* fell behind: no burst */
			t->pf->next_ns = elapsed_ns + t->pf->every_ns;
		take_profiles(t);
	}
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

static int opt_push_format(const char *cmd, const struct mt_option *o, const char *arg,
			   const char *val)
{
	static const char *const names[] = { "pyroscope", "parca", "otlp" };
	(void)arg;
	for (size_t i = 0; val && i < sizeof names / sizeof *names; i++)
		if (!strcmp(val, names[i])) {
			*(enum mt_push_format *)o->target = (enum mt_push_format)i;
			return 0;
		}
	return mt_usage_error(cmd, "--push-format needs one of pyroscope, parca, otlp");
}

/* --push-header: "Name: value", up to MAX_HEADERS of them. */
#define MAX_HEADERS 32
struct headers {
	const char *v[MAX_HEADERS];
	size_t n;
};

static int opt_push_header(const char *cmd, const struct mt_option *o, const char *arg,
			   const char *val)
{
	struct headers *h = o->target;
	(void)arg;
	const char *colon = val ? strchr(val, ':') : NULL;
	if (!colon || colon == val || strpbrk(val, "\r\n") ||
	    memchr(val, ' ', (size_t)(colon - val)) || memchr(val, '\t', (size_t)(colon - val)))
		return mt_usage_error(cmd, "--push-header needs 'Name: value'");
	if (h->n == MAX_HEADERS)
		return mt_usage_error(cmd, "at most %d --push-header options", MAX_HEADERS);
	h->v[h->n++] = val;
	return 0;
}

static int opt_push_retries(const char *cmd, const struct mt_option *o, const char *arg,
			    const char *val)
{
	uint64_t n;
	(void)arg;
	if (!val || mt_parse_u64(val, &n) < 0 || n > 10)
		return mt_usage_error(cmd, "--push-retries needs a number from 0 to 10");
	*(int *)o->target = (int)n + 1; /* attempts, the first included */
	return 0;
}

/* Starts what --pprof-every asks for; -1 after saying why not. */
static int profiles_start(struct profiles *pf, double every, const char *dir,
			  const struct mt_push_opts *po)
{
	pf->every_ns = pf->next_ns = (uint64_t)(every * 1e9);
	pf->last_unix_ns = mt_clock_ns(CLOCK_REALTIME);
	pf->dirfd = -1;
	if (dir) {
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			mt_error("cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
		pf->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pf->dirfd < 0) {
			mt_error("cannot open %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	if (po->url) {
		char err[300];
		pf->push = mt_push_start(po, err, sizeof err);
		if (!pf->push) {
			mt_error("%s", err);
			if (pf->dirfd >= 0)
				close(pf->dirfd);
			return -1;
		}
	}
	pf->otlp = po->format == MT_PUSH_OTLP;
	pf->app = po->app;
	pf->deltas = mt_deltas_new();
	/* said once tracing runs: what is allocated from now on is profiled */
	mt_note("a profile every %g s%s%s%s%s", every, dir ? " into " : "", dir ? dir : "",
		po->url ? ", pushed to " : "", po->url ? po->url : "");
	return 0;
}

/* The last interval's profiles, the queue given DRAIN_S to empty, and
 * what became of the profiles said. */
static void profiles_end(struct top_snapshots *t, double drain_s, const char *url)
{
	struct profiles *pf = t->pf;
	take_profiles(t);
	if (pf->dirfd >= 0) {
		mt_note("%llu profile(s) written%s", (unsigned long long)pf->written,
			pf->failed ? " (some could not be)" : "");
		close(pf->dirfd);
	}
	if (pf->push) {
		struct mt_push_counts c;
		mt_push_stop(pf->push, drain_s, &c);
		mt_note("push to %s: %llu profile(s) made, %llu sent, %llu dropped (queue full), "
			"%llu failed, %llu unsent at exit",
			url, (unsigned long long)c.made, (unsigned long long)c.sent,
			(unsigned long long)c.dropped, (unsigned long long)c.failed,
			(unsigned long long)c.unsent);
	}
	mt_deltas_free(pf->deltas);
}

int cmd_top(int argc, char **argv)
{
	struct mt_pids pids = { .n = 0 };
	int all = 0, json = 0, sort = MT_TOP_OUTSTANDING, no_scan = 0;
	double interval = 1;
	uint64_t count = 0, top = 0; /* 0: not given */
	struct mt_bpf_opts maps = { .events = 0 };
	double pprof_every = 0;
	const char *output_dir = NULL;
	struct headers headers = { .n = 0 };
	uint64_t queue = 16;
	struct mt_push_opts po = {
		.format = MT_PUSH_PYROSCOPE,
		.token = getenv("MEMTRACE_PUSH_TOKEN"),
		.attempts = 4,
		.backoff_s = 1,
		.timeout_s = 10,
	};
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
		{ .longopt = "--pprof-every",
		  .argh = "S",
		  .help = "every S seconds, one pprof per process (with\n"
			  "--output-dir, --push or both)",
		  .type = MT_OPT_SECONDS,
		  .target = &pprof_every,
		  .flags = MT_OPTF_POSITIVE,
		  .err = "--pprof-every needs a positive duration: " MT_DURATION_FORMS },
		{ .longopt = "--output-dir",
		  .argh = "DIR",
		  .help = "where the profiles go, as\n"
			  "memtrace-PID-YYYYmmddTHHMMSS.mmmZ.pb.gz\n"
			  "(created if missing)",
		  .type = MT_OPT_STRING,
		  .target = &output_dir,
		  .flags = MT_OPTF_NONEMPTY,
		  .err = "--output-dir needs a directory" },
		{ .longopt = "--push",
		  .argh = "URL",
		  .help = "send each profile to the profile store at URL\n"
			  "(http:// or https://, its base: the protocol's\n"
			  "path is added)",
		  .type = MT_OPT_STRING,
		  .target = &po.url,
		  .flags = MT_OPTF_NONEMPTY,
		  .err = "--push needs the store's URL" },
		{ .longopt = "--push-format",
		  .argh = "F",
		  .help = "pyroscope (POST /ingest, the default), parca\n"
			  "(POST /profiles/writeraw) or otlp (POST\n"
			  "/v1development/profiles: experimental, as the\n"
			  "format upstream)",
		  .type = MT_OPT_CALLBACK,
		  .target = &po.format,
		  .cb = opt_push_format },
		{ .longopt = "--push-header",
		  .argh = "HDR",
		  .help = "an HTTP header 'Name: value' sent with every\n"
			  "profile (repeatable; e.g. 'X-Scope-OrgID: t1')",
		  .type = MT_OPT_CALLBACK,
		  .target = &headers,
		  .cb = opt_push_header },
		{ .longopt = "--push-token",
		  .argh = "TOKEN",
		  .help = "sent as 'Authorization: Bearer TOKEN' (default:\n"
			  "$MEMTRACE_PUSH_TOKEN, which ps does not show)",
		  .type = MT_OPT_STRING,
		  .target = &po.token,
		  .flags = MT_OPTF_NONEMPTY,
		  .err = "--push-token needs a token" },
		{ .longopt = "--push-name",
		  .argh = "APP",
		  .help = "the application's name in the store (default:\n"
			  "each process's own)",
		  .type = MT_OPT_STRING,
		  .target = &po.app,
		  .flags = MT_OPTF_NONEMPTY,
		  .err = "--push-name needs a name" },
		{ .longopt = "--push-queue",
		  .argh = "N",
		  .help = "profiles waiting to be sent at most (default 16;\n"
			  "more are dropped, and counted)",
		  .type = MT_OPT_COUNT,
		  .target = &queue,
		  .max = 100000 },
		{ .longopt = "--push-retries",
		  .argh = "N",
		  .help = "attempts after a failed one (default 3), waiting\n"
			  "1 s, then 2, 4...",
		  .type = MT_OPT_CALLBACK,
		  .target = &po.attempts,
		  .cb = opt_push_retries },
		{ .longopt = "--push-timeout",
		  .argh = "S",
		  .help = "the longest a request may take (default 10), and\n"
			  "the queue's time to empty at exit",
		  .type = MT_OPT_SECONDS,
		  .target = &po.timeout_s,
		  .flags = MT_OPTF_POSITIVE,
		  .err = "--push-timeout needs a positive duration: " MT_DURATION_FORMS },
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
	if (pprof_every && !output_dir && !po.url)
		return mt_usage_error("top", "--pprof-every needs --output-dir or --push");
	if ((output_dir || po.url) && !pprof_every)
		return mt_usage_error("top", "%s needs --pprof-every",
				      output_dir ? "--output-dir" : "--push");
	if (po.token && strpbrk(po.token, "\r\n"))
		return mt_usage_error("top", "--push-token cannot hold a line break");
	po.headers = headers.v;
	po.nheaders = headers.n;
	po.queue = (size_t)queue;
	if (mt_pids_running(pids.v, pids.n) < 0)
		return MT_EXIT_RUNTIME;

	/* Caught before tracing begins: a stop signal while the processes are
	 * scanned ends the session as soon as they are, detached and
	 * reported as at any other time. */
	mt_catch_stop_signals();
	struct mt_session ss;
	if (mt_session_start(&ss, &maps, NULL, 0, all, pids.v, pids.n, "trace") < 0)
		return MT_EXIT_RUNTIME;
	struct profiles pf = { .dirfd = -1 };
	if (pprof_every && profiles_start(&pf, pprof_every, output_dir, &po) < 0) {
		mt_session_close(&ss);
		return MT_EXIT_RUNTIME;
	}
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
		.pf = pprof_every ? &pf : NULL,
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
	if (t.pf)
		profiles_end(&t, po.timeout_s, po.url);
	mt_top_free(t.tp);
	mt_watch_free(t.live);
	return mt_session_close(&ss);
}
