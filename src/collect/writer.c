/*
 * writer.c - see writer.h.
 */
#include "writer.h"
#include "compact.h"
#include "format/cull.h"
#include "format/format.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define FLUSH_NS 250000000ull
#define CHUNK_TARGET (4u << 20)

struct mt_recorder {
	int fd;
	char *path;
	ZSTD_CCtx *zc;
	uint8_t *scratch;
	size_t scratch_len;
	uint32_t next_stream;
	uint64_t cull_ns;
	int failed;
};

struct mt_stream {
	struct mt_recorder *r;
	uint32_t id;
	uint8_t *buf; /* records not yet written; always ends on a record boundary */
	size_t len, cap;
	uint64_t last_write;
	struct mt_cull *cull; /* records -> cull -> compact -> buf */
	struct mt_compact *compact;
};

uint64_t mt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct mt_recorder *mt_recorder_open(const char *path, uint64_t cull_ns, char *err, size_t errlen)
{
	struct mt_recorder *r = xcalloc(1, sizeof *r);
	r->fd = mt_file_create(path);
	if (r->fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		free(r);
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
	return r;
}

const char *mt_recorder_path(const struct mt_recorder *r)
{
	return r->path;
}

int mt_recorder_close(struct mt_recorder *r)
{
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

static void write_chunk(struct mt_stream *s)
{
	struct mt_recorder *r = s->r;
	if (!s->len)
		return;
	size_t need = mt_chunk_bound(s->len);
	if (need > r->scratch_len) {
		free(r->scratch);
		r->scratch = xmalloc(need);
		r->scratch_len = need;
	}
	if (mt_chunk_write_zstd(r->fd, r->zc, s->id, s->buf, s->len, r->scratch, r->scratch_len) <
	    0) {
		if (!r->failed)
			mt_error("cannot write %s: %s", r->path, strerror(errno));
		r->failed = 1;
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

struct mt_stream *mt_stream_new(struct mt_recorder *r)
{
	struct mt_stream *s = xcalloc(1, sizeof *s);
	s->r = r;
	s->id = r->next_stream++;
	s->cap = CHUNK_TARGET + (1u << 20);
	s->buf = xmalloc(s->cap);
	s->last_write = mt_now_ns();
	s->compact = mt_compact_new(append, s);
	if (r->cull_ns && !(s->cull = mt_cull_new(r->cull_ns, cull_out, s)))
		mt_oom(sizeof(struct mt_cull *));
	return s;
}

void mt_stream_tick(struct mt_stream *s)
{
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
	append(s, tail, (size_t)(w - tail));
	write_chunk(s);
	mt_cull_free(s->cull);
	mt_compact_free(s->compact);
	free(s->buf);
	free(s);
}
