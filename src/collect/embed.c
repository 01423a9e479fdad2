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
 * and named: a wrong binary would name wrong functions.
 */
#include "embed.h"
#include "base/util.h"
#include "format/format.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* Data per OBJECT record, and records per chunk: chunks of 8 MiB keep the
 * reader's buffers small while compressing well. */
#define PIECE (1u << 20)
#define CHUNK_RAW (8u << 20)
#define MAX_BUILD_ID 64

struct object {
	char *path;
	uint8_t build_id[MAX_BUILD_ID];
	size_t build_id_len;
};

struct objects {
	struct object *v;
	size_t n, cap;
};

static int is_pseudo(const char *path, size_t len)
{
	return len == 0 || path[0] != '/' || (len > 7 && !memcmp(path, "/memfd:", 7));
}

static void note_module(struct objects *o, const struct mt_event *ev)
{
	if (is_pseudo(ev->path.s, ev->path.len) || ev->build_id.len > MAX_BUILD_ID)
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

/* The GNU build-id of the ELF file open on FD, into ID: its length, or 0
 * when it has none or is no ELF. */
static size_t file_build_id(int fd, uint8_t id[MAX_BUILD_ID])
{
	size_t got = 0;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return 0;
	Elf_Scn *scn = NULL;
	while (!got && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0 &&
			    nh.n_descsz <= MAX_BUILD_ID) {
				memcpy(id, (char *)d->d_buf + desc_off, nh.n_descsz);
				got = nh.n_descsz;
				break;
			}
		}
	}
	elf_end(e);
	return got;
}

struct out {
	int fd;
	ZSTD_CCtx *zc;
	uint8_t *raw, *scratch;
	size_t len, scratch_len;
	int failed;
};

static void flush(struct out *w)
{
	if (w->len && !w->failed &&
	    mt_chunk_write_zstd(w->fd, w->zc, MT_STREAM_OBJECTS, w->raw, w->len, w->scratch,
				w->scratch_len) != 0)
		w->failed = errno ? errno : EIO;
	w->len = 0;
}

/* Appends the file open on FD (SIZE bytes) as KIND.  Returns 0, or -1 when
 * it could not be read (errno set). */
static int put_object(struct out *w, int fd, uint64_t size, enum mt_object_kind kind,
		      const struct object *m)
{
	size_t plen = strlen(m->path);
	uint64_t off = 0;
	do {
		size_t n = size - off < PIECE ? (size_t)(size - off) : PIECE;
		if (w->len + 64 + MAX_BUILD_ID + plen + n > CHUNK_RAW)
			flush(w);
		uint8_t *p = mt_enc_object_head(w->raw + w->len, kind, size, off, m->build_id,
						m->build_id_len, m->path, plen, n);
		size_t got = 0;
		while (got < n) {
			ssize_t k = pread(fd, p + got, n - got, (off_t)(off + got));
			if (k <= 0) {
				if (k == 0)
					errno = EIO; /* shrank while read */
				return -1;
			}
			got += (size_t)k;
		}
		w->len = (size_t)(p + n - w->raw);
		off += n;
	} while (off < size);
	return 0;
}

/* Opens PATH for embedding: a regular file, without following a FIFO's
 * open.  Returns the fd and its size, or -1 with errno set. */
static int open_regular(const char *path, uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

/* The separate debug file of build-id ID, where Debian's -dbgsym packages
 * put it. */
static void debug_path(const uint8_t *id, size_t len, char *out, size_t outlen)
{
	int k = snprintf(out, outlen, "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (size_t i = 1; i < len && k > 0 && (size_t)k + 3 < outlen; i++)
		k += snprintf(out + k, outlen - (size_t)k, "%02x", id[i]);
	if (k > 0 && (size_t)k + 7 < outlen)
		snprintf(out + k, outlen - (size_t)k, ".debug");
}

/* Embeds one module: 1 embedded, 0 left out (said on stderr unless QUIET). */
static int embed_one(struct out *w, const struct object *m, int quiet, uint64_t *bytes)
{
	uint64_t size;
	int fd = open_regular(m->path, &size);
	if (fd < 0) {
		if (!quiet)
			mt_warning("--embed-binaries: %s left out: %s", m->path,
				   errno == EINVAL ? "not a regular file" : strerror(errno));
		return 0;
	}
	uint8_t id[MAX_BUILD_ID];
	size_t idlen = file_build_id(fd, id);
	if (m->build_id_len && (idlen != m->build_id_len || memcmp(id, m->build_id, idlen))) {
		if (!quiet)
			mt_warning("--embed-binaries: %s left out: it changed since it was mapped "
				   "(build-id differs)",
				   m->path);
		close(fd);
		return 0;
	}
	int r = put_object(w, fd, size, MT_OBJECT_ELF, m);
	close(fd);
	if (r < 0) {
		if (!quiet)
			mt_warning("--embed-binaries: %s left out: %s", m->path, strerror(errno));
		return 0;
	}
	*bytes += size;
	if (m->build_id_len) {
		char dbg[64 + 2 * MAX_BUILD_ID];
		debug_path(m->build_id, m->build_id_len, dbg, sizeof dbg);
		if ((fd = open_regular(dbg, &size)) >= 0) {
			if (put_object(w, fd, size, MT_OBJECT_DEBUG, m) == 0)
				*bytes += size;
			close(fd);
		}
	}
	return 1;
}

int mt_embed_binaries(const char *path, int quiet, char *err, size_t errlen)
{
	struct objects o = { 0 };
	if (read_modules(path, &o, err, errlen) < 0)
		return -1;
	elf_version(EV_CURRENT);
	struct out w = { .fd = -1 };
	int status = -1;
	w.fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (w.fd < 0) {
		snprintf(err, errlen, "%s: cannot append the binaries: %s", path, strerror(errno));
		goto out;
	}
	w.zc = ZSTD_createCCtx();
	w.raw = xmalloc(CHUNK_RAW);
	w.scratch_len = mt_chunk_bound(CHUNK_RAW);
	w.scratch = xmalloc(w.scratch_len);
	if (!w.zc || ZSTD_isError(ZSTD_CCtx_setParameter(w.zc, ZSTD_c_compressionLevel, 6))) {
		snprintf(err, errlen, "zstd initialisation failed");
		goto out;
	}
	size_t embedded = 0;
	uint64_t bytes = 0;
	for (size_t i = 0; i < o.n && !w.failed; i++)
		embedded += (size_t)embed_one(&w, &o.v[i], quiet, &bytes);
	flush(&w);
	if (w.failed) {
		snprintf(err, errlen, "%s: cannot append the binaries: %s", path,
			 strerror(w.failed));
		goto out;
	}
	if (!quiet)
		fprintf(stderr, "memtrace: embedded %zu binar%s (%.1f MB before compression)\n",
			embedded, embedded == 1 ? "y" : "ies", (double)bytes / 1e6);
	status = 0;
out:
	if (w.fd >= 0)
		close(w.fd);
	ZSTD_freeCCtx(w.zc);
	free(w.raw);
	free(w.scratch);
	for (size_t i = 0; i < o.n; i++)
		free(o.v[i].path);
	free(o.v);
	return status;
}
