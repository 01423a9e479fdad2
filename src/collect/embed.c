/*
 * embed.c - putting the binaries a recording's processes mapped into the
 * recording (record --embed-binaries), so that it can be symbolized on a
 * machine that does not have them (a board's recording read on a
 * workstation, a container's after the image is gone).
 *
 * It runs once the recording is complete: the modules its streams declared
 * are read back (every stream, so children, execs and dlopens are in), each
 * file whose build-id still matches the recorded one goes in once (two
 * processes mapping libc share it), with its separate debug file from
 * /usr/lib/debug/.build-id when the system has one.  Objects are appended
 * in their own stream (MT_STREAM_OBJECTS) as OBJECT records cut in pieces,
 * zstd-compressed like every chunk, so a reader that does not want them
 * skips whole chunks.  A file that changed since it was mapped is left out
 * and named: a wrong binary would name wrong functions.  Checking and
 * writing one file is format/objwrite.c's, which the standalone shim's
 * MEMTRACE_WRITE_BINARIES_TO_OUTPUT shares.
 */
#include "embed.h"
#include "base/util.h"
#include "format/format.h"
#include "format/objwrite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* Records per chunk: chunks of 8 MiB keep the reader's buffers small while
 * compressing well. */
#define CHUNK_RAW (8u << 20)

struct object {
	char *path;
	uint8_t build_id[MT_OBJ_BUILD_ID_MAX];
	size_t build_id_len;
};

struct objects {
	struct object *v;
	size_t n, cap;
};

static void note_module(struct objects *o, const struct mt_event *ev)
{
	if (!mt_obj_is_file(ev->path.s, ev->path.len) || ev->build_id.len > MT_OBJ_BUILD_ID_MAX)
		return;
	for (size_t i = 0; i < o->n; i++)
		if (strlen(o->v[i].path) == ev->path.len &&
		    !memcmp(o->v[i].path, ev->path.s, ev->path.len) &&
		    o->v[i].build_id_len == ev->build_id.len &&
		    !memcmp(o->v[i].build_id, ev->build_id.s, ev->build_id.len))
			return;
	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 16;
		o->v = xrealloc(o->v, o->cap * sizeof *o->v);
	}
	struct object *m = &o->v[o->n++];
	m->path = xstrndup(ev->path.s, ev->path.len);
	memcpy(m->build_id, ev->build_id.s, ev->build_id.len);
	m->build_id_len = ev->build_id.len;
}

/* The modules every stream of PATH declared.  A chunk's records are
 * decoded on their own: the values that depend on the stream's state
 * (times, pointers) are wrong, but MODULE records carry none. */
static int read_modules(const char *path, struct objects *o, char *err, size_t errlen)
{
	struct mt_file_reader r;
	if (mt_file_open(&r, path, err, errlen) < 0)
		return -1;
	uint32_t stream;
	const uint8_t *data;
	size_t len;
	while (mt_file_next(&r, &stream, &data, &len) > 0) {
		if (stream == MT_STREAM_OBJECTS)
			continue;
		struct mt_dec d = { .p = data, .end = data + len };
		struct mt_event ev;
		while (mt_dec_next(&d, &ev) > 0)
			if (ev.type == MT_REC_MODULE)
				note_module(o, &ev);
	}
	mt_file_close(&r);
	return 0;
}

struct out {
	struct mt_obj_out obj;
	int fd;
	ZSTD_CCtx *zc;
	uint8_t *scratch;
	size_t scratch_len;
};

/* A chunk of records, compressed, onto the recording. */
static int write_chunk(void *ctx, const uint8_t *raw, size_t len)
{
	struct out *w = ctx;
	return mt_chunk_write_zstd(w->fd, w->zc, MT_STREAM_OBJECTS, raw, len, w->scratch,
				   w->scratch_len);
}

int mt_embed_binaries(const char *path, int quiet, char *err, size_t errlen)
{
	struct objects o = { 0 };
	if (read_modules(path, &o, err, errlen) < 0)
		return -1;
	struct out w = { .fd = -1 };
	int status = -1;
	w.fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (w.fd < 0) {
		snprintf(err, errlen, "%s: cannot append the binaries: %s", path, strerror(errno));
		goto out;
	}
	w.zc = ZSTD_createCCtx();
	w.obj = (struct mt_obj_out){
		.raw = xmalloc(CHUNK_RAW), .cap = CHUNK_RAW, .write = write_chunk, .ctx = &w
	};
	w.scratch_len = mt_chunk_bound(CHUNK_RAW);
	w.scratch = xmalloc(w.scratch_len);
	if (!w.zc || ZSTD_isError(ZSTD_CCtx_setParameter(w.zc, ZSTD_c_compressionLevel, 6))) {
		snprintf(err, errlen, "zstd initialisation failed");
		goto out;
	}
	for (size_t i = 0; i < o.n && !w.obj.failed; i++) {
		const struct object *m = &o.v[i];
		enum mt_obj_result r = mt_obj_embed(&w.obj, m->path, m->build_id, m->build_id_len);
		if (r != MT_OBJ_EMBEDDED && !quiet)
			mt_warning("--embed-binaries: %s left out: %s", m->path,
				   mt_obj_why(r, errno));
	}
	mt_obj_flush(&w.obj);
	if (w.obj.failed) {
		snprintf(err, errlen, "%s: cannot append the binaries: %s", path,
			 strerror(w.obj.failed));
		goto out;
	}
	unsigned embedded = w.obj.embedded;
	if (!quiet)
		fprintf(stderr, "memtrace: embedded %u binar%s (%.1f MB before compression)\n",
			embedded, embedded == 1 ? "y" : "ies", (double)w.obj.bytes / 1e6);
	status = 0;
out:
	if (w.fd >= 0)
		close(w.fd);
	ZSTD_freeCCtx(w.zc);
	free(w.obj.raw);
	free(w.scratch);
	for (size_t i = 0; i < o.n; i++)
		free(o.v[i].path);
	free(o.v);
	return status;
}
