/*
 * cmd_record.c - `memtrace record`: run a command and write its recording.
 *
 * The command runs with the shim preloaded and MEMTRACE_CONNECT naming a
 * socket of ours.  Every traced process (children too, with --follow-forks)
 * connects once and hands over a memfd ring (ring.h); this process drains
 * the rings on its own core, cuts what it drained into compressed chunks and
 * appends them to the recording at least every 250 ms, so that a crash of
 * either side loses under a second.  At the end it reads the recording back
 * and prints a few lines of figures.
 *
 * Exit status: the command's own (128+N if it died of signal N), 125 if
 * memtrace failed, 126/127 if the command could not be run, as a shell does.
 */
#include "commands.h"
#include "config.h"
#include "analyse/recording.h"
#include "collect/writer.h"
#include "format/ring.h"
#include "collect/bpf_stream.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_FAILED 125

static const char usage_text[] =
	"usage: memtrace record [options] [--] COMMAND [ARGS...]\n"
	"\n"
	"Runs COMMAND and records every allocation and free it makes, with stacks.\n"
	"\n"
	"options:\n"
	"  -o, --output FILE        write the recording to FILE\n"
	"                           (default: memtrace.COMMAND.PID.mtrace)\n"
	"  --backend=auto|preload|bpf\n"
	"                           how events are captured (default: auto, the shim\n"
	"                           for dynamically linked programs)\n"
	"  -f, --follow-forks       trace child processes too, each as its own process\n"
	"  --cull-temporary[=MS]    leave out of the event stream allocations freed\n"
	"                           within MS milliseconds (default 10000), keeping\n"
	"                           them in exact per-site totals\n"
	"  -q, --quiet              print nothing but errors\n"
	"  -h, --help               show this help\n"
	"\n"
	"The exit status is COMMAND's (128+N if it died of signal N); 125 if memtrace\n"
	"failed; 126 or 127 if COMMAND could not be run.  See memtrace-record(1).\n";

/* One traced process of the shim: its ring and its stream in the file. */
struct conn {
	int fd;
	struct mt_ring_hdr *ring;
	uint64_t size;
	uint32_t pid;
	struct mt_stream *stream;
};

struct conns {
	struct conn **v;
	size_t n, cap;
};

static pid_t child_pid;

static void on_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static void drain(struct conn *c, int final)
{
	uint64_t head = __atomic_load_n(&c->ring->head, __ATOMIC_ACQUIRE);
	uint64_t tail = c->ring->tail;
	mt_stream_feed(c->stream, mt_ring_data(c->ring) + (tail & (c->size - 1)), head - tail, final);
	__atomic_store_n(&c->ring->tail, head, __ATOMIC_RELEASE);
}

static void accept_conn(struct mt_recorder *r, struct conns *cs, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct mt_hello hello;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {&hello, sizeof hello};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof u.buf};
	/* the hello is sent right after connect; wait briefly for it */
	struct pollfd pf = {fd, POLLIN, 0};
	poll(&pf, 1, 1000);
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	int memfd = -1;
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&memfd, CMSG_DATA(cm), sizeof memfd);
	if (n != (ssize_t)sizeof hello || hello.magic != MT_RING_MAGIC || memfd < 0 ||
	    hello.size == 0 || (hello.size & (hello.size - 1))) {
		mt_warning("a process connected with a malformed hello; ignored");
		if (memfd >= 0)
			close(memfd);
		close(fd);
		return;
	}
	struct mt_ring_hdr *ring = mt_ring_map(memfd, hello.size);
	close(memfd);
	if (!ring) {
		mt_warning("cannot map the event buffer of pid %u: %s", hello.pid, strerror(errno));
		close(fd);
		return;
	}
	mt_grow(&cs->v, &cs->cap, cs->n, sizeof *cs->v);
	struct conn *c = xcalloc(1, sizeof *c);
	cs->v[cs->n++] = c;
	c->fd = fd;
	c->ring = ring;
	c->size = hello.size;
	c->pid = hello.pid;
	c->stream = mt_stream_new(r);
}

/* The connection's process is gone (or exec'd): write out all it left. */
static void close_conn(struct conns *cs, size_t k, int have_status, int status)
{
	struct conn *c = cs->v[k];
	drain(c, 0);
	uint64_t lost[MT_LOST_KIND_COUNT];
	for (int i = 0; i < MT_LOST_KIND_COUNT; i++)
		lost[i] = c->ring->lost[i];
	int64_t st = WIFEXITED(status) ? WEXITSTATUS(status) : -(int64_t)WTERMSIG(status);
	mt_stream_end(c->stream, lost, have_status, st);
	mt_ring_unmap(c->ring, c->size);
	close(c->fd);
	free(c);
	cs->v[k] = cs->v[--cs->n];
}

static int is_static_or_setuid(const char *path, char *why, size_t len)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return 0;
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		snprintf(why, len, "%s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it", path);
		return 1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int result = 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n;
	if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0) {
		int interp = 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
				interp = 1;
		}
		if (!interp) {
			snprintf(why, len, "%s is statically linked: there is no dynamic loader to preload the shim", path);
			result = 1;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return result;
}

/* The command's path as execvp would find it, or NULL. */
static char *resolve_command(const char *cmd)
{
	if (strchr(cmd, '/'))
		return access(cmd, F_OK) == 0 ? xstrdup(cmd) : NULL;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		char buf[PATH_MAX];
		snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (access(buf, X_OK) == 0)
			return xstrdup(buf);
		path += n;
		if (*path == ':')
			path++;
	}
	return NULL;
}

static int find_shim(char *out, size_t len)
{
	const char *env = getenv("MEMTRACE_SHIM");
	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = 0;
		snprintf(out, len, "%s/libmemtrace-preload.so", dirname(self));
		if (access(out, R_OK) == 0)
			return 0;
	}
	snprintf(out, len, "%s/libmemtrace-preload.so", MEMTRACE_LIBDIR);
	return access(out, R_OK);
}

/* Records the shim's processes until the command has exited and every
 * traced process has hung up.  Returns the command's wait status. */
static int run_shim(struct mt_recorder *r, int lfd, pid_t pid)
{
	struct conns cs = {0};
	int status = 0, reaped = 0;
	for (;;) {
		/* Rings are drained on a 5 ms beat; only new connections wake us. */
		struct pollfd pl = {lfd, POLLIN, 0};
		if (poll(&pl, 1, 5) > 0 && (pl.revents & POLLIN))
			accept_conn(r, &cs, lfd);
		if (!reaped && waitpid(pid, &status, WNOHANG) == pid)
			reaped = 1;
		for (size_t k = cs.n; k-- > 0;) {
			struct conn *c = cs.v[k];
			drain(c, 0);
			struct pollfd p = {c->fd, POLLRDHUP, 0};
			if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
				/* The command's own connection ends when it exits or
				 * execs; its exit status goes in once it is known. */
				if (c->pid == (uint32_t)pid && !reaped)
					continue;
				close_conn(&cs, k, c->pid == (uint32_t)pid, status);
			}
		}
		if (reaped && cs.n == 0) {
			/* a last look for a connection that raced the exit */
			if (poll(&pl, 1, 0) > 0 && (pl.revents & POLLIN))
				continue;
			break;
		}
	}
	free(cs.v);
	return status;
}

/* BPF: probes go on the objects the command will map, filtered by its pid,
 * before it is let go; ptrace stops it at exit (and nowhere else that
 * matters), while its address space still exists, so that every object it
 * mapped is described even if it lived for a millisecond. */
static int setup_bpf_child(struct mt_bpf *b, pid_t pid, const char *exe, char *err, size_t errlen)
{
	if (mt_bpf_trace_exec(b, pid, exe, err, errlen) < 0)
		return -1;
	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL) < 0) {
		snprintf(err, errlen, "cannot follow %s to its exit (ptrace: %s)", exe, strerror(errno));
		return -1;
	}
	return 0;
}

static int run_bpf(struct mt_bpf *b, struct mt_recorder *r, pid_t pid)
{
	struct mt_bpf_streams *streams = mt_bpf_streams_new(r, b);
	uint64_t next_scan = mt_now_ns() + 1000000000ull;
	int status = 0;
	for (;;) {
		mt_bpf_poll(b, 5, mt_bpf_streams_event, streams);
		mt_bpf_streams_flush(streams);
		if (mt_now_ns() >= next_scan) {
			next_scan = mt_now_ns() + 1000000000ull;
			mt_bpf_rescan(b);
			mt_bpf_streams_rescan(streams);
		}
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG | __WALL);
		if (w != pid)
			continue;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			status = st;
			break;
		}
		if (!WIFSTOPPED(st))
			continue;
		int event = st >> 16, sig = WSTOPSIG(st);
		if (event == PTRACE_EVENT_EXIT) {
			/* the address space is still there: describe it */
			mt_bpf_poll(b, 0, mt_bpf_streams_event, streams);
			mt_bpf_streams_rescan(streams);
			ptrace(PTRACE_CONT, pid, 0, 0);
		} else if (event == PTRACE_EVENT_STOP) {
			/* A group stop (SIGSTOP and friends) is kept, listening for
			 * SIGCONT, which ends it with a PTRACE_EVENT_STOP of SIGTRAP:
			 * then it runs on. */
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
				ptrace(PTRACE_LISTEN, pid, 0, 0);
			else
				ptrace(PTRACE_CONT, pid, 0, 0);
		} else {
			/* a signal on its way to the command: deliver it */
			ptrace(PTRACE_CONT, pid, 0, sig);
		}
	}
	mt_bpf_poll(b, 0, mt_bpf_streams_event, streams);
	int64_t code = WIFEXITED(status) ? WEXITSTATUS(status) : -(int64_t)WTERMSIG(status);
	mt_bpf_streams_end(streams, b, (uint32_t)pid, 1, code);
	mt_bpf_streams_free(streams);
	mt_bpf_close(b);
	return status;
}

static void print_summary(const char *path, int quiet)
{
	if (quiet)
		return;
	struct mt_recording rec;
	char err[512];
	if (mt_recording_load(&rec, path, err, sizeof err) < 0) {
		mt_warning("%s", err);
		return;
	}
	for (size_t i = 0; i < rec.nprocs; i++) {
		struct mt_process *p = rec.procs[i];
		const struct mt_totals *t = &p->col.t;
		char a[32], b[32], c[32], d[32];
		mt_note("pid %u (%s): %s allocations (%s), %s frees, %s temporary",
			p->pid, p->exe ? p->exe : "?", mt_fmt_count(t->allocations, a),
			mt_fmt_bytes(t->allocated_bytes, b), mt_fmt_count(t->frees, c),
			mt_fmt_count(t->temporary, d));
		mt_note("pid %u: peak %s at %.3f s; leaked %s in %s allocations", p->pid,
			mt_fmt_bytes(t->peak_bytes, a),
			t->peak_ts > p->start_ts ? (double)(t->peak_ts - p->start_ts) / 1e9 : 0.0,
			mt_fmt_bytes(t->live_bytes, b), mt_fmt_count(t->live_count, c));
		uint64_t lost = mt_process_lost(p);
		if (lost)
			mt_warning("pid %u: %s events were lost; figures are lower bounds", p->pid,
				   mt_fmt_count(lost, a));
	}
	if (rec.truncated)
		mt_warning("%s is truncated (%s)", path, rec.why);
	char sz[32];
	mt_note("recording written to %s (%s); see: memtrace report %s", path,
		mt_fmt_bytes(rec.file_size, sz), path);
	mt_recording_free(&rec);
}

int cmd_record(int argc, char **argv)
{
	const char *output = NULL, *backend = "auto", *val;
	int follow = 0, quiet = 0, cull = 0;
	uint64_t cull_ms = 10000;
	int i;
	mt_set_fail_status(EXIT_FAILED);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (++i >= argc)
				return mt_usage_error("record", "option '%s' needs a file name", a);
			output = argv[i];
		} else if (mt_opt(a, "output", &val) && val) {
			output = val;
		} else if (mt_opt(a, "backend", &val)) {
			if (!val && ++i < argc)
				val = argv[i];
			if (!val || (strcmp(val, "auto") && strcmp(val, "preload") && strcmp(val, "bpf")))
				return mt_usage_error("record", "--backend must be auto, preload or bpf");
			backend = val;
		} else if (!strcmp(a, "-f") || !strcmp(a, "--follow-forks")) {
			follow = 1;
		} else if (mt_opt(a, "cull-temporary", &val)) {
			cull = 1;
			if (val && mt_parse_u64(val, &cull_ms))
				return mt_usage_error("record", "--cull-temporary takes milliseconds, not '%s'", val);
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = 1;
		} else {
			return mt_usage_error("record", "unknown option '%s'", a);
		}
	}
	if (i >= argc)
		return mt_usage_error("record", "no command to run");
	char **cmd = argv + i;

	char *exe = resolve_command(cmd[0]);
	if (!exe) {
		mt_error("cannot run %s: command not found", cmd[0]);
		return 127;
	}
	char why[PATH_MAX + 128], err[PATH_MAX + 128];
	int use_bpf = !strcmp(backend, "bpf");
	if (!use_bpf && is_static_or_setuid(exe, why, sizeof why)) {
		if (!strcmp(backend, "preload")) {
			mt_error("--backend=preload cannot trace it: %s", why);
			free(exe);
			return EXIT_FAILED;
		}
		use_bpf = 1; /* auto: BPF where the shim cannot work */
	}
	struct mt_bpf *b = NULL;
	if (use_bpf) {
		struct mt_bpf_opts bo = {.events = 1};
		if (follow) {
			mt_error("--follow-forks is not available with the BPF backend yet");
			free(exe);
			return EXIT_FAILED;
		}
		if (mt_bpf_open(&b, &bo, err, sizeof err) < 0) {
			if (!strcmp(backend, "bpf")) {
				mt_error("--backend=bpf: %s", err);
				free(exe);
				return EXIT_FAILED;
			}
			mt_warning("%s; the BPF backend that would trace it is unavailable (%s): using the "
				   "shim, which cannot see it", why, err);
			use_bpf = 0;
		}
	}
	char shim[PATH_MAX];
	if (!use_bpf && find_shim(shim, sizeof shim)) {
		mt_error("cannot find libmemtrace-preload.so (looked next to memtrace and in %s; set MEMTRACE_SHIM)",
			 MEMTRACE_LIBDIR);
		free(exe);
		return EXIT_FAILED;
	}

	/* The socket the shim connects to, in the abstract namespace. */
	char sockname[108];
	int lfd = -1;
	if (!use_bpf) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		snprintf(sockname, sizeof sockname, "@memtrace-%d-%ld", (int)getpid(), (long)now.tv_nsec);
		lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		size_t slen = strlen(sockname);
		memcpy(sa.sun_path, sockname, slen);
		sa.sun_path[0] = 0;
		if (lfd < 0 ||
		    bind(lfd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + slen)) < 0 ||
		    listen(lfd, 64) < 0) {
			mt_error("cannot create the recorder socket: %s", strerror(errno));
			free(exe);
			return EXIT_FAILED;
		}
	}

	int go[2], errp[2];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		mt_error("pipe: %s", strerror(errno));
		return EXIT_FAILED;
	}
	pid_t pid = fork();
	if (pid < 0) {
		mt_error("fork: %s", strerror(errno));
		return EXIT_FAILED;
	}
	if (pid == 0) {
		char c;
		close(go[1]);
		close(errp[0]);
		/* the command starts only once memtrace is ready for it */
		if (read(go[0], &c, 1) != 1)
			_exit(EXIT_FAILED);
		if (!use_bpf) {
			const char *old = getenv("LD_PRELOAD");
			char *pre = xmalloc(strlen(shim) + (old ? strlen(old) : 0) + 2);
			sprintf(pre, "%s%s%s", shim, old && *old ? ":" : "", old && *old ? old : "");
			setenv("LD_PRELOAD", pre, 1);
			setenv("MEMTRACE_CONNECT", sockname, 1);
			setenv("MEMTRACE_FOLLOW_FORKS", follow ? "1" : "0", 1);
			/* bytehound's name for it would override -f's absence */
			unsetenv("MEMTRACE_TRACK_CHILD_PROCESSES");
			unsetenv("MEMORY_PROFILER_TRACK_CHILD_PROCESSES");
			unsetenv("MEMTRACE_OUTPUT");
			unsetenv("MEMTRACE_CULL_TEMPORARY_ALLOCATIONS");
			unsetenv("MEMORY_PROFILER_CULL_TEMPORARY_ALLOCATIONS");
		}
		execvp(cmd[0], cmd);
		int e = errno;
		if (write(errp[1], &e, sizeof e) < 0) {
			/* the parent sees the exit status anyway */
		}
		_exit(e == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	close(go[0]);
	close(errp[1]);

	char defpath[PATH_MAX];
	if (!output) {
		snprintf(defpath, sizeof defpath, "memtrace.%s.%d.mtrace", basename(exe), (int)pid);
		output = defpath;
	}
	struct mt_recorder *r = mt_recorder_open(output, cull ? (cull_ms ? cull_ms : 1) * 1000000ull : 0,
						 err, sizeof err);
	if (!r || (b && setup_bpf_child(b, pid, exe, err, sizeof err) < 0)) {
		mt_error("%s", err);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (r) {
			mt_recorder_close(r);
			unlink(output);
		}
		if (b)
			mt_bpf_close(b);
		free(exe);
		return EXIT_FAILED;
	}
	if (write(go[1], "g", 1) != 1) {
		mt_error("cannot start %s: %s", cmd[0], strerror(errno));
		return EXIT_FAILED;
	}
	close(go[1]);

	/* Ctrl-C reaches the command through the terminal; we stay to write
	 * what it did.  Signals sent to us alone are passed on to it. */
	struct sigaction sig = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sig, NULL);
	sigaction(SIGHUP, &sig, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);

	int status = b ? run_bpf(b, r, pid) : run_shim(r, lfd, pid);
	int exec_errno = 0;
	if (read(errp[0], &exec_errno, sizeof exec_errno) != sizeof exec_errno)
		exec_errno = 0;
	if (lfd >= 0)
		close(lfd);
	int failed = mt_recorder_close(r) < 0;
	free(exe);

	if (exec_errno) {
		mt_error("cannot run %s: %s", cmd[0], strerror(exec_errno));
		unlink(output);
		return exec_errno == ENOENT ? 127 : 126;
	}
	if (failed)
		return EXIT_FAILED;
	print_summary(output, quiet);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
