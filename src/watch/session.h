/*
 * session.h - what attach, top and sweep share: a BPF session (the handle
 * and, with an output path, a recording of every event) and the loop that
 * polls it, rescans about once a second and hands each turn to the command
 * until Ctrl-C, a time limit, the command itself, or the exit of every
 * watched process ends it.
 */
#ifndef MEMTRACE_SESSION_H
#define MEMTRACE_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/bpf/capture.h"
#include "collect/bpf_stream.h"
#include "watch.h"
#include "collect/writer.h"

struct mt_session {
	struct mt_bpf *b;
	struct mt_writer *rec;
	struct mt_bpf_streams *streams;
	const char *output;
	const pid_t *pids; /* those mt_session_start traced by pid */
	size_t npids;
};

/* Loads the BPF programs with the map sizes of MAPS (events mode when OUTPUT
 * is set) and creates the recording; EMBED: with the binaries the processes
 * map (mt_writer_embed).  Returns 0, or -1 with a one-line reason in ERR. */
int mt_session_open(struct mt_session *s, const struct mt_bpf_opts *maps, const char *output,
		    int embed, char *err, size_t errlen);
/* mt_session_open, then tracing every process (ALL: those started later
 * too) and PIDS (kept by the session: they must outlive it).  Returns 0;
 * or, after the error message, -1 when the session could not be opened
 * ("cannot WHAT: ..."), -2 when a process could not be traced (the session
 * is closed again). */
int mt_session_start(struct mt_session *s, const struct mt_bpf_opts *maps, const char *output,
		     int embed, int all, const pid_t *pids, size_t npids, const char *what);
/* Waits up to TIMEOUT_MS for events and records them. */
void mt_session_poll(struct mt_session *s, int timeout_ms);
/* Objects mapped since, new processes: about once a second. */
void mt_session_rescan(struct mt_session *s);
/* Ends the recording (saying where it is) and detaches: MT_EXIT_OK, or
 * MT_EXIT_RUNTIME if the recording could not be written. */
int mt_session_close(struct mt_session *s);

/* How mt_session_run goes round. */
struct mt_session_loop {
	int poll_ms;		/* how long each turn waits for events */
	double duration;	/* stop after this many seconds (0: no limit) */
	int scan_at_start;	/* the first rescan at once, not after a second */
	struct mt_watch *watch; /* refreshed at every rescan, when set */
	/* when set, stop saying so once no process traced by pid is alive
	 * (with none, as with --all, never) */
	const char *exited;
	/* After every turn, ELAPSED_NS after the start, RESCANNED when the turn
	 * rescanned: the command's part.  Nonzero stops the loop. */
	int (*tick)(void *ctx, uint64_t elapsed_ns, int rescanned);
	void *ctx;
	uint64_t start_ns; /* set by mt_session_run: when it started (mt_now_ns) */
};

/* Polls S until mt_stop (Ctrl-C, SIGTERM, SIGHUP) or L says to stop. */
void mt_session_run(struct mt_session *s, struct mt_session_loop *l);

#endif
