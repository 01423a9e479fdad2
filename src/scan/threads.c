/*
 * threads.c - see threads.h.
 */
#include "threads.h"

#include "base/clock.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

/* How long a process's threads are given to stop, in all; and how long
 * one that did not is waited for once the others are let go. */
#define STOP_WAIT_NS 1000000000ull
#define LATE_WAIT_NS 5000000000ull

/* Where the stack pointer is among NT_PRSTATUS's words. */
#if defined(__x86_64__)
#include <stddef.h>
#define SP_WORD (offsetof(struct user_regs_struct, rsp) / sizeof(uintptr_t))
#elif defined(__aarch64__)
#include <stddef.h>
#define SP_WORD (offsetof(struct user_regs_struct, sp) / sizeof(uintptr_t))
#elif defined(__arm__)
#define SP_WORD 13 /* uregs[13] */
#elif defined(__i386__)
#define SP_WORD 15 /* esp */
#endif

static int read_regs(struct mt_thread_regs *t)
{
	struct iovec iov = { .iov_base = t->words, .iov_len = sizeof t->words };
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(uintptr_t)NT_PRSTATUS, &iov) < 0)
		return -1;
	t->len = iov.iov_len;
	t->sp = 0;
#ifdef SP_WORD
	if (t->len >= (SP_WORD + 1) * sizeof(uintptr_t))
		t->sp = t->words[SP_WORD];
#endif
	return 0;
}

static struct mt_thread_regs *add(struct mt_stopped *st, pid_t tid)
{
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 16;
		struct mt_thread_regs *t = realloc(st->t, cap * sizeof *t);
		if (!t)
			return NULL;
		st->t = t;
		st->cap = cap;
	}
	struct mt_thread_regs *t = &st->t[st->n++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	return t;
}

static int known(const struct mt_stopped *st, pid_t tid)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->t[i].tid == tid)
			return 1;
	return 0;
}

/* Waits until TID (seized, interrupted) stops, up to DEADLINE (mt_now_ns):
 * 1 when stopped, 0 when it was gone, -2 when it has not stopped by then
 * (it still will, the interrupt pending).  It is asked without blocking:
 * a thread inside vfork stops only once its child has exec'd or exited,
 * and that child may be waiting on the threads already held. */
static int wait_stop(pid_t tid, uint64_t deadline)
{
	for (unsigned i = 0;; i++) {
		int status;
		pid_t r = waitpid(tid, &status, WNOHANG | __WALL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r == tid && (WIFEXITED(status) || WIFSIGNALED(status))))
			return 0;
		if (r == tid && WIFSTOPPED(status)) {
			/* a signal arriving first stops it too: it goes back
			 * in at the detach (PTRACE_INTERRUPT's own stop is
			 * SIGTRAP's event stop, a group stop SIGSTOP's:
			 * neither is to be delivered) */
			int sig = WSTOPSIG(status);
			if ((status >> 16) == 0 && sig != SIGTRAP && sig != SIGSTOP) {
				/* keep it pending for the thread: re-raised by detach */
				ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
				ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
				continue;
			}
			return 1;
		}
		if (r == tid)
			continue;
		if (mt_now_ns() >= deadline)
			return -2;
		/* a thread stops within microseconds: yield first, then
		 * sleep, so that a thousand threads are not held longer */
		if (i < 64)
			sched_yield();
		else
			nanosleep(&(struct timespec){ 0, i < 1064 ? 20000 : 1000000 }, NULL);
	}
}

/* Seizes and stops TID by DEADLINE.  Returns 1 when stopped, 0 when it was
 * gone, -1 when not allowed, -2 when it did not stop in time. */
static int stop_one(pid_t tid, uint64_t deadline)
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
		return errno == ESRCH ? 0 : -1;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return 0;
	return wait_stop(tid, deadline);
}

/* TID did not stop in time, the process's other threads let go: it is
 * waited for a while longer (a vfork's child can now go on), then
 * detached.  Returns 0, or -1 when it is still running (then it stops,
 * seized, when its system call ends, and is let go when memtrace exits). */
static int detach_late(pid_t tid)
{
	int r = wait_stop(tid, mt_now_ns() + LATE_WAIT_NS);
	if (r == 1)
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
	return r == -2 ? -1 : 0;
}

int mt_threads_stop(struct mt_stopped *st, pid_t pid, char *why, size_t whylen)
{
	memset(st, 0, sizeof *st);
	st->pid = pid;
	st->seized = 1;
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	uint64_t deadline = mt_now_ns() + STOP_WAIT_NS;
	/* until a listing finds no thread it had not stopped: threads made
	 * meanwhile by those still running */
	for (int again = 1; again;) {
		again = 0;
		DIR *d = opendir(dir);
		if (!d) {
			snprintf(why, whylen, "no process %d", (int)pid);
			mt_threads_resume(st);
			errno = ESRCH;
			return -1;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);
			if (tid <= 0 || known(st, tid))
				continue;
			int r = stop_one(tid, deadline);
			if (r == -2) {
				closedir(d);
				mt_threads_resume(st);
				int late = detach_late(tid);
				snprintf(
					why, whylen,
					"thread %d of process %d did not stop within %d ms (inside "
					"vfork, its child waiting on the process?)%s",
					(int)tid, (int)pid, (int)(STOP_WAIT_NS / 1000000),
					late ? "; it is let go when memtrace exits" : "");
				errno = EBUSY;
				return -1;
			}
			if (r < 0) {
				int err = errno;
				snprintf(
					why, whylen, "cannot stop thread %d of process %d: %s%s",
					(int)tid, (int)pid, strerror(err),
					err == EPERM ?
						" (another tracer holds it, or ptrace is not allowed)" :
						"");
				closedir(d);
				mt_threads_resume(st);
				errno = err;
				return -1;
			}
			struct mt_thread_regs *t = r ? add(st, tid) : NULL;
			if (r && (!t || read_regs(t) < 0)) {
				if (t)
					st->n--;
				ptrace(PTRACE_DETACH, tid, NULL, NULL);
				continue;
			}
			again |= r;
		}
		closedir(d);
	}
	if (!st->n) {
		snprintf(why, whylen, "process %d has exited", (int)pid);
		mt_threads_resume(st);
		errno = ESRCH;
		return -1;
	}
	return 0;
}

int mt_threads_held(struct mt_stopped *st, pid_t pid, const pid_t *tids, size_t n)
{
	memset(st, 0, sizeof *st);
	st->pid = pid;
	for (size_t i = 0; i < n; i++) {
		struct mt_thread_regs *t = add(st, tids[i]);
		if (!t)
			return -1;
		if (read_regs(t) < 0)
			st->n--;
	}
	return 0;
}

void mt_threads_resume(struct mt_stopped *st)
{
	for (size_t i = 0; st->seized && i < st->n; i++)
		ptrace(PTRACE_DETACH, st->t[i].tid, NULL, NULL);
	free(st->t);
	st->t = NULL;
	st->n = st->cap = 0;
}
