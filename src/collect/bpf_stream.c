/*
 * bpf_stream.c - see bpf_stream.h.
 *
 * An allocation's way from the kernel to the file, and where each step's
 * work is done (once):
 *   struct mtb_rec (bpf/memtrace.h), the ring buffer's record: record
 *     type and function id as codec.h numbers them (format/allocfns.h), the
 *     stack as a key of the kernel's maps;
 *   struct mt_bpf_event (capture/bpf/capture.h), filled from it by
 *     on_record (memtrace.c): the same fields; the stack key resolved to an
 *     id and frames (stacks.c), lean mode's frees paired (lean.c), a tuning
 *     call's registers read as its arguments (TUNE);
 *   codec records (format/codec.h), encoded here: the time kept to the
 *     millisecond, each stack written once per process with its allocator;
 *   the recorder's filters (writer.c): cull (format/cull.c, when asked)
 *     holds short-lived blocks back, compact (collect/compact.c) names
 *     blocks by serial; both decode and re-encode the shim's records alike.
 */
#include "bpf_stream.h"
#include "format/codec.h"
#include "capture/bpf/procmaps.h"
#include "base/ptrmap.h"
#include "base/util.h"
#include "writer.h"
#include "base/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct proc {
	uint32_t pid;
	struct mt_stream *stream;
	struct mt_enc enc;
	struct mt_ptrmap stacks; /* stack ids already written (value unused) */
	char **mods;		 /* "start:path" of objects already written */
	size_t nmods, mods_cap;
	uint8_t *buf;
	size_t len;
};

struct mt_bpf_streams {
	struct mt_writer *rec;
	struct mt_bpf *b;
	uint64_t t0;	   /* when tracing began (CLOCK_MONOTONIC) */
	uint32_t main_pid; /* the recorded command's process (0: none) */
	struct proc **procs;
	size_t n, cap;
};

#define BUF (1u << 20)

struct mt_bpf_streams *mt_bpf_streams_new(struct mt_writer *rec, struct mt_bpf *b)
{
	struct mt_bpf_streams *s = xcalloc(1, sizeof *s);
	s->rec = rec;
	s->b = b;
	s->t0 = mt_now_ns();
	return s;
}

static void flush_proc(struct proc *p)
{
	if (p->len)
		mt_stream_feed(p->stream, p->buf, p->len, 0);
	p->len = 0;
}

static uint8_t *room(struct proc *p, size_t n)
{
	if (p->len + n > BUF)
		flush_proc(p);
	return p->buf + p->len;
}

static void put(struct proc *p, uint8_t *end)
{
	p->len = (size_t)(end - p->buf);
}

/* MODULE records for the objects P maps that it has not described yet. */
static void emit_modules(struct proc *p)
{
	struct mt_pinfo pi;
	if (mt_pinfo_read(&pi, (pid_t)p->pid) < 0)
		return;
	for (size_t i = 0; i < pi.nmods; i++) {
		const struct mt_pmod *m = &pi.mods[i];
		char key[4200];
		snprintf(key, sizeof key, "%llx:%s", (unsigned long long)m->start, m->path);
		int seen = 0;
		for (size_t k = 0; k < p->nmods && !seen; k++)
			seen = !strcmp(p->mods[k], key);
		if (seen)
			continue;
		mt_grow(&p->mods, &p->mods_cap, p->nmods, sizeof *p->mods);
		p->mods[p->nmods++] = xstrdup(key);
		size_t plen = strlen(m->path);
		uint8_t *w = room(p, 64 + plen + m->build_id_len);
		put(p, mt_enc_module(w, m->bias, m->start, m->end, m->path, plen, m->build_id,
				     m->build_id_len));
	}
	mt_pinfo_free(&pi);
}

/* Event times are kept to the millisecond, as the shim's coarse clock keeps
 * them: nanosecond deltas are noise that would make recordings 30 times
 * larger, and no figure needs them. */
#define TS_GRAIN 1000000ull

/* The stream of PID, begun if need be; an image that starts at an exec
 * (AT_EXEC) starts at TS, not when the process did. */
static struct proc *proc_for_image(struct mt_bpf_streams *s, uint32_t pid, uint64_t ts, int at_exec)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->procs[i]->pid == pid)
			return s->procs[i];
	struct proc *p = xcalloc(1, sizeof *p);
	p->pid = pid;
	p->stream = mt_stream_new(s->rec);
	mt_stream_watch(p->stream, pid);
	p->buf = xmalloc(BUF);
	mt_ptrmap_xinit(&p->stacks, 1u << 12);
	mt_grow(&s->procs, &s->cap, s->n, sizeof *s->procs);
	s->procs[s->n++] = p;

	struct mt_pinfo pi;
	int have = mt_pinfo_read(&pi, (pid_t)pid) == 0;
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	/* The process's times count from when it was traced: its start, or
	 * the start of tracing if it ran before (not its first event, which
	 * may come long after). */
	uint64_t start = have && pi.start_ns > s->t0 ? pi.start_ns : s->t0;
	if (start > ts || at_exec)
		start = ts;
	uint64_t now = mt_timespec_ns(mono);
	uint64_t unix_ns = mt_timespec_ns(rt) - (now > start ? now - start : 0);
	const char *exe = have && pi.exe ? pi.exe : "";
	const char *argv = have && pi.argv ? pi.argv : "";
	size_t argv_len = have && pi.argv ? pi.argv_len : 0;
	uint8_t *w = room(p, 128 + strlen(exe) + argv_len);
	put(p, mt_enc_process(&p->enc, w, pid, have ? (uint32_t)pi.ppid : 0, unix_ns,
			      start - start % TS_GRAIN, "bpf", exe, strlen(exe), argv, argv_len));
	if (have)
		mt_pinfo_free(&pi);
	if (pid == s->main_pid) {
		w = room(p, 16);
		put(p, mt_enc_main(w));
	}
	if (mt_bpf_sample_mean(s->b)) {
		w = room(p, MT_REC_MAX_SMALL);
		put(p, mt_enc_sampled(w, mt_bpf_sample_mean(s->b)));
	}
	emit_modules(p);
	return p;
}

static struct proc *proc_for(struct mt_bpf_streams *s, uint32_t pid, uint64_t ts)
{
	return proc_for_image(s, pid, ts, 0);
}

struct mt_stream *mt_bpf_streams_of(struct mt_bpf_streams *s, uint32_t pid)
{
	for (size_t i = s->n; i-- > 0;)
		if (s->procs[i]->pid == pid) {
			flush_proc(s->procs[i]);
			return s->procs[i]->stream;
		}
	return NULL;
}

void mt_bpf_streams_set_main(struct mt_bpf_streams *s, uint32_t pid)
{
	s->main_pid = pid;
}

void mt_bpf_streams_begin(struct mt_bpf_streams *s, uint32_t pid)
{
	uint64_t ts = mt_now_ns();
	proc_for(s, pid, ts - ts % TS_GRAIN);
}

/* The file behind the mapping M that PID made, read now from its
 * /proc/PID/map_files link: unknown (0) once the mapping is gone or was
 * split (the descriptor, read instead, could name another file by then).
 * The length, 0 if not. */
static size_t mapped_file(uint32_t pid, const struct mt_mapcall *m, char *out, size_t len)
{
	char link[96];
	if (!m->addr || !m->len)
		return 0;
	snprintf(link, sizeof link, "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->addr,
		 (unsigned long long)(m->addr + ((m->len + 4095) & ~4095ull)));
	ssize_t n = readlink(link, out, len);
	return n > 0 ? (size_t)n : 0;
}

/* A mapping call: an MMAP record with its stack in it. */
static void map_event(struct proc *p, const struct mt_bpf_event *ev, uint64_t ts)
{
	char path[4096];
	size_t plen = 0;
	if (ev->map.kind == MT_MAP_MMAP && ev->map.fd >= 0 && !ev->map.error)
		plen = mapped_file(p->pid, &ev->map, path, sizeof path);
	unsigned n = ev->nframes < MT_MAX_FRAMES ? ev->nframes : MT_MAX_FRAMES;
	uint8_t *w = room(p, MT_REC_MAX_STACK + 176 + plen);
	w = mt_enc_thread(&p->enc, w, ev->tid);
	put(p, mt_enc_mmap(w, ts, &ev->map, ev->frames, n, path, plen));
}

static void end_proc(struct mt_bpf_streams *s, size_t i, struct mt_bpf *b, int have_exit,
		     int64_t st);

/* Process PID exited (the kernel saw its last thread go; its events are all
 * in the ring before this): its stream ends with its status.  Not the
 * recorded command's, whose EXIT record comes from waitpid; not a process
 * without a stream (nothing recorded of it). */
static void exit_event(struct mt_bpf_streams *s, const struct mt_bpf_event *ev)
{
	if (ev->pid == s->main_pid)
		return;
	for (size_t i = s->n; i-- > 0;)
		if (s->procs[i]->pid == ev->pid)
			end_proc(s, i, s->b, 1, ev->status);
}

void mt_bpf_streams_event(void *ctx, const struct mt_bpf_event *ev)
{
	struct mt_bpf_streams *s = ctx;
	if (ev->type == MT_REC_EXIT) {
		exit_event(s, ev);
		return;
	}
	uint64_t ts = ev->ts - ev->ts % TS_GRAIN; /* to the millisecond */
	struct proc *p = proc_for(s, ev->pid, ts);
	if (ev->type == MT_BPF_EV_MALLOPT) {
		/* its stack goes in the record: it is no allocation site */
		unsigned n = ev->nframes < MT_MAX_FRAMES ? ev->nframes : MT_MAX_FRAMES;
		uint8_t *w = room(p, MT_REC_MAX_MALLOPT);
		put(p, mt_enc_mallopt(w, ts, &ev->tune, ev->frames, n));
		return;
	}
	if (ev->type == MT_REC_EXT) {
		map_event(p, ev, ts);
		return;
	}
	if (ev->type == MT_BPF_EV_CHILD) {
		put(p, mt_enc_child(room(p, MT_REC_MAX_SMALL), ts, ev->child));
		return;
	}
	uint64_t stack = ev->stack_id;
	if (stack && ev->type != MT_REC_FREE) {
		uint64_t dummy;
		if (!mt_ptrmap_take(&p->stacks, stack, &dummy)) {
			unsigned n = ev->nframes < MT_MAX_FRAMES ? ev->nframes : MT_MAX_FRAMES;
			uint8_t *w = room(p, MT_REC_MAX_STACK);
			put(p, mt_enc_stack(w, stack, ev->frames, n));
			const char *obj = mt_bpf_object_path(s->b, ev->object);
			if (obj) {
				size_t len = strlen(obj);
				w = room(p, 32 + len);
				put(p, mt_enc_allocator(w, stack, obj, len));
			}
		}
		mt_ptrmap_xput(&p->stacks, stack, 1);
	}
	uint8_t *w = room(p, 2 * MT_REC_MAX_SMALL);
	w = mt_enc_thread(&p->enc, w, ev->tid);
	switch (ev->type) {
	case MT_REC_ALLOC:
		w = mt_enc_alloc(&p->enc, w, ev->fn, ts, ev->ptr, ev->size, stack);
		break;
	case MT_REC_REALLOC:
		w = mt_enc_realloc(&p->enc, w, ev->fn, ts, ev->old_ptr, ev->ptr, ev->size, stack);
		break;
	case MT_REC_FREE:
		w = mt_enc_free(&p->enc, w, ts, ev->ptr);
		break;
	default:
		return;
	}
	put(p, w);
}

void mt_bpf_ignore_event(void *ctx, const struct mt_bpf_event *ev)
{
	(void)ctx;
	(void)ev;
}

void mt_bpf_streams_flush(struct mt_bpf_streams *s)
{
	for (size_t i = 0; i < s->n; i++) {
		flush_proc(s->procs[i]);
		mt_stream_tick(s->procs[i]->stream);
	}
}

void mt_bpf_streams_rescan(struct mt_bpf_streams *s)
{
	for (size_t i = 0; i < s->n; i++)
		emit_modules(s->procs[i]);
}

static void end_proc(struct mt_bpf_streams *s, size_t i, struct mt_bpf *b, int have_exit,
		     int64_t st)
{
	struct proc *p = s->procs[i];
	flush_proc(p);
	uint64_t lost[MT_LOST_KIND_COUNT] = { 0 };
	if (b)
		mt_bpf_lost(b, p->pid, lost);
	mt_stream_end(p->stream, lost, have_exit, st);
	mt_ptrmap_destroy(&p->stacks);
	for (size_t k = 0; k < p->nmods; k++)
		free(p->mods[k]);
	free(p->mods);
	free(p->buf);
	free(p);
	s->procs[i] = s->procs[--s->n];
}

void mt_bpf_streams_end(struct mt_bpf_streams *s, struct mt_bpf *b, uint32_t pid, int have_exit,
			int64_t exit_status)
{
	for (size_t i = s->n; i-- > 0;)
		if (!pid || s->procs[i]->pid == pid)
			end_proc(s, i, b, have_exit, exit_status);
}

void mt_bpf_streams_exec(struct mt_bpf_streams *s, struct mt_bpf *b, uint32_t pid, const char *path)
{
	uint64_t ts = mt_now_ns();
	ts -= ts % TS_GRAIN;
	for (size_t i = s->n; i-- > 0;)
		if (s->procs[i]->pid == pid) {
			struct proc *p = s->procs[i];
			size_t len = strlen(path);
			uint8_t *w = room(p, 64 + len);
			put(p, mt_enc_exec(w, ts, MT_EXEC_TRACED, path, len, "", 0));
			end_proc(s, i, b, 0, 0);
		}
	/* Named now, while /proc shows this image: its first event may be
	 * read after the next exec. */
	proc_for_image(s, pid, ts, 1);
}

void mt_bpf_streams_free(struct mt_bpf_streams *s)
{
	mt_bpf_streams_end(s, NULL, 0, 0, 0);
	free(s->procs);
	free(s);
}
