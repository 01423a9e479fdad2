/*
 * fallback.c - see fallback.h.
 *
 * BPF is opened only when the shim first asks, so that a recording that
 * needs no fallback costs nothing more.  The process asking waits for our
 * answer before its exec, so the probes are in place, and ptrace holds on to
 * it, before the new image runs a single instruction.
 */
#include "fallback.h"
#include "bpf_record.h"
#include "bpf_stream.h"

#include "base/util.h"
#include "format/signum.h"
#include "base/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#define RESCAN_EVERY_NS 1000000000ull

struct mt_fallback {
	struct mt_writer *rec;
	struct mt_bpf *b;
	struct mt_bpf_streams *streams;
	int failed; /* BPF could not be opened: not tried again */
	int seized; /* the command's process is followed with ptrace */
	int execs;  /* for mt_bpf_record_stop */
	uint64_t next_scan;
};

struct mt_fallback *mt_fallback_new(struct mt_writer *r)
{
	struct mt_fallback *f = xcalloc(1, sizeof *f);
	f->rec = r;
	return f;
}

int mt_fallback_attach(struct mt_fallback *f, pid_t pid, const char *path, char *err, size_t errlen)
{
	if (f->seized) {
		/* the process is followed already: its next exec re-probes */
		snprintf(err, errlen, "the BPF backend follows it already");
		return -1;
	}
	if (f->failed) {
		snprintf(err, errlen, "the BPF backend is unavailable");
		return -1;
	}
	if (!f->b) {
		struct mt_bpf_opts bo = { .events = 1, .mmaps = mt_gather_mmaps(), .lean = 1 };
		char why[512];
		if (mt_bpf_open(&f->b, &bo, why, sizeof why) < 0) {
			f->b = NULL;
			f->failed = 1;
			snprintf(err, errlen, "the BPF backend is unavailable (%s)", why);
			return -1;
		}
		f->streams = mt_bpf_streams_new(f->rec, f->b);
	}
	if (mt_bpf_record_attach(f->b, pid, path, err, errlen) < 0)
		return -1;
	mt_bpf_streams_set_main(f->streams, (uint32_t)pid);
	f->seized = 1;
	f->next_scan = mt_now_ns() + RESCAN_EVERY_NS;
	return 0;
}

int mt_fallback_active(const struct mt_fallback *f)
{
	return f && f->seized;
}

void mt_fallback_poll(struct mt_fallback *f)
{
	if (!f || !f->seized)
		return;
	mt_bpf_poll(f->b, 0, mt_bpf_streams_event, f->streams);
	mt_bpf_streams_flush(f->streams);
	if (mt_now_ns() >= f->next_scan) {
		f->next_scan = mt_now_ns() + RESCAN_EVERY_NS;
		mt_bpf_rescan(f->b);
		mt_bpf_streams_rescan(f->streams);
	}
}

void mt_fallback_stopped(struct mt_fallback *f, pid_t pid, int st)
{
	mt_bpf_record_stop(f->b, f->streams, pid, st, &f->execs);
}

void mt_fallback_end(struct mt_fallback *f, pid_t pid, int st)
{
	if (!f)
		return;
	if (f->streams) {
		mt_bpf_poll(f->b, 0, mt_bpf_streams_event, f->streams);
		if (f->seized) {
			int64_t code = WIFEXITED(st) ? WEXITSTATUS(st) :
						       -(int64_t)mt_sig_recorded(WTERMSIG(st));
			mt_bpf_streams_end(f->streams, f->b, (uint32_t)pid, 1, code);
		}
		mt_bpf_streams_end(f->streams, f->b, 0, 0, 0);
		mt_bpf_streams_free(f->streams);
	}
	mt_bpf_close(f->b);
	free(f);
}
