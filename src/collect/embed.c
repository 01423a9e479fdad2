/*
 * embed.c - putting the binaries a recording's processes mapped into the
 * recording (record --embed-binaries, attach --embed-binaries), so that it
 * can be symbolized on a machine that does not have them (a board's
 * recording read on a workstation, a container's after the image is gone).
 *
 * The writer passes every MODULE record its streams carry (children, execs
 * and dlopens included), and the file is opened then, through the mapping
 * itself (/proc/PID/map_files, procmaps.h's mt_proc_open_object), and kept
 * open until the recording is complete.  Nothing is opened again by the
 * name a process gave: root's attach once took a library without a
 * build-id back by its path, which its owner had swapped for a link to
 * /etc/shadow, and embedded that.  A file whose mapping was gone before it
 * could be opened (a process that exits within the recorder's 5 ms beat) is
 * taken by its path only if it has a build-id to check it by and everyone
 * may read it; past MT_EMBED_MAX_HELD open files, the others are kept as
 * device and inode, and the file at the path must be that one.  Any other
 * is refused, named, and counted.
 *
 * Each file goes in once (two processes mapping libc share it), with its
 * separate debug file from /usr/lib/debug/.build-id when the system has
 * one, in its own stream (MT_STREAM_OBJECTS) as OBJECT records cut in
 * pieces, zstd-compressed like every chunk, so a reader that does not want
 * them skips whole chunks.  A file whose build-id is no longer the recorded
 * one is left out and named: a wrong binary would name wrong functions.
 * Checking and writing one file is format/objwrite.c's, which the
 * standalone shim's MEMTRACE_WRITE_BINARIES_TO_OUTPUT shares.  They are
 * written onto the writer's own descriptor: the output's name is never
 * opened again (its directory's owner could have made it a link).
 */
#include "embed.h"
#include "base/util.h"
#include "format/format.h"
#include "format/objwrite.h"
#include "capture/bpf/procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* Records per chunk: chunks of 8 MiB keep the reader's buffers small while
 * compressing well. */
#define CHUNK_RAW (8u << 20)

struct object {
	char *path;
	uint8_t build_id[MT_OBJ_BUILD_ID_MAX];
	size_t build_id_len;
	int fd;	     /* the file mapped, opened through the mapping; -1: not held */
	int have_id; /* else its identity, to check the file at PATH against */
	dev_t dev;
	ino_t ino;
	uint32_t pid; /* the process that mapped it */
};

struct mt_embed {
	struct object *v;
	size_t n, cap;
	unsigned held;
	int quiet;
};

struct mt_embed *mt_embed_new(int quiet)
{
	struct mt_embed *e = xcalloc(1, sizeof *e);
	e->quiet = quiet;
	return e;
}

void mt_embed_free(struct mt_embed *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++) {
		if (e->v[i].fd >= 0)
			close(e->v[i].fd);
		free(e->v[i].path);
	}
	free(e->v);
	free(e);
}

/* The file process PID maps within [START, END), opened through that
 * mapping: -1 once it is unmapped or the process is gone.  The address
 * decides, not the name: the shim's is the loader's (/lib64/ld-linux...,
 * a link), and a process's stream could name anything. */
struct find_mapped {
	pid_t pid;
	uint64_t start, end;
	int fd;
};

static int open_if_within(void *ctx, struct mt_maps_line *l)
{
	struct find_mapped *fm = ctx;
	char why[256];
	if (l->lo < fm->end && l->hi > fm->start && l->ino && l->path[0] == '/')
		fm->fd = mt_proc_open_object(fm->pid, l->lo, l->hi, l->ino, l->path, why,
					     sizeof why);
	return fm->fd >= 0;
}

static int open_mapped(uint32_t pid, uint64_t start, uint64_t end)
{
	struct find_mapped fm = { .pid = (pid_t)pid, .start = start, .end = end, .fd = -1 };
	mt_maps_each(fm.pid, open_if_within, &fm);
	return fm.fd;
}

void mt_embed_note(struct mt_embed *e, uint32_t pid, const struct mt_event *ev)
{
	if (!mt_obj_is_file(ev->path.s, ev->path.len) || ev->path.len >= 4096 ||
	    memchr(ev->path.s, 0, ev->path.len) || ev->build_id.len > MT_OBJ_BUILD_ID_MAX)
		return;
	struct object *m = NULL;
	for (size_t i = 0; i < e->n && !m; i++)
		if (strlen(e->v[i].path) == ev->path.len &&
		    !memcmp(e->v[i].path, ev->path.s, ev->path.len) &&
		    e->v[i].build_id_len == ev->build_id.len &&
		    !memcmp(e->v[i].build_id, ev->build_id.s, ev->build_id.len))
			m = &e->v[i];
	if (!m) {
		mt_grow(&e->v, &e->cap, e->n, sizeof *e->v);
		m = &e->v[e->n++];
		*m = (struct object){ .path = xstrndup(ev->path.s, ev->path.len),
				      .build_id_len = ev->build_id.len,
				      .fd = -1,
				      .pid = pid };
		memcpy(m->build_id, ev->build_id.s, ev->build_id.len);
	}
	if (m->fd >= 0 || m->have_id || !pid)
		return;
	int fd = open_mapped(pid, ev->start, ev->end);
	struct stat st;
	if (fd < 0)
		return;
	m->pid = pid;
	if (e->held < MT_EMBED_MAX_HELD) {
		m->fd = fd;
		e->held++;
		return;
	}
	if (fstat(fd, &st) == 0) {
		m->have_id = 1;
		m->dev = st.st_dev;
		m->ino = st.st_ino;
	}
	close(fd);
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

/* Embeds M: the file held, else the one at its path if it can be told to
 * be the file mapped.  Returns what mt_obj_embed_fd did, or -1 with WHY
 * when the file at the path was refused. */
static int embed_one(struct mt_obj_out *w, const struct object *m, char *why, size_t whylen)
{
	if (m->fd >= 0)
		return (int)mt_obj_embed_fd(w, m->fd, m->path, m->build_id, m->build_id_len);
	if (!m->have_id && !m->build_id_len) {
		snprintf(why, whylen,
			 "its mapping was gone before it could be opened through it, and it has "
			 "no build-id to tell the file at its path by");
		return -1;
	}
	/* (links followed: the loader's names are links; the checks below
	 * are on what was opened) */
	int fd = mt_open_regular(m->path, 0, NULL, 0);
	if (fd < 0)
		return (int)MT_OBJ_NO_FILE;
	struct stat st;
	int r = -1;
	if (fstat(fd, &st) != 0)
		snprintf(why, whylen, "cannot stat: %s", strerror(errno));
	else if (m->have_id && (st.st_dev != m->dev || st.st_ino != m->ino))
		snprintf(why, whylen, "the file at its path is not the one process %u mapped",
			 (unsigned)m->pid);
	else if (!m->have_id && !(st.st_mode & S_IROTH))
		/* a build-id is no proof: one can be copied from a file nobody
		 * may read (a root-only binary of a package) */
		snprintf(why, whylen,
			 "its mapping was gone before it could be opened through it, and the "
			 "file at its path is not for everyone to read");
	else
		r = (int)mt_obj_embed_fd(w, fd, m->path, m->build_id, m->build_id_len);
	int err = errno;
	close(fd);
	errno = err;
	return r;
}

int mt_embed_write(struct mt_embed *e, int fd, const char *path, char *err, size_t errlen)
{
	struct out w = { .fd = fd };
	int status = -1;
	unsigned refused = 0;
	if (lseek(fd, 0, SEEK_END) < 0) {
		snprintf(err, errlen, "%s: cannot append the binaries: %s", path, strerror(errno));
		return -1;
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
	for (size_t i = 0; i < e->n && !w.obj.failed; i++) {
		const struct object *m = &e->v[i];
		char why[256];
		int r = embed_one(&w.obj, m, why, sizeof why);
		if (r < 0) {
			refused++;
			mt_warning("--embed-binaries: %s refused: %s", m->path, why);
		} else if (r != MT_OBJ_EMBEDDED && !e->quiet) {
			mt_warning("--embed-binaries: %s left out: %s", m->path,
				   mt_obj_why((enum mt_obj_result)r, errno));
		}
	}
	mt_obj_flush(&w.obj);
	if (w.obj.failed) {
		snprintf(err, errlen, "%s: cannot append the binaries: %s", path,
			 strerror(w.obj.failed));
		goto out;
	}
	unsigned embedded = w.obj.embedded;
	if (!e->quiet)
		fprintf(stderr, "memtrace: embedded %u binar%s (%.1f MB before compression)",
			embedded, embedded == 1 ? "y" : "ies", (double)w.obj.bytes / 1e6);
	if (!e->quiet && refused)
		fprintf(stderr, "; %u refused", refused);
	if (!e->quiet)
		fputc('\n', stderr);
	status = 0;
out:
	ZSTD_freeCCtx(w.zc);
	free(w.obj.raw);
	free(w.scratch);
	return status;
}
