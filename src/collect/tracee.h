/*
 * tracee.h - the recorded command followed with ptrace: stopped at its exit
 * (PTRACE_EVENT_EXIT, its address space and memory still there) for the
 * leak scan, and at its execs; its other stops passed on as if nobody
 * watched (a signal delivered, a group stop kept until SIGCONT).  Both
 * backends share it: the BPF one also re-probes at each exec.
 */
#ifndef MEMTRACE_TRACEE_H
#define MEMTRACE_TRACEE_H

#include <sys/types.h>

#include "writer.h"

/* Follows PID (not yet started: it waits for its go) to its exit and its
 * execs.  Returns 0, or -1 with ERR. */
int mt_tracee_seize(pid_t pid, int exitkill, char *err, size_t errlen);

/* Whether this process is PID's tracer already. */
int mt_tracee_ours(pid_t pid);

/* Lets PID go on from a stop other than its exit's (wait status ST). */
void mt_tracee_resume(pid_t pid, int st);

/* At PID's exit stop: the leak scan of its stream S (its last records in
 * S already), when the writer asks for scans (mt_writer_leak_scans), and
 * said on stderr.  PID stays stopped. */
void mt_tracee_scan(struct mt_stream *s, pid_t pid);

#endif
