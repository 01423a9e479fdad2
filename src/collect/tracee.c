/*
 * tracee.c - see tracee.h.
 */
#include "tracee.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int mt_tracee_seize(pid_t pid, int exitkill, char *err, size_t errlen)
{
	long opts = PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC | (exitkill ? PTRACE_O_EXITKILL : 0);
	if (ptrace(PTRACE_SEIZE, pid, 0, opts) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot follow process %d to its exit (ptrace: %s)", (int)pid,
			 strerror(e));
		errno = e; /* (the caller tells an emulator's ENOSYS apart) */
		return -1;
	}
	return 0;
}

int mt_tracee_ours(pid_t pid)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	int tracer = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	if (f)
		fclose(f);
	return tracer == (int)getpid();
}

void mt_tracee_resume(pid_t pid, int st)
{
	int event = st >> 16, sig = WSTOPSIG(st);
	if (event == PTRACE_EVENT_STOP) {
		/* A group stop (SIGSTOP and friends) is kept, listening for
		 * SIGCONT, which ends it with a PTRACE_EVENT_STOP of SIGTRAP:
		 * then it runs on. */
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, pid, 0, 0);
		else
			ptrace(PTRACE_CONT, pid, 0, 0);
	} else if (event) {
		ptrace(PTRACE_CONT, pid, 0, 0); /* an exec, an exit */
	} else {
		/* a signal on its way to the command: deliver it */
		ptrace(PTRACE_CONT, pid, 0, sig);
	}
}

/* How many threads PID has left. */
static int threads_of(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

void mt_tracee_scan(struct mt_stream *s, pid_t pid)
{
	int quiet;
	if (!s || !mt_stream_scans(s, &quiet))
		return;
	/* A whole process's exit takes its other threads first (they are
	 * being killed as it stops); a main thread that ended alone leaves
	 * them running, and the process is not at its end. */
	for (int i = 0; i < 100 && threads_of(pid) > 1; i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	if (threads_of(pid) > 1) {
		if (!quiet)
			mt_warning("process %d: its main thread ended before its other threads: "
				   "no leak scan",
				   (int)pid);
		return;
	}
	struct mt_stopped st;
	struct mt_scan_result res = { .why = "out of memory" };
	int ran = mt_threads_held(&st, pid, &pid, 1) == 0 && mt_stream_leak_scan(s, &st, &res) == 0;
	mt_threads_resume(&st);
	if (!quiet)
		mt_scan_say(pid, ran, &res);
}
