/*
 * bpf_stream.h - turning the BPF backend's events into record streams, one
 * per traced process, so that `record --backend=bpf` and `attach -o` write
 * the same recordings as the shim: a PROCESS record from /proc, MODULE
 * records for every object the process maps (re-read as it maps more), a
 * STACK record and the allocator object it calls the first time a stack is
 * seen, then the events.
 */
#ifndef MEMTRACE_BPF_STREAM_H
#define MEMTRACE_BPF_STREAM_H

#include <stdint.h>

#include "capture/bpf/capture.h"
#include "writer.h"

struct mt_bpf_streams;

struct mt_bpf_streams *mt_bpf_streams_new(struct mt_writer *rec, struct mt_bpf *b);
/* The event callback for mt_bpf_poll(); ctx is the mt_bpf_streams. */
/* The stream of PID's current image, everything read for it fed in (NULL:
 * none). */
struct mt_stream *mt_bpf_streams_of(struct mt_bpf_streams *s, uint32_t pid);
void mt_bpf_streams_event(void *ctx, const struct mt_bpf_event *ev);
/* A callback for mt_bpf_poll() that drops events (aggregation only). */
void mt_bpf_ignore_event(void *ctx, const struct mt_bpf_event *ev);
/* After each poll: hands what was encoded to the writer. */
void mt_bpf_streams_flush(struct mt_bpf_streams *s);
/* Looks for objects the traced processes mapped since (dlopen). */
void mt_bpf_streams_rescan(struct mt_bpf_streams *s);
/* Ends PID's stream (it exited, or tracing stops) with its losses and,
 * with HAVE_EXIT, its exit status; every stream when PID is 0. */
void mt_bpf_streams_end(struct mt_bpf_streams *s, struct mt_bpf *b, uint32_t pid, int have_exit,
			int64_t exit_status);
/* PID (the command's, through its execs) is the recording's main process. */
void mt_bpf_streams_set_main(struct mt_bpf_streams *s, uint32_t pid);
/* Begins PID's stream now, from /proc: a process attached to (-p) is
 * named and its objects described even if it exits before its first
 * event is read (its recording was "process N (?)", every frame an
 * address, its stdio buffer a leak). */
void mt_bpf_streams_begin(struct mt_bpf_streams *s, uint32_t pid);
/* PID exec'd PATH (and is stopped there): its entry, if any, ends here (an
 * EXEC record), and the new image's starts, named as /proc shows it now. */
void mt_bpf_streams_exec(struct mt_bpf_streams *s, struct mt_bpf *b, uint32_t pid,
			 const char *path);
void mt_bpf_streams_free(struct mt_bpf_streams *s);

#endif
