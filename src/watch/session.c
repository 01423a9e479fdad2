/*
 * session.c - see session.h.
 */
#include "session.h"
#include "capture/bpf/procmaps.h"
#include "base/util.h"
#include "base/clock.h"

#include <string.h>

#define SCAN_EVERY_NS 1000000000ull

int mt_session_open(struct mt_session *s, const struct mt_bpf_opts *maps, const char *output,
		    int embed, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->output = output;
	struct mt_bpf_opts bo = *maps;
	bo.events = output != NULL;
	bo.mmaps = bo.events && mt_gather_mmaps(); /* a recording's: attach -o */
	if (mt_bpf_open(&s->b, &bo, err, errlen) < 0)
		return -1;
	if (output) {
		s->rec = mt_writer_open(output, 0, err, errlen);
		if (!s->rec) {
			mt_bpf_close(s->b);
			return -1;
		}
		if (embed)
			mt_writer_embed(s->rec, 0);
		s->streams = mt_bpf_streams_new(s->rec, s->b);
	}
	return 0;
}

int mt_session_start(struct mt_session *s, const struct mt_bpf_opts *maps, const char *output,
		     int embed, int all, const pid_t *pids, size_t npids, const char *what)
{
	char err[512];
	/* without BPF here, say so in one line and what works instead: the
	 * shim traces a program memtrace starts */
	if (!mt_bpf_available(err, sizeof err)) {
		mt_error(
			"cannot %s: %s; without BPF, run the program under `memtrace record COMMAND`",
			what, err);
		return -1;
	}
	if (mt_session_open(s, maps, output, embed, err, sizeof err) < 0) {
		mt_error("cannot %s: %s", what, err);
		return -1;
	}
	int r = all ? mt_bpf_trace_all(s->b, err, sizeof err) : 0;
	for (size_t i = 0; !r && !mt_stop && i < npids; i++)
		r = mt_bpf_trace_pid(s->b, pids[i], err, sizeof err);
	if (r < 0) {
		mt_error("%s", err);
		mt_session_close(s);
		return -2;
	}
	s->pids = pids;
	s->npids = npids;
	for (size_t i = 0; s->streams && i < npids; i++)
		mt_bpf_streams_begin(s->streams, (uint32_t)pids[i]);
	return 0;
}

void mt_session_poll(struct mt_session *s, int timeout_ms)
{
	mt_bpf_poll(s->b, timeout_ms, s->streams ? mt_bpf_streams_event : mt_bpf_ignore_event,
		    s->streams);
	if (s->streams)
		mt_bpf_streams_flush(s->streams);
	/* a dlopen seen in the mapping calls: its table now, not at the next scan */
	if (mt_bpf_rescan_new_code(s->b) > 0 && s->streams)
		mt_bpf_streams_rescan(s->streams);
}

void mt_session_rescan(struct mt_session *s)
{
	mt_bpf_rescan(s->b);
	if (s->streams)
		mt_bpf_streams_rescan(s->streams);
}

int mt_session_close(struct mt_session *s)
{
	int rc = MT_EXIT_OK;
	if (s->streams) {
		mt_bpf_streams_end(s->streams, s->b, 0, 0, 0);
		mt_bpf_streams_free(s->streams);
		if (mt_writer_close(s->rec) < 0)
			rc = MT_EXIT_RUNTIME;
		else
			mt_note("recording written to %s", s->output);
	}
	mt_bpf_close(s->b);
	memset(s, 0, sizeof *s);
	return rc;
}

static int any_alive(const pid_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (mt_pid_alive(pids[i]))
			return 1;
	return 0;
}

void mt_session_run(struct mt_session *s, struct mt_session_loop *l)
{
	uint64_t t0 = mt_now_ns(), next_scan = l->scan_at_start ? t0 : t0 + SCAN_EVERY_NS;
	l->start_ns = t0;
	while (!mt_stop) {
		mt_session_poll(s, l->poll_ms);
		uint64_t now = mt_now_ns();
		int rescanned = 0;
		if (l->duration > 0 && now - t0 >= (uint64_t)(l->duration * 1e9))
			break;
		if (now >= next_scan) {
			next_scan = now + SCAN_EVERY_NS;
			mt_session_rescan(s);
			if (l->watch)
				mt_watch_refresh(l->watch);
			if (l->exited && s->npids && !any_alive(s->pids, s->npids)) {
				mt_note("%s", l->exited);
				break;
			}
			rescanned = 1;
		}
		if (l->tick && l->tick(l->ctx, now - t0, rescanned))
			break;
	}
}
