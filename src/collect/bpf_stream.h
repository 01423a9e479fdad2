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

struct mt_bpf_streams *mt_bpf_streams_new(struct mt_recorder *rec, struct mt_bpf *b);
/* The event callback for mt_bpf_poll(); ctx is the mt_bpf_streams. */
void mt_bpf_streams_event(void *ctx, const struct mt_bpf_event *ev);
/* A callback for mt_bpf_poll() that drops events (aggregation only). */
void mt_bpf_ignore_event(void *ctx, const struct mt_bpf_event *ev);
/* After each poll: hands what was encoded to the recorder. */
void mt_bpf_streams_flush(struct mt_bpf_streams *s);
/* Looks for objects the traced processes mapped since (dlopen). */
void mt_bpf_streams_rescan(struct mt_bpf_streams *s);
/* Ends PID's stream (it exited, or tracing stops) with its losses and,
 * with HAVE_EXIT, its exit status; every stream when PID is 0. */
void mt_bpf_streams_end(struct mt_bpf_streams *s, struct mt_bpf *b, uint32_t pid, int have_exit,
			int64_t exit_status);
void mt_bpf_streams_free(struct mt_bpf_streams *s);

/* What attach, top and sweep share: a BPF handle and, with an output path,
 * a recording of every event. */
struct mt_session {
	struct mt_bpf *b;
	struct mt_recorder *rec;
	struct mt_bpf_streams *streams;
	const char *output;
};

/* Loads the BPF programs with the map sizes of MAPS (events mode when OUTPUT
 * is set) and creates the recording.  Returns 0, or -1 with a one-line
 * reason in ERR. */
int mt_session_open(struct mt_session *s, const struct mt_bpf_opts *maps, const char *output, char *err,
		    size_t errlen);
/* The options every BPF command takes for its map sizes: --max-live N (live
 * blocks) and --max-stacks N (distinct stacks).  Returns 1 when argv[*i] was
 * one (moving *i past its value), 0 when not, -1 after a usage error. */
int mt_arg_bpf_maps(const char *cmd, int argc, char **argv, int *i, struct mt_bpf_opts *o);
/* Waits up to TIMEOUT_MS for events and records them. */
void mt_session_poll(struct mt_session *s, int timeout_ms);
/* Objects mapped since, new processes: about once a second. */
void mt_session_rescan(struct mt_session *s);
/* Ends the recording (saying where it is) and detaches: MT_EXIT_OK, or
 * MT_EXIT_RUNTIME if the recording could not be written. */
int mt_session_close(struct mt_session *s);

#endif
