/*
 * cmd_record.c - `memtrace record`: run a command and write its recording.
 *
 * This file reads the options, chooses the backend, starts the command and
 * prints the summary.  With the shim (the default for dynamically linked
 * programs), the command runs with it preloaded and MEMTRACE_CONNECT naming
 * a socket of ours, and collect/rings.c records what every traced process
 * hands over; with BPF (static or set-user-ID programs, or --backend=bpf),
 * collect/bpf_record.c does.  At the end the recording is read back for a
 * few lines of figures.
 *
 * Exit status: the command's own (128+N if it died of signal N), 125 if
 * memtrace failed, 126/127 if the command could not be run, as a shell does.
 */
#include "commands.h"
#include "config.h"
#include "options.h"
#include "target.h"
#include "analyse/recording.h"
#include "analyse/managed.h"
#include "analyse/suppress.h"
#include "collect/bpf_record.h"
#include "collect/fallback.h"
#include "collect/tracee.h"
#include "stream/listen.h"
#include "collect/rings.h"
#include "collect/writer.h"
#include "format/format.h"
#include "report/report.h"
#include "base/json.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_FAILED 125

static const char usage_text[] =
	"usage: memtrace record [options] [--] COMMAND [ARGS...]\n"
	"\n"
	"Runs COMMAND and records every allocation and free it makes, with stacks.\n"
	"\n"
	"options:\n";

static const char epilogue[] =
	"\n"
	"The exit status is COMMAND's (128+N if it died of signal N); 125 if memtrace\n"
	"failed; 126 or 127 if COMMAND could not be run.  See memtrace-record(1).\n";

struct record_opts {
	const char *output, *backend;
	int follow, quiet, verbose, cull, embed, broadcast, no_mmap;
	int no_scan;		    /* --no-scan: no leak scan at the command's exit */
	const char *listen, *token; /* --listen, --token: streaming to `gather` */
	uint64_t cull_ms;
	double rss_ms; /* --rss-interval; < 0: the default */
	/* the leak gate: --fail-on-leak[=BYTES], --leak-exit-code, --suppressions */
	int gate;
	uint64_t gate_bytes, leak_exit;
	const char *supp;
	uint32_t max_stacks; /* --max-stacks: the BPF backend's stack map */
	uint64_t sample;     /* --sample: mean bytes between samples (0: every call) */
};

/* -o: record's error names the option as it was spelled. */
static int opt_output(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	if (!val)
		return mt_usage_error(cmd, "option '%s' needs a file name", arg);
	*(const char **)o->target = val;
	return 0;
}

static int opt_backend(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	(void)arg;
	if (!val || (strcmp(val, "auto") && strcmp(val, "preload") && strcmp(val, "bpf")))
		return mt_usage_error(cmd, "--backend must be auto, preload or bpf");
	*(const char **)o->target = val;
	return 0;
}

static int opt_cull(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct record_opts *ro = o->target;
	(void)arg;
	ro->cull = 1;
	if (val && mt_parse_u64(val, &ro->cull_ms))
		return mt_usage_error(cmd, "--cull-temporary takes milliseconds, not '%s'", val);
	return 0;
}

static int opt_gate(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct record_opts *ro = o->target;
	(void)arg;
	ro->gate = 1;
	if (val && mt_parse_u64(val, &ro->gate_bytes))
		return mt_usage_error(cmd, "--fail-on-leak takes a number of bytes, not '%s'", val);
	return 0;
}

static int opt_rss(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct record_opts *ro = o->target;
	(void)arg;
	if (!val || mt_parse_double(val, &ro->rss_ms) || ro->rss_ms < 0 || ro->rss_ms > 3600000)
		return mt_usage_error(cmd,
				      "--rss-interval takes milliseconds (0 to 3600000), not '%s'",
				      val ? val : "");
	return 0;
}

/* record's options, writing into RO: the table is longer than any other
 * command's, so it is made here and parse_args reads it (an array in a
 * struct, to be returned whole; room to spare). */
struct record_table {
	struct mt_option opt[24];
};

static struct record_table record_options(struct record_opts *ro)
{
	const struct record_table t = { {
		{ .shortopt = "-o",
		  .longopt = "--output",
		  .argh = "FILE",
		  .help = "write the recording to FILE\n"
			  "(default: memtrace.COMMAND.PID.mtrace)",
		  .type = MT_OPT_CALLBACK,
		  .target = &ro->output,
		  .cb = opt_output,
		  .flags = MT_OPTF_NO_GLUE /* record never took "-oFILE" */ },
		{ .longopt = "--backend",
		  .argh = "=auto|preload|bpf",
		  .help = "how events are captured (default: auto, the shim\n"
			  "for dynamically linked programs)",
		  .type = MT_OPT_CALLBACK,
		  .target = &ro->backend,
		  .cb = opt_backend },
		{ .shortopt = "-f",
		  .longopt = "--follow-forks",
		  .help = "trace child processes too, each as its own process",
		  .type = MT_OPT_FLAG,
		  .target = &ro->follow },
		{ .longopt = "--no-scan",
		  .help = "no leak scan at the command's exit (by default its\n"
			  "memory is scanned, as valgrind does, for what still\n"
			  "points at each leaked block)",
		  .type = MT_OPT_FLAG,
		  .target = &ro->no_scan },
		{ .longopt = "--cull-temporary",
		  .argh = "[=MS]",
		  .help = "leave out of the event stream allocations freed\n"
			  "within MS milliseconds (default 10000), keeping\n"
			  "them in exact per-site totals",
		  .type = MT_OPT_CALLBACK,
		  .target = ro,
		  .flags = MT_OPTF_EQ_ONLY,
		  .cb = opt_cull },
		MT_OPT_SAMPLE(&ro->sample),
		{ .longopt = "--fail-on-leak",
		  .argh = "[=BYTES]",
		  .help = "when COMMAND exits with 0 but leaked more than BYTES\n"
			  "(default 0), print the leaks and exit with the\n"
			  "--leak-exit-code (a CI job's leak gate)",
		  .type = MT_OPT_CALLBACK,
		  .target = ro,
		  .flags = MT_OPTF_EQ_ONLY,
		  .cb = opt_gate },
		{ .longopt = "--leak-exit-code",
		  .argh = "N",
		  .help = "the gate's exit status (default 23, as LeakSanitizer)",
		  .type = MT_OPT_COUNT,
		  .target = &ro->leak_exit,
		  .max = 255,
		  .err = "--leak-exit-code needs a status from 1 to 255" },
		MT_OPT_SUPPRESSIONS(&ro->supp),
		{ .longopt = "--embed-binaries",
		  .help = "put the binaries the processes mapped (and their\n"
			  "debug files) into the recording, so that it can be\n"
			  "reported on a machine that does not have them",
		  .type = MT_OPT_FLAG,
		  .target = &ro->embed },
		{ .longopt = "--rss-interval",
		  .argh = "MS",
		  .help = "sample each process's resident memory every MS\n"
			  "milliseconds (default 10; 0: never)",
		  .type = MT_OPT_CALLBACK,
		  .target = ro,
		  .cb = opt_rss },
		{ .longopt = "--no-mmap",
		  .help = "do not record the calls that map memory (mmap,\n"
			  "munmap, mremap, brk, sbrk), which are recorded by\n"
			  "default (MEMTRACE_GATHER_MMAP_CALLS=0 says the same)",
		  .type = MT_OPT_FLAG,
		  .target = &ro->no_mmap },
		{ .longopt = "--listen",
		  .argh = "ADDR",
		  .help = "stream the recording to `memtrace gather` as it is\n"
			  "made: HOST:PORT, PORT (loopback) or HOST (port 8100)",
		  .type = MT_OPT_STRING,
		  .target = &ro->listen,
		  .flags = MT_OPTF_NONEMPTY,
		  .err = "--listen needs an address" },
		{ .longopt = "--token",
		  .argh = "TOKEN",
		  .help = "the token a gatherer must give (default: made up\n"
			  "and printed when listening off loopback)",
		  .type = MT_OPT_STRING,
		  .target = &ro->token,
		  .flags = MT_OPTF_NONEMPTY,
		  .err = "--token needs a value" },
		{ .longopt = "--broadcast",
		  .help = "announce the --listen address on the LAN, for\n"
			  "`memtrace gather` with no address",
		  .type = MT_OPT_FLAG,
		  .target = &ro->broadcast },
		{ .longopt = "--max-stacks",
		  .argh = "N",
		  .type = MT_OPT_COUNT32,
		  .target = &ro->max_stacks,
		  .max = 1u << 24,
		  .help = "with the BPF backend: entries of the kernel's map of\n"
			  "stacks (default 65536), emptied into memtrace's\n"
			  "own table whenever half full" },
		{ .shortopt = "-q",
		  .longopt = "--quiet",
		  .help = "print nothing but errors",
		  .type = MT_OPT_FLAG,
		  .target = &ro->quiet },
		{ .shortopt = "-v",
		  .longopt = "--verbose",
		  .help = "say which backend records and why",
		  .type = MT_OPT_FLAG,
		  .target = &ro->verbose },
		{ .type = MT_OPT_END },
	} };
	return t;
}

/* The options that go only with others, and --listen's address: a usage
 * error's status, or 0. */
static int check_args(const struct record_opts *ro)
{
	if ((ro->token || ro->broadcast) && !ro->listen)
		return mt_usage_error("record", "--token and --broadcast go with --listen");
	char why[256];
	const struct mt_listen_opts lo = { .addr = ro->listen,
					   .token = ro->token,
					   .broadcast = ro->broadcast };
	if (ro->listen && mt_listen_check(&lo, why, sizeof why) < 0)
		return mt_usage_error("record", "%s", why);
	if ((ro->supp || ro->leak_exit) && !ro->gate)
		return mt_usage_error("record", "--suppressions and --leak-exit-code go with "
						"--fail-on-leak");
	return 0;
}

/* Returns the index of COMMAND in ARGV, or minus the status to exit with
 * (0 after --help). */
static int parse_args(struct record_opts *ro, int argc, char **argv)
{
	const struct record_table t = record_options(ro);
	/* COMMAND and its arguments are not ours: the first operand ends ours */
	const struct mt_cmdline cl = { .cmd = "record",
				       .opts = t.opt,
				       .usage = usage_text,
				       .col = 27,
				       .epilogue = epilogue,
				       .operands = MT_OPERANDS_STOP,
				       .dashdash = 1 };
	int next, st = mt_options_parse(&cl, argc, argv, &next);
	if (st != MT_OPTS_GO_ON)
		return -st;
	if (next >= argc)
		return -mt_usage_error("record", "no command to run");
	st = check_args(ro);
	return st ? -st : next;
}

/* The shim where the loader will preload it; BPF where it cannot (auto) or
 * when asked.  Opens *B for BPF, finds SHIM for the shim.  Returns 0, or -1
 * after the error message. */
static int choose_backend(const struct record_opts *ro, const char *exe, struct mt_bpf **b,
			  char *shim, size_t shimlen, int *bpf_ok)
{
	char why[PATH_MAX + 128], err[PATH_MAX + 128], bpf_why[256];
	int use_bpf = !strcmp(ro->backend, "bpf");
	*b = NULL;
	/* whether BPF works here, checked (built in, privileges, BTF, uprobes,
	 * the system call), never assumed from the architecture */
	*bpf_ok = mt_bpf_available(bpf_why, sizeof bpf_why);
	if (!use_bpf && mt_preload_blocked(exe, why, sizeof why)) {
		if (!strcmp(ro->backend, "preload")) {
			mt_error("--backend=preload cannot trace it: %s", why);
			return -1;
		}
		use_bpf = 1; /* auto: BPF where the shim cannot work */
		if (ro->verbose)
			mt_note("backend: bpf, as the shim cannot trace %s (%s); BPF: %s", exe, why,
				bpf_why);
	} else if (ro->verbose) {
		if (!strcmp(ro->backend, "auto"))
			mt_note("backend: the shim, preloaded into %s; BPF %s: %s", exe,
				*bpf_ok ?
					"follows the execs the shim cannot" :
					"is unavailable, so execs the shim cannot follow stay untraced",
				bpf_why);
		else
			mt_note("backend: %s, as asked (--backend=%s); BPF: %s",
				use_bpf ? "bpf" : "the shim", ro->backend, bpf_why);
	}
	if (use_bpf) {
		struct mt_bpf_opts bo = { .events = 1,
					  .mmaps = mt_gather_mmaps(),
					  .lean = 1,
					  .max_stacks = ro->max_stacks,
					  .sample_mean = ro->sample };
		if (ro->follow) {
			mt_error("--follow-forks is not available with the BPF backend yet");
			return -1;
		}
		if (mt_bpf_open(b, &bo, err, sizeof err) < 0) {
			if (!strcmp(ro->backend, "bpf")) {
				mt_error("--backend=bpf: %s", err);
				return -1;
			}
			mt_warning(
				"%s; the BPF backend that would trace it is unavailable (%s): using the "
				"shim, which cannot see it",
				why, err);
			*b = NULL;
			use_bpf = 0;
		}
	}
	char why_shim[PATH_MAX + 128];
	if (!use_bpf && mt_find_shim(shim, shimlen, why_shim, sizeof why_shim)) {
		mt_error("%s", why_shim);
		return -1;
	}
	return 0;
}

/* How the command is started: with SHIM (NULL for BPF) preloaded and
 * connecting to SOCKNAME. */
struct launch {
	char **cmd;
	const char *shim, *sockname;
	int follow;
	int fallback; /* the shim may ask for BPF where it cannot follow an exec */
};

/* In the forked child: waits for the go, then execs the command.  An exec
 * failure's errno goes up ERRFD, the exit status is a shell's. */
static void exec_command(const struct launch *l, int go, int errfd)
{
	char c;
	/* the command starts only once memtrace is ready for it */
	if (read(go, &c, 1) != 1)
		_exit(EXIT_FAILED);
	if (l->shim) {
		const char *old = getenv("LD_PRELOAD");
		char *pre = xmalloc(strlen(l->shim) + (old ? strlen(old) : 0) + 2);
		sprintf(pre, "%s%s%s", l->shim, old && *old ? ":" : "", old && *old ? old : "");
		setenv("LD_PRELOAD", pre, 1);
		/* "+bpf": the recorder can trace an image the shim
		 * cannot follow (env -i, static) with BPF (fallback.h) */
		char *connect = xmalloc(strlen(l->sockname) + 5);
		sprintf(connect, "%s%s", l->sockname, l->fallback ? "+bpf" : "");
		setenv("MEMTRACE_CONNECT", connect, 1);
		free(connect);
		/* the process the shim traces through every exec without -f
		 * (ten digits: a wrapper's child rewrites it in place) */
		char main_pid[16];
		snprintf(main_pid, sizeof main_pid, "%010d", (int)getpid());
		setenv("MEMTRACE_MAIN", main_pid, 1);
		setenv("MEMTRACE_FOLLOW_FORKS", l->follow ? "1" : "0", 1);
		/* bytehound's name for it would override -f's absence */
		unsetenv("MEMTRACE_TRACK_CHILD_PROCESSES");
		unsetenv("MEMORY_PROFILER_TRACK_CHILD_PROCESSES");
		unsetenv("MEMTRACE_OUTPUT");
		unsetenv("MEMTRACE_CULL_TEMPORARY_ALLOCATIONS");
		unsetenv("MEMORY_PROFILER_CULL_TEMPORARY_ALLOCATIONS");
	}
	execvp(l->cmd[0], l->cmd);
	int e = errno;
	if (write(errfd, &e, sizeof e) < 0) {
		/* the parent sees the exit status anyway */
	}
	_exit(e == ENOENT ? 127 : 126);
}

/* Forks the command, held until a byte is written to *GO; *ERRFD then
 * tells an exec failure's errno.  Returns its pid, or -1 after the error
 * message. */
static pid_t start_command(const struct launch *l, int *go, int *errfd)
{
	int gop[2] = { -1, -1 }, errp[2] = { -1, -1 };
	if (pipe2(gop, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		mt_error("pipe: %s", strerror(errno));
		goto fail;
	}
	pid_t pid = fork();
	if (pid < 0) {
		mt_error("fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		close(gop[1]);
		close(errp[0]);
		exec_command(l, gop[0], errp[1]);
	}
	close(gop[0]);
	close(errp[1]);
	*go = gop[1];
	*errfd = errp[0];
	return pid;
fail:
	for (int k = 0; k < 2; k++) {
		if (gop[k] >= 0)
			close(gop[k]);
		if (errp[k] >= 0)
			close(errp[k]);
	}
	return -1;
}

/* Creates the recording under the name record makes up when -o is not
 * given, memtrace.COMMAND.PID.mtrace in the current directory.  Whatever
 * is there already, a file or a link another user planted in a shared
 * directory, is never followed nor overwritten: the next free name of
 * memtrace.COMMAND.PID.N.mtrace is taken instead.  PATH gets the name. */
static struct mt_writer *open_default(char *path, size_t len, const char *exe, pid_t pid,
				      uint64_t cull_ns, char *err, size_t errlen)
{
	char *copy = xstrdup(exe);
	const char *base = basename(copy);
	struct mt_writer *r = NULL;
	/* a name of at most 255 bytes, as file systems take: the command's is
	 * cut to 200 */
	for (unsigned i = 0; i < 100 && !r; i++) {
		if (i)
			snprintf(path, len, "memtrace.%.200s.%d.%u.mtrace", base, (int)pid, i);
		else
			snprintf(path, len, "memtrace.%.200s.%d.mtrace", base, (int)pid);
		r = mt_writer_open_new(path, cull_ns, err, errlen);
		if (!r && errno != EEXIST)
			break;
	}
	free(copy);
	return r;
}

/* A recording that holds nothing is removed, but only if it is a regular
 * file: -o may name a character device (/dev/null), which stays. */
static void remove_output(const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		unlink(path);
}

static pid_t child_pid;
static volatile int stop_waiting; /* Ctrl-C while waiting for a gatherer */

static void on_stop(int sig)
{
	(void)sig;
	stop_waiting = 1;
}

/* The command has ended and its recording is whole: waits for the gatherer
 * to take the rest, until Ctrl-C. */
static void wait_for_gatherer(struct mt_listener *l)
{
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	mt_listen_complete(l);
	if (!mt_listen_wait(l, &stop_waiting))
		mt_warning("the recording was not gathered whole; it is all in the file");
}

static void on_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* Ctrl-C reaches the command through the terminal; we stay to write what
 * it did.  Signals sent to us alone are passed on to it. */
static void pass_signals_to(pid_t pid)
{
	struct sigaction sig = { .sa_handler = on_signal };
	child_pid = pid;
	sigaction(SIGTERM, &sig, NULL);
	sigaction(SIGHUP, &sig, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
}

/* How process P ended, into BUF: an exit status, a signal by name (core
 * dumped: from WSTATUS, ours to know for the command, CMD), an exec. */
static const char *how_ended(const struct mt_process *p, pid_t cmd, int last_of_cmd, int wstatus,
			     char *buf, size_t len)
{
	if (p->exec_outcome == MT_EXEC_TRACED + 1)
		snprintf(buf, len, "replaced by %s (exec)", p->exec_path);
	else if (p->exec_outcome)
		snprintf(buf, len, "replaced by %s (exec, not traced)", p->exec_path);
	else if (!p->exited)
		snprintf(buf, len, "ended (exit status unknown)");
	else if (p->exit_status >= 0)
		snprintf(buf, len, "exited with status %lld", (long long)p->exit_status);
	else {
		uint64_t sig = mt_process_signal(p);
		const char *name = mt_process_signal_name(p);
		int core = p->pid == (uint32_t)cmd && last_of_cmd && WIFSIGNALED(wstatus) &&
			   WCOREDUMP(wstatus);
		if (name)
			snprintf(buf, len, "killed by %s%s", name, core ? " (core dumped)" : "");
		else
			snprintf(buf, len, "killed by signal %llu%s", (unsigned long long)sig,
				 core ? " (core dumped)" : "");
	}
	return buf;
}

/* The leak gate: STATUS (the command's) when it failed or leaked no more
 * than allowed, else the gate's status after the leak trees on stderr. */
static int leak_gate(const struct record_opts *ro, int status)
{
	struct mt_recording rec;
	char err[512];
	if (!ro->gate || status != 0)
		return status; /* a failing program's own status wins */
	if (mt_recording_load(&rec, ro->output, err, sizeof err) < 0) {
		mt_error("%s", err);
		return EXIT_FAILED;
	}
	if (mt_suppress_file(ro->supp, &rec) < 0) {
		mt_recording_free(&rec);
		return EXIT_FAILED;
	}
	int leaked = mt_leak_gate(stderr, &rec, ro->gate_bytes);
	mt_recording_free(&rec);
	return leaked ? (int)ro->leak_exit : status;
}

/* Whether PATH, a regular file, is the file header alone: no process
 * of the command connected, nothing was recorded (a device is not read). */
static int nothing_recorded(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= MT_FILE_HEADER_SIZE;
}

/* The figures of every traced process, how each ended, and where they are
 * incomplete: events lost, an exec that went untraced, a runtime whose heap
 * memtrace cannot see. */
static void print_summary(const char *path, int quiet, pid_t cmd, int wstatus)
{
	struct mt_recording rec;
	char err[512];
	struct stat st;
	/* a device (-o /dev/null) has nothing to read back */
	if (quiet || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	if (mt_recording_load(&rec, path, err, sizeof err) < 0) {
		mt_warning("%s", err);
		return;
	}
	const struct mt_process *main_p = mt_recording_main(&rec);
	for (size_t i = 0; i < rec.nprocs; i++) {
		struct mt_process *p = rec.procs[i];
		const struct mt_totals *t = &p->figures.t;
		char a[32], b[32], c[32], d[32], raw[PATH_MAX + 64], how[PATH_MAX + 64], name[256];
		int last_of_cmd = 1;
		for (size_t k = i + 1; k < rec.nprocs; k++)
			last_of_cmd &= rec.procs[k]->pid != p->pid;
		how_ended(p, cmd, last_of_cmd, wstatus, raw, sizeof raw);
		/* names and paths from the program: escaped for the terminal */
		mt_text_safe(how, sizeof how, raw);
		mt_text_safe(name, sizeof name, mt_process_name(p));
		{
			mt_note("pid %u (%s%s): %s allocations (%s), %s frees, %s temporary",
				p->pid, name, rec.nprocs > 1 && p == main_p ? ", main" : "",
				mt_fmt_count(t->allocations, a),
				mt_fmt_bytes(t->allocated_bytes, b), mt_fmt_count(t->frees, c),
				mt_fmt_count(t->temporary, d));
			/* with a leak scan, "leaked" is what nothing points at */
			uint64_t lc = t->live_count, lb = t->live_bytes, pc = 0, pb = 0, hc = 0,
				 hb = 0;
			char kinds[96] = "";
			if (p->kinds.ran) {
				mt_kind_sum(&p->kinds.total, MT_LEAK_LOST, &lc, &lb);
				mt_kind_sum(&p->kinds.total, MT_LEAK_MASK(MT_LEAK_POSSIBLE), &pc,
					    &pb);
				mt_kind_sum(&p->kinds.total, MT_LEAK_MASK(MT_LEAK_REACHABLE), &hc,
					    &hb);
				char e[32], g[32];
				if (pc)
					snprintf(kinds, sizeof kinds, " (and %s possibly lost)",
						 mt_fmt_bytes(pb, e));
				snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds),
					 ", still held %s", mt_fmt_bytes(hb, g));
			}
			mt_note("pid %u: peak %s at %.3f s; leaked %s in %s allocation%s%s; %s",
				p->pid, mt_fmt_bytes(t->peak_bytes, a),
				t->peak_ts > p->start_ts ?
					(double)(t->peak_ts - p->start_ts) / 1e9 :
					0.0,
				mt_fmt_bytes(lb, b), mt_fmt_count(lc, c), mt_s(lc), kinds, how);
		}
		if (p->exited && p->exit_status < 0)
			mt_warning("pid %u (%s) was %s", p->pid, name, how);
		uint64_t lost = mt_process_lost(p);
		if (lost)
			mt_warning("pid %u (%s): %s events were lost; figures are lower bounds",
				   p->pid, name, mt_fmt_count(lost, a));
		if (p->exec_outcome == MT_EXEC_UNTRACED + 1) {
			mt_text_safe(raw, sizeof raw, p->exec_path ? p->exec_path : "?");
			mt_warning("pid %u (%s) exec'd %s, which was not traced: %s%s", p->pid,
				   name, raw,
				   p->exec_why ? p->exec_why : "the shim cannot load there",
				   geteuid() == 0 ? "; --backend=bpf can trace it" : "");
		}
		if (p->untraced_children)
			mt_warning(
				"pid %u (%s): %s child process%s not traced: use -f "
				"(--follow-forks)%s",
				p->pid, name, mt_fmt_count(p->untraced_children, a),
				p->untraced_children == 1 ? "" : "es",
				p->backend && !strcmp(p->backend, "bpf") ?
					", which the shim's backend follows (--backend=preload)" :
					"");
		const char *rt = mt_managed_runtime(p);
		if (rt)
			mt_warning("pid %u (%s) is a %s program: %s", p->pid, name, rt,
				   mt_managed_hint(rt));
	}
	if (rec.truncated)
		mt_warning("%s is truncated (%s)", path, rec.why);
	char sz[32];
	mt_note("recording written to %s (%s); see: memtrace report %s", path,
		mt_fmt_bytes(rec.file_size, sz), path);
	mt_recording_free(&rec);
}

/* What the options ask before the command starts: a suppressions file
 * that cannot be read is known before the run; --no-mmap is said in the
 * environment.  0, or the status to exit with. */
static int settle_args(struct record_opts *ro)
{
	char err[PATH_MAX + 128];
	struct mt_suppressions *supp_check;
	if (ro->supp) {
		if (!(supp_check = mt_supp_load(ro->supp, err, sizeof err))) {
			mt_error("%s", err);
			return MT_EXIT_USAGE;
		}
		mt_supp_free(supp_check);
	}
	if (!ro->leak_exit)
		ro->leak_exit = 23;
	/* --no-mmap: said in the environment, which the shim, the BPF
	 * backends (and their fallback) and the command's children read */
	if (ro->no_mmap)
		setenv("MEMTRACE_GATHER_MMAP_CALLS", "0", 1);
	/* --sample: the shim's (and its children's) */
	if (ro->sample && ro->cull) {
		mt_error("--sample and --cull-temporary cannot go together: a sampled block's "
			 "lifetime says nothing of the others'");
		return MT_EXIT_USAGE;
	}
	char mean[32];
	snprintf(mean, sizeof mean, "%llu", (unsigned long long)ro->sample);
	setenv("MEMTRACE_SAMPLE", mean, 1);
	return 0;
}

/* One run of record: what it holds until the end, each NULL (or -1) when
 * not or no longer held. */
struct run {
	char **cmd;
	char *exe; /* cmd[0] found in the PATH */
	struct mt_bpf *b;
	struct mt_rings *rings;
	struct mt_fallback *fb;
	struct mt_writer *r;
	struct mt_listener *lst;
	struct launch l;
	int go, errfd; /* start_command's */
	pid_t pid;     /* the command, until reaped */
	char shim[PATH_MAX], sockname[108], defpath[PATH_MAX];
};

/* Chooses the backend and forks the command, held until the recording is
 * ready for it.  0, or -1 after the error message. */
static int prepare_command(const struct record_opts *ro, struct run *x)
{
	char err[PATH_MAX + 128];
	int bpf_ok = 0;
	if (choose_backend(ro, x->exe, &x->b, x->shim, sizeof x->shim, &bpf_ok) < 0)
		return -1;
	if (!x->b &&
	    !(x->rings = mt_rings_listen(x->sockname, sizeof x->sockname, err, sizeof err))) {
		mt_error("%s", err);
		return -1;
	}
	/* With the shim, by default (not --backend=preload): BPF where it
	 * cannot follow the command through an exec, when we may use BPF. */
	x->l = (struct launch){ .cmd = x->cmd,
				.shim = x->b ? NULL : x->shim,
				.sockname = x->sockname,
				.follow = ro->follow,
				.fallback = !x->b && !strcmp(ro->backend, "auto") && bpf_ok };
	return (x->pid = start_command(&x->l, &x->go, &x->errfd)) < 0 ? -1 : 0;
}

/* Opens the recording (RO's output, or the name made up for the command,
 * then in ro->output), its stream to a gatherer, and the BPF probes on the
 * command.  0, or -1 after the error message. */
static int open_recording(struct record_opts *ro, struct run *x)
{
	char err[PATH_MAX + 128];
	uint64_t cull_ns = ro->cull ? (ro->cull_ms ? ro->cull_ms : 1) * 1000000ull : 0;
	if (ro->output) {
		x->r = mt_writer_open(ro->output, cull_ns, err, sizeof err);
	} else {
		x->r = open_default(x->defpath, sizeof x->defpath, x->exe, x->pid, cull_ns, err,
				    sizeof err);
		ro->output = x->defpath;
	}
	if (x->r && ro->embed)
		mt_writer_embed(x->r, ro->quiet);
	if (x->r && !ro->no_scan)
		mt_writer_leak_scans(x->r, ro->quiet, ro->sample != 0);
	if (x->r && ro->rss_ms >= 0)
		mt_writer_rss_interval(x->r, (uint64_t)(ro->rss_ms * 1e6));
	if (x->r && ro->listen) {
		const struct mt_listen_opts lo = { .addr = ro->listen,
						   .token = ro->token,
						   .broadcast = ro->broadcast,
						   .name = x->cmd[0],
						   .pid = (int)x->pid,
						   .quiet = ro->quiet };
		if (!(x->lst = mt_listen_start(&lo, ro->output, err, sizeof err))) {
			mt_error("%s", err);
			return -1;
		}
	}
	if (!x->r || (x->b && mt_bpf_record_attach(x->b, x->pid, x->exe, err, sizeof err) < 0)) {
		/* a Go program without cgo links no C allocator: say what it is
		 * rather than that its symbols are missing */
		if (x->r && mt_elf_is_go(x->exe))
			mt_error("%s is a Go program that calls no C allocator (no cgo): %s",
				 x->exe, mt_managed_hint("Go"));
		else
			mt_error("%s", err);
		return -1;
	}
	/* the shim's command is followed to its exit, for the leak scan (the
	 * BPF backend's is already, mt_bpf_record_attach) */
	if (!x->b && !ro->no_scan && mt_tracee_seize(x->pid, 0, err, sizeof err) < 0 &&
	    errno != ENOSYS) /* (an emulator: nothing to say to its user) */
		mt_warning("%s: no leak scan", err);
	if (x->l.fallback)
		x->fb = mt_fallback_new(x->r);
	return 0;
}

/* Lets the command go and records it until it ends: its wait status in
 * *WSTATUS, the errno of an exec that failed (or 0) in *EXEC_ERRNO, and in
 * *FAILED whether the recording could not be written whole.  0, or -1
 * after the error message when it could not be started. */
static int trace_command(struct run *x, int *wstatus, int *exec_errno, int *failed)
{
	if (write(x->go, "g", 1) != 1) {
		mt_error("cannot start %s: %s", x->cmd[0], strerror(errno));
		return -1;
	}
	close(x->go);
	x->go = -1;
	pass_signals_to(x->pid);

	*wstatus = x->b ? mt_bpf_record_run(x->b, x->r, x->pid) :
			  mt_rings_run(x->rings, x->r, x->pid, x->fb);
	pid_t cmd_pid = x->pid;
	x->pid = -1; /* reaped */
	mt_fallback_end(x->fb, cmd_pid, *wstatus);
	x->fb = NULL;
	mt_bpf_close(x->b);
	x->b = NULL;
	if (read(x->errfd, exec_errno, sizeof *exec_errno) != sizeof *exec_errno)
		*exec_errno = 0;
	mt_rings_close(x->rings);
	x->rings = NULL;
	*failed = mt_writer_close(x->r) < 0;
	x->r = NULL;
	return 0;
}

/* The recording is closed (with the binaries embedded): what happened
 * said, the leak gate applied, the gatherer waited for.  Returns the status
 * to exit with. */
static int finish(const struct record_opts *ro, struct run *x, pid_t cmd_pid, int wstatus,
		  int exec_errno, int failed)
{
	int status = EXIT_FAILED;
	if (exec_errno) {
		mt_error("cannot run %s: %s", x->cmd[0], strerror(exec_errno));
		remove_output(ro->output);
		status = exec_errno == ENOENT ? 127 : 126;
	} else if (!failed && nothing_recorded(ro->output)) {
		/* the command ran untraced: say so, and fail, rather than hand
		 * over an empty recording (and pass a leak gate) in silence */
		if (x->l.shim)
			mt_error("no process of %s was traced (none connected through the shim %s; "
				 "the loader says above when it could not preload it); %s holds "
				 "nothing",
				 x->cmd[0], x->l.shim, ro->output);
		else
			mt_error("no process of %s was traced; %s holds nothing", x->cmd[0],
				 ro->output);
	} else if (!failed) {
		print_summary(ro->output, ro->quiet, cmd_pid, wstatus);
		status = WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : WEXITSTATUS(wstatus);
		status = leak_gate(ro, status);
	}
	if (x->lst && !failed && !exec_errno)
		wait_for_gatherer(x->lst);
	return status;
}

/* Lets go of what X still holds.  A command not yet reaped is killed: a
 * failure before it ran must not let it run untraced; a recording still
 * open (OUTPUT) is removed. */
static void end_run(struct run *x, const char *output)
{
	if (x->pid > 0) {
		kill(x->pid, SIGKILL);
		waitpid(x->pid, NULL, 0);
	}
	if (x->r) {
		mt_writer_close(x->r);
		remove_output(output);
	}
	mt_fallback_end(x->fb, x->pid, 0);
	mt_listen_free(x->lst);
	mt_bpf_close(x->b);
	mt_rings_close(x->rings);
	if (x->go >= 0)
		close(x->go);
	if (x->errfd >= 0)
		close(x->errfd);
	free(x->exe);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts ro = { .backend = "auto", .cull_ms = 10000, .rss_ms = -1 };
	struct run x = { .go = -1, .errfd = -1, .pid = -1 };
	int status = EXIT_FAILED, wstatus, exec_errno = 0, failed;

	mt_set_fail_status(EXIT_FAILED);
	int first = parse_args(&ro, argc, argv);
	if (first <= 0)
		return -first;
	x.cmd = argv + first;
	int st = settle_args(&ro);
	if (st)
		return st;
	if (!(x.exe = mt_resolve_command(x.cmd[0]))) {
		mt_error("cannot run %s: command not found", x.cmd[0]);
		return 127;
	}
	if (prepare_command(&ro, &x) == 0 && open_recording(&ro, &x) == 0) {
		pid_t cmd_pid = x.pid;
		if (trace_command(&x, &wstatus, &exec_errno, &failed) == 0)
			status = finish(&ro, &x, cmd_pid, wstatus, exec_errno, failed);
	}
	end_run(&x, ro.output);
	return status;
}
