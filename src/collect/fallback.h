/*
 * fallback.h - the BPF backend standing in for the shim, in `memtrace
 * record` under the default backend, for an image the shim cannot follow
 * (the command's process exec'ing a program with a cleared environment, a
 * static or set-user-ID one).  The shim asks before that exec; the probes
 * are placed for the new image, the process is followed with ptrace to its
 * exit (as --backend=bpf does, bpf_record.c), and its events go into the
 * same recording as a process entry of its own (backend "bpf").
 */
#ifndef MEMTRACE_FALLBACK_H
#define MEMTRACE_FALLBACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "writer.h"

struct mt_fallback;

/* A fallback writing into R; BPF itself is opened at the first request. */
struct mt_fallback *mt_fallback_new(struct mt_writer *r);
/* PID (the command's process, a child of ours) is about to exec PATH,
 * which the shim cannot follow: places the probes for it and seizes PID.
 * Returns 0, or -1 with a one-line reason in ERR. */
int mt_fallback_attach(struct mt_fallback *f, pid_t pid, const char *path, char *err,
		       size_t errlen);
/* Whether anything is attached (then the wait statuses of PID include
 * ptrace stops, for mt_fallback_stopped). */
int mt_fallback_active(const struct mt_fallback *f);
/* On the recorder's beat: takes the BPF events in. */
void mt_fallback_poll(struct mt_fallback *f);
/* PID stopped with wait status ST (a ptrace stop): handles it and lets PID
 * go on. */
void mt_fallback_stopped(struct mt_fallback *f, pid_t pid, int st);
/* PID exited with wait status ST: its entry ends.  Then frees F (NULL is
 * fine). */
void mt_fallback_end(struct mt_fallback *f, pid_t pid, int st);

#endif
