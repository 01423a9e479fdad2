/*
 * threads.h - a process held still for a moment: every thread stopped with
 * ptrace (PTRACE_SEIZE and PTRACE_INTERRUPT, so that no signal is sent and
 * the process cannot tell), its registers and stack pointer read, then let
 * go.  For the leak scan, whose snapshot must be consistent.
 */
#ifndef MEMTRACE_SCAN_THREADS_H
#define MEMTRACE_SCAN_THREADS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One thread's general registers, as the kernel's NT_PRSTATUS regset has
 * them, and its stack pointer (0 when this machine's layout is not known:
 * its whole stack is then a root). */
struct mt_thread_regs {
	pid_t tid;
	uint64_t sp;
	size_t len;
	uintptr_t words[64];
};

struct mt_stopped {
	pid_t pid;
	struct mt_thread_regs *t;
	size_t n, cap;
	int seized; /* we stopped them (else: the caller's tracer holds them) */
};

/* Stops every thread of PID, within a second.  Returns 0, or -1 with errno
 * and WHY set (the process is gone, another tracer holds it, ptrace is not
 * allowed, or a thread did not stop in time: one inside vfork stops only
 * once its child has exec'd or exited, and that child may wait on the
 * threads already held); the threads stopped before a failure are let go
 * again. */
int mt_threads_stop(struct mt_stopped *st, pid_t pid, char *why, size_t whylen);

/* For a process the caller already traces and holds stopped (record's
 * exit stop): reads the registers of TIDS without stopping anything. */
int mt_threads_held(struct mt_stopped *st, pid_t pid, const pid_t *tids, size_t n);

/* Lets the threads go (those mt_threads_stop stopped) and frees ST. */
void mt_threads_resume(struct mt_stopped *st);

#endif
