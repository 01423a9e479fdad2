/*
 * writer.c - see writer.h.
 */
#include "writer.h"
#include "rss.h"
#include "compact.h"
#include "embed.h"
#include "format/cull.h"
#include "format/format.h"
#include "base/util.h"
#include "base/clock.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define FLUSH_NS 250000000ull
#define CHUNK_TARGET (4u << 20)

struct mt_writer {
	int fd;
	char *path;
	ZSTD_CCtx *zc;
	uint8_t *scratch;
	size_t scratch_len;
	uint32_t next_stream;
	uint64_t cull_ns;
	uint64_t rss_ns; /* between samples of each process's memory; 0: none */
	int leak_scans;	 /* streams keep their live blocks' sizes */
	int scan_quiet;
	int scan_sampled; /* mt_writer_leak_scans */
	int failed;
	struct mt_embed *embed; /* --embed-binaries: the files mapped; NULL: none */
};

struct mt_stream {
	struct mt_writer *r;
	uint32_t id;
	uint8_t *buf; /* records not yet written; always ends on a record boundary */
	size_t len, cap;
	uint64_t last_write;
	struct mt_cull *cull; /* records -> cull -> compact -> buf */
	struct mt_compact *compact;
	/* After a chunk could not be written (a full disk) the stream cannot
	 * go on: it decodes from its start, and past a gap its records would
	 * name other blocks and stacks.  Its later chunks are only counted.
	 * The count, with what the dropped chunks held that needs no stream
	 * state (the exit, the PROCESS record if the file has none), goes in
	 * a chunk of its own, stored uncompressed and of a fixed size: placed
	 * once, as soon as it fits (the space a failed chunk held was given
	 * back, so usually at once), then rewritten in place, where it needs
	 * no more room however the recording ends. */
	int dropped;
	int started; /* the stream's PROCESS record is in the file */
	struct mt_salvage lost;
	uint8_t *process; /* lost.process, copied out of buf */
	int64_t loss_at;  /* offset of the loss chunk; -1: not placed yet */
	size_t loss_len;
	uint32_t pid;	   /* whose memory is sampled (mt_stream_watch); 0: none */
	uint64_t last_rss; /* when it last was */
	const void *ring;  /* memtrace's ring in that process (mt_stream_exclude) */
	size_t ring_len;
};

static struct mt_writer *open_writer(const char *path, int made_up, uint64_t cull_ns, char *err,
				     size_t errlen)
{
	struct mt_writer *r = xcalloc(1, sizeof *r);
	r->fd = made_up ? mt_file_create_new(path) : mt_file_create(path);
	if (r->fd < 0) {
		int e = errno;
		const char *why = mt_file_refused(path, e);
		if (why)
			snprintf(err, errlen, "%s %s", path, why);
		else
			snprintf(err, errlen, "cannot create %s: %s", path, strerror(e));
		free(r);
		errno = e;
		return NULL;
	}
	/* zstd at level 9: on the compact records it costs a few ms per MB and
	 * makes files a third smaller than zlib's best (sqlite3: 31 KB, as small
	 * as heaptrack's; a malloc/free loop: 12 KB against heaptrack's 42 KB) */
	r->zc = ZSTD_createCCtx();
	if (!r->zc || ZSTD_isError(ZSTD_CCtx_setParameter(r->zc, ZSTD_c_compressionLevel, 9))) {
		ZSTD_freeCCtx(r->zc);
		snprintf(err, errlen, "zstd initialisation failed");
		close(r->fd);
		free(r);
		return NULL;
	}
	r->path = xstrdup(path);
	r->cull_ns = cull_ns;
	r->rss_ns = 10 * 1000000ull;
	return r;
}

struct mt_writer *mt_writer_open(const char *path, uint64_t cull_ns, char *err, size_t errlen)
{
	return open_writer(path, 0, cull_ns, err, errlen);
}

struct mt_writer *mt_writer_open_new(const char *path, uint64_t cull_ns, char *err, size_t errlen)
{
	return open_writer(path, 1, cull_ns, err, errlen);
}

const char *mt_writer_path(const struct mt_writer *r)
{
	return r->path;
}

void mt_writer_embed(struct mt_writer *r, int quiet)
{
	if (!r->embed)
		r->embed = mt_embed_new(quiet);
}

/* The binaries onto the recording, before it is closed: a recording cut
 * short, or written to a device, gets none. */
static void embed(struct mt_writer *r)
{
	struct stat st;
	char err[PATH_MAX + 128];
	if (!r->failed && fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    mt_embed_write(r->embed, r->fd, r->path, err, sizeof err) < 0)
		mt_warning("%s", err); /* the recording stands without them */
	mt_embed_free(r->embed);
	r->embed = NULL;
}

int mt_writer_close(struct mt_writer *r)
{
	if (r->embed)
		embed(r);
	int failed = r->failed;
	if (fsync(r->fd) < 0 && errno != EINVAL && errno != EROFS)
		mt_warning("fsync %s: %s", r->path, strerror(errno));
	if (close(r->fd) < 0 && !failed) {
		mt_error("cannot write %s: %s", r->path, strerror(errno));
		failed = 1;
	}
	ZSTD_freeCCtx(r->zc);
	free(r->scratch);
	free(r->path);
	free(r);
	return failed ? -1 : 0;
}

/* Writes one chunk of stream ID; the first failure is reported. */
static int put_chunk(struct mt_writer *r, uint32_t id, const uint8_t *raw, size_t len)
{
	size_t need = mt_chunk_bound(len);
	if (need > r->scratch_len) {
		free(r->scratch);
		r->scratch = xmalloc(need);
		r->scratch_len = need;
	}
	if (mt_chunk_write_zstd(r->fd, r->zc, id, raw, len, r->scratch, r->scratch_len) == 0)
		return 0;
	if (!r->failed)
		mt_error("cannot write %s: %s (what does not fit is counted as lost)", r->path,
			 strerror(errno));
	r->failed = 1;
	return -1;
}

/* Counts the events of the chunk in s->buf, which will not be written, and
 * keeps what it held that the loss chunk can carry. */
static void drop(struct mt_stream *s)
{
	struct mt_salvage sv = { 0 }, *p = &s->lost;
	mt_chunk_salvage(s->buf, s->len, &sv);
	p->events += sv.events;
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		p->lost[k] += sv.lost[k];
	if (sv.have_exit) {
		p->have_exit = 1;
		p->exit_ts = sv.exit_ts;
		p->exit_status = sv.exit_status;
	}
	/* (the PROCESS record opens a stream's first chunk: it is known before
	 * the loss chunk is placed, which keeps that chunk's size) */
	if (sv.process && !s->started && !s->process && s->loss_at < 0) {
		s->process = xmalloc(sv.process_len);
		memcpy(s->process, sv.process, sv.process_len);
		p->process_len = sv.process_len;
	}
	s->dropped = 1;
}

/* Places or rewrites the loss chunk.  An output that cannot seek (a pipe)
 * gets it once, at the end (FINAL), since it could not be rewritten. */
static void write_loss(struct mt_stream *s, int final)
{
	struct mt_writer *r = s->r;
	size_t plen = s->process ? s->lost.process_len : 0;
	uint8_t *buf = xmalloc(MT_CHUNK_HEADER_SIZE + MT_LOSS_SIZE(plen));
	size_t len = mt_loss_records(&s->lost, s->process, plen, buf + MT_CHUNK_HEADER_SIZE);
	if (s->loss_at == INT64_MAX) {
		/* placed in a pipe: it stays as it is */
	} else if (s->loss_at >= 0 && len == s->loss_len) {
		if (mt_chunk_rewrite(r->fd, (uint64_t)s->loss_at, buf, s->id, len) < 0 &&
		    !r->failed)
			mt_error("cannot write %s: %s", r->path, strerror(errno));
	} else if (s->loss_at < 0) {
		off_t at = lseek(r->fd, 0, SEEK_CUR);
		if ((at >= 0 || final) &&
		    mt_chunk_put(r->fd, buf, s->id, len, (uint32_t)len, 0) == 0) {
			s->loss_at = at >= 0 ? at : INT64_MAX; /* a pipe: once */
			s->loss_len = len;
		}
	}
	free(buf);
}

static void write_chunk(struct mt_stream *s)
{
	if (!s->len)
		return;
	if (!s->dropped && put_chunk(s->r, s->id, s->buf, s->len) == 0) {
		s->started = 1;
	} else {
		drop(s);
		write_loss(s, 0);
	}
	s->len = 0;
	s->last_write = mt_now_ns();
}

static void append(void *ctx, const uint8_t *p, size_t n)
{
	struct mt_stream *s = ctx;
	if (s->len + n > s->cap && s->len)
		write_chunk(s);
	if (n > s->cap) {
		s->buf = xrealloc(s->buf, n);
		s->cap = n;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static void cull_out(void *ctx, const uint8_t *p, size_t n)
{
	mt_compact_feed(((struct mt_stream *)ctx)->compact, p, n);
}

static void note_module(void *ctx, const struct mt_event *ev)
{
	struct mt_stream *s = ctx;
	mt_embed_note(s->r->embed, s->pid, ev);
}

struct mt_stream *mt_stream_new(struct mt_writer *r)
{
	struct mt_stream *s = xcalloc(1, sizeof *s);
	s->r = r;
	s->id = r->next_stream++;
	s->cap = CHUNK_TARGET + (1u << 20);
	s->buf = xmalloc(s->cap);
	s->last_write = mt_now_ns();
	s->loss_at = -1;
	s->compact = mt_compact_new(append, s);
	if (r->embed)
		mt_compact_on_module(s->compact, note_module);
	if (r->leak_scans)
		mt_compact_track_sizes(s->compact);
	if (r->cull_ns && !(s->cull = mt_cull_new(r->cull_ns, cull_out, s)))
		mt_oom(sizeof(struct mt_cull *));
	return s;
}

void mt_writer_rss_interval(struct mt_writer *r, uint64_t ns)
{
	r->rss_ns = ns;
}

void mt_writer_leak_scans(struct mt_writer *r, int quiet, int sampled)
{
	r->leak_scans = 1;
	r->scan_quiet = quiet;
	r->scan_sampled = sampled;
}

int mt_stream_scans(const struct mt_stream *s, int *quiet)
{
	*quiet = s->r->scan_quiet;
	return s->r->leak_scans;
}

struct blocks {
	struct mt_scan_block *v;
	size_t n, cap;
};

static void add_block(void *ctx, uint64_t addr, uint64_t size)
{
	struct blocks *b = ctx;
	mt_grow(&b->v, &b->cap, b->n, sizeof *b->v);
	b->v[b->n++] = (struct mt_scan_block){ addr, size };
}

static int by_addr(const void *a, const void *b)
{
	const struct mt_scan_block *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The SCAN record, then the lost blocks a LEAKS record (of one kind) at a
 * time, through compact, which names them by serial. */
static void write_scan(struct mt_stream *s, const struct blocks *b, const uint8_t *kinds,
		       const struct mt_scan_result *res)
{
	static uint8_t rec[MT_REC_MAX_LEAKS > 256 ? MT_REC_MAX_LEAKS : 256];
	struct mt_scan_summary sum = { .ns = res->ns,
				       .scanned = res->scanned,
				       .roots = res->roots,
				       .complete = (uint32_t)res->complete };
	size_t why = res->complete ? 0 : strnlen(res->why, sizeof res->why);
	mt_compact_feed(s->compact, rec,
			(size_t)(mt_enc_scan(rec, mt_now_ns(), &sum, res->why, why) - rec));
	for (int k = 0; res->complete && k < MT_LEAK_REACHABLE; k++) {
		uint64_t keys[MT_MAX_FRAMES];
		unsigned n = 0;
		for (size_t i = 0; i <= b->n; i++) {
			if (n == MT_MAX_FRAMES || (i == b->n && n)) {
				mt_compact_feed(
					s->compact, rec,
					(size_t)(mt_enc_leaks(rec, (enum mt_leak_kind)k, keys, n) -
						 rec));
				n = 0;
			}
			if (i < b->n && kinds[i] == k)
				keys[n++] = b->v[i].addr;
		}
	}
}

int mt_stream_leak_scan(struct mt_stream *s, const struct mt_stopped *st,
			struct mt_scan_result *res)
{
	/* what culling holds back goes in first: the blocks are all known */
	mt_stream_feed(s, NULL, 0, 1);
	struct blocks b = { 0 };
	mt_compact_each_live(s->compact, add_block, &b);
	if (b.n) /* (b.v is NULL without blocks) */
		qsort(b.v, b.n, sizeof *b.v, by_addr);
	uint8_t *kinds = xmalloc(b.n ? b.n : 1);
	struct mt_scan_opts o = { .heap_gaps_are_roots = s->r->scan_sampled };
	int r = mt_scan_process(st, b.v, b.n, &o, kinds, res);
	res->sampled = s->r->scan_sampled;
	if (r == 0)
		write_scan(s, &b, kinds, res);
	free(kinds);
	free(b.v);
	return r;
}

void mt_stream_watch(struct mt_stream *s, uint32_t pid)
{
	s->pid = pid;
}

void mt_stream_exclude(struct mt_stream *s, const void *ring, size_t len)
{
	s->ring = ring;
	s->ring_len = len;
}

/* A sample of the process's memory, every rss_ns (or now, with LAST).  It
 * goes straight into the stream (its time is absolute and it changes no
 * decoder state), once the stream has begun with its PROCESS record. */
static void sample(struct mt_stream *s, int last)
{
	uint64_t now = mt_now_ns();
	if (!s->pid || !s->r->rss_ns || s->dropped || (!s->started && !s->len) ||
	    (!last && now - s->last_rss < s->r->rss_ns))
		return;
	s->last_rss = now;
	struct mt_rss m;
	uint8_t rec[MT_REC_MAX_RSS];
	if (mt_rss_read(s->pid, &m) < 0)
		return;
	if (s->ring)
		mt_rss_exclude(&m, s->ring, s->ring_len);
	append(s, rec, (size_t)(mt_enc_rss(rec, now, &m) - rec));
}

void mt_stream_last_sample(struct mt_stream *s)
{
	if (s)
		sample(s, 1);
}

void mt_stream_tick(struct mt_stream *s)
{
	sample(s, 0);
	if (s->len >= CHUNK_TARGET || (s->len && mt_now_ns() - s->last_write >= FLUSH_NS))
		write_chunk(s);
}

int mt_stream_feed(struct mt_stream *s, const uint8_t *records, size_t len, int final)
{
	size_t used = len;
	/* With culling, feed even when nothing is new: pending allocations age
	 * into the file while the process is idle. */
	if (s->cull)
		used = mt_cull_feed(s->cull, records, len, mt_now_ns(), final);
	else if (len)
		used = mt_compact_feed(s->compact, records, len);
	if (final)
		write_chunk(s);
	else
		mt_stream_tick(s);
	return used == len ? 0 : -1;
}

void mt_stream_end(struct mt_stream *s, const uint64_t lost[MT_LOST_KIND_COUNT], int have_exit,
		   int64_t exit_status)
{
	mt_stream_feed(s, NULL, 0, 1);
	uint8_t tail[16 * MT_LOST_KIND_COUNT + 32], *w = tail;
	for (int k = 0; lost && k < MT_LOST_KIND_COUNT; k++)
		if (lost[k])
			w = mt_enc_lost(w, (unsigned)k, lost[k]);
	if (have_exit)
		w = mt_enc_exit(w, mt_now_ns(), exit_status);
	/* after a dropped chunk these go into the loss chunk, which a last
	 * try places if it never could before */
	append(s, tail, (size_t)(w - tail));
	write_chunk(s);
	if (s->dropped)
		write_loss(s, 1);
	free(s->process);
	mt_cull_free(s->cull);
	mt_compact_free(s->compact);
	free(s->buf);
	free(s);
}
