/*
 * objects.c - the binaries embedded in a recording (objects.h): an index
 * of their pieces built while the recording loads, and the bytes read back
 * on demand into memfds, which libdwfl and libelf take like any file.
 */
#include "objects.h"
#include "base/util.h"
#include "format/format.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct piece {
	uint64_t chunk;	 /* file offset of the chunk holding it */
	uint64_t at;	 /* offset of its bytes in the chunk's records */
	uint64_t offset; /* in the object */
	uint64_t len;
};

struct object {
	int kind;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t size;
	struct piece *pieces;
	size_t npieces, cap;
};

struct mt_objects {
	char *path;
	struct object *v;
	size_t n, cap;
};

struct mt_objects *mt_objects_new(const char *path)
{
	struct mt_objects *o = xcalloc(1, sizeof *o);
	o->path = xstrdup(path);
	return o;
}

void mt_objects_free(struct mt_objects *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].path);
		free(o->v[i].build_id);
		free(o->v[i].pieces);
	}
	free(o->v);
	free(o->path);
	free(o);
}

size_t mt_objects_count(const struct mt_objects *o)
{
	size_t k = 0;
	for (size_t i = 0; o && i < o->n; i++)
		k += o->v[i].kind == MT_OBJECT_ELF;
	return k;
}

static struct object *object_for(struct mt_objects *o, const struct mt_event *ev)
{
	for (size_t i = 0; i < o->n; i++) {
		struct object *m = &o->v[i];
		if (m->kind == (int)ev->value && m->size == ev->size &&
		    m->build_id_len == ev->build_id.len &&
		    !memcmp(m->build_id, ev->build_id.s, ev->build_id.len) &&
		    strlen(m->path) == ev->path.len && !memcmp(m->path, ev->path.s, ev->path.len))
			return m;
	}
	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 8;
		o->v = xrealloc(o->v, o->cap * sizeof *o->v);
	}
	struct object *m = &o->v[o->n++];
	*m = (struct object){ .kind = (int)ev->value, .size = ev->size };
	m->path = xstrndup(ev->path.s, ev->path.len);
	m->build_id = xmalloc(ev->build_id.len + 1);
	memcpy(m->build_id, ev->build_id.s, ev->build_id.len);
	m->build_id_len = ev->build_id.len;
	return m;
}

int mt_objects_note(struct mt_objects *o, uint64_t chunk, const uint8_t *data, size_t len)
{
	struct mt_dec d = { .p = data, .end = data + len };
	struct mt_event ev;
	int r;
	while ((r = mt_dec_next(&d, &ev)) > 0) {
		if (ev.type != MT_REC_EXT || ev.ext != MT_EXT_OBJECT)
			continue;
		struct object *m = object_for(o, &ev);
		if (m->npieces == m->cap) {
			m->cap = m->cap ? 2 * m->cap : 4;
			m->pieces = xrealloc(m->pieces, m->cap * sizeof *m->pieces);
		}
		m->pieces[m->npieces++] = (struct piece){
			.chunk = chunk,
			.at = (uint64_t)((const uint8_t *)ev.text.s - data),
			.offset = ev.ptr,
			.len = ev.text.len,
		};
	}
	return r < 0 ? -1 : 0;
}

/* Whether M's pieces cover it whole (a recording cut short may hold only
 * the first pieces of the last object). */
static int complete(const struct object *m)
{
	uint64_t covered = 0;
	for (size_t i = 0; i < m->npieces; i++)
		covered += m->pieces[i].len;
	return covered == m->size;
}

static struct object *find(struct mt_objects *o, enum mt_object_kind kind, const uint8_t *id,
			   size_t len, const char *path)
{
	for (size_t i = 0; i < o->n; i++) {
		struct object *m = &o->v[i];
		if (m->kind != (int)kind || !complete(m))
			continue;
		if (len ? (m->build_id_len == len && !memcmp(m->build_id, id, len)) :
			  !strcmp(m->path, path))
			return m;
	}
	return NULL;
}

/* Writes M's bytes into FD from the recording's chunks. */
static int copy_out(struct mt_objects *o, const struct object *m, int fd)
{
	char err[256];
	struct mt_file_reader r;
	if (mt_file_open(&r, o->path, err, sizeof err) < 0)
		return -1;
	int status = 0;
	for (size_t i = 0; i < m->npieces && status == 0; i++) {
		const struct piece *pc = &m->pieces[i];
		uint32_t stream;
		const uint8_t *data;
		size_t len;
		if (mt_file_seek(&r, pc->chunk) != 0 ||
		    mt_file_next(&r, &stream, &data, &len) <= 0 || stream != MT_STREAM_OBJECTS ||
		    pc->at + pc->len > len ||
		    pwrite(fd, data + pc->at, pc->len, (off_t)pc->offset) != (ssize_t)pc->len)
			status = -1;
	}
	mt_file_close(&r);
	return status;
}

int mt_objects_open(struct mt_objects *o, enum mt_object_kind kind, const uint8_t *id, size_t len,
		    const char *path)
{
	struct object *m = o ? find(o, kind, id, len, path) : NULL;
	if (!m)
		return -1;
	int fd = memfd_create("memtrace-object", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)m->size) != 0 || copy_out(o, m, fd) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}
