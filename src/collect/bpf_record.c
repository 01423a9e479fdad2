/*
 * bpf_record.c - see bpf_record.h.
 *
 * Probes go on the objects the command will map, filtered by its pid,
 * before it is let go; ptrace stops it at exit, while its address space
 * still exists, so that every object it mapped is described even if it
 * lived for a millisecond, and at every exec, where the old image's entry
 * ends and the probes are placed again for the new image (a wrapper such as
 * env, a static program it runs), before it runs.
 */
#include "bpf_record.h"
#include "bpf_stream.h"
#include "tracee.h"

#include "base/util.h"
#include "format/signum.h"
#include "base/clock.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

/* A script runs its interpreter: the program whose probes matter.  Copies
 * the "#!" line's path into OUT and returns it, or returns EXE. */
static const char *interpreter_of(const char *exe, char *out, size_t len)
{
	FILE *f = fopen(exe, "re");
	char line[PATH_MAX + 3];
	if (!f)
		return exe;
	int ok = fgets(line, sizeof line, f) && !strncmp(line, "#!", 2);
	fclose(f);
	if (!ok || sscanf(line + 2, " %4095s", out) != 1 || strlen(out) >= len)
		return exe;
	return out;
}

int mt_bpf_record_attach(struct mt_bpf *b, pid_t pid, const char *exe, char *err, size_t errlen)
{
	char interp[PATH_MAX];
	exe = interpreter_of(exe, interp, sizeof interp);
	if (mt_bpf_trace_exec(b, pid, exe, err, errlen) < 0)
		return -1;
	/* (a command the shim records is followed from its start: the same
	 * way, but for the kill at our exit) */
	if (mt_tracee_ours(pid))
		return 0;
	return mt_tracee_seize(pid, 1, err, errlen);
}

void mt_bpf_record_stop(struct mt_bpf *b, struct mt_bpf_streams *streams, pid_t pid, int st,
			int *execs)
{
	int event = st >> 16;
	if (event == PTRACE_EVENT_EXIT) {
		/* the address space is still there: describe it, then see
		 * what of it still points at the live blocks */
		mt_bpf_poll(b, 0, mt_bpf_streams_event, streams);
		mt_bpf_streams_rescan(streams);
		mt_stream_last_sample(mt_bpf_streams_of(streams, (uint32_t)pid));
		mt_tracee_scan(mt_bpf_streams_of(streams, (uint32_t)pid), pid);
		ptrace(PTRACE_CONT, pid, 0, 0);
	} else if (event == PTRACE_EVENT_EXEC) {
		/* the old image's events are in the ring: they end its entry */
		char link[64], exe[PATH_MAX], err[PATH_MAX + 128];
		snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
		ssize_t n = readlink(link, exe, sizeof exe - 1);
		exe[n > 0 ? n : 0] = 0;
		mt_bpf_poll(b, 0, mt_bpf_streams_event, streams);
		mt_bpf_streams_exec(streams, b, (uint32_t)pid, exe);
		/* the first is the command's own, probed before it was let go */
		if (n > 0 && (*execs)++ && mt_bpf_trace_exec(b, pid, exe, err, sizeof err) < 0)
			mt_warning("pid %d exec'd %s, which is not traced: %s", (int)pid, exe, err);
		ptrace(PTRACE_CONT, pid, 0, 0);
	} else {
		mt_tracee_resume(pid, st);
	}
}

int mt_bpf_record_run(struct mt_bpf *b, struct mt_writer *r, pid_t pid)
{
	struct mt_bpf_streams *streams = mt_bpf_streams_new(r, b);
	mt_bpf_streams_set_main(streams, (uint32_t)pid);
	uint64_t next_scan = mt_now_ns() + 1000000000ull;
	int status = 0, execs = 0, done = 0;
	/* Every signal the command gets stops it until this loop lets it go
	 * on: its stops wake the loop at once (SIGCHLD through a signalfd),
	 * not at the end of a poll's sleep.  A program signalled every
	 * millisecond, held 5 ms a signal, ran its handlers and nothing else. */
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int wake = -1;
	if (!sigprocmask(SIG_BLOCK, &chld, &old) &&
	    (wake = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC)) >= 0)
		mt_bpf_set_wake_fd(b, wake);
	while (!done) {
		mt_bpf_poll(b, 5, mt_bpf_streams_event, streams);
		mt_bpf_streams_flush(streams);
		/* A dlopen: its table now, the command held meanwhile (it
		 * stops at once; the loop below lets it go on). */
		if (mt_bpf_new_code_pending(b))
			ptrace(PTRACE_INTERRUPT, pid, 0, 0);
		if (mt_bpf_rescan_new_code(b) > 0)
			mt_bpf_streams_rescan(streams);
		if (mt_now_ns() >= next_scan) {
			next_scan = mt_now_ns() + 1000000000ull;
			mt_bpf_rescan(b);
			mt_bpf_streams_rescan(streams);
		}
		struct signalfd_siginfo si;
		while (wake >= 0 && read(wake, &si, sizeof si) == (ssize_t)sizeof si)
			;
		/* the stops so far (bounded: the ring is drained in between) */
		for (int k = 0; k < 64; k++) {
			int st;
			pid_t w = waitpid(pid, &st, WNOHANG | __WALL);
			if (w != pid)
				break;
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				status = st;
				done = 1;
				break;
			}
			if (WIFSTOPPED(st))
				mt_bpf_record_stop(b, streams, pid, st, &execs);
		}
	}
	mt_bpf_set_wake_fd(b, -1);
	if (wake >= 0)
		close(wake);
	sigprocmask(SIG_SETMASK, &old, NULL);
	mt_bpf_poll(b, 0, mt_bpf_streams_event, streams);
	int64_t code = WIFEXITED(status) ? WEXITSTATUS(status) :
					   -(int64_t)mt_sig_recorded(WTERMSIG(status));
	mt_bpf_streams_end(streams, b, (uint32_t)pid, 1, code);
	mt_bpf_streams_free(streams);
	return status;
}
