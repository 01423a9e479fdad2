/*
 * bpf_record.h - `memtrace record --backend=bpf`: the command is traced by
 * BPF probes instead of the shim, and followed with ptrace to its exit.
 */
#ifndef MEMTRACE_BPF_RECORD_H
#define MEMTRACE_BPF_RECORD_H

#include <stddef.h>
#include <sys/types.h>

#include "capture/bpf/capture.h"
#include "bpf_stream.h"
#include "writer.h"

/* Puts the probes on the objects PID (a child of ours, not yet exec'd) will
 * map once it runs EXE, filtered by its pid, and seizes it with ptrace so
 * that it stops at its exit.  Returns 0, or -1 with a reason in ERR. */
int mt_bpf_record_attach(struct mt_bpf *b, pid_t pid, const char *exe, char *err, size_t errlen);
/* PID, seized by mt_bpf_record_attach, stopped with wait status ST:
 * describes its address space at its exit, ends the old image's entry at
 * an exec and places the probes again for the new one (but for the first
 * exec, *EXECS 0, whose image mt_bpf_record_attach probed), keeps a group
 * stop until SIGCONT, delivers any other signal. */
void mt_bpf_record_stop(struct mt_bpf *b, struct mt_bpf_streams *streams, pid_t pid, int st,
			int *execs);
/* Records PID's events into R until it has exited; returns its wait
 * status.  B stays open (mt_bpf_close is the caller's). */
int mt_bpf_record_run(struct mt_bpf *b, struct mt_writer *r, pid_t pid);

#endif
