/*
 * format.c - writing the chunked recording file (format.h).
 *
 * Linked into the shim as well: it uses no stdio and no heap, only the
 * caller's buffers and raw write(2).  The reader is reader.c.
 */
#include "format.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int mt_create_output(const char *path, int flags, int shared)
{
	int fd = open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | flags,
		      shared ? MT_SHARED_MODE : MT_OUTPUT_MODE);
	struct stat st;
	/* the umask may only have taken bits away: a recording's mode is
	 * ours, a shared output's keeps what the umask left, and its owner's */
	mode_t mode = shared && fd >= 0 && fstat(fd, &st) == 0 ? (st.st_mode & 07777) | 0600 :
								 MT_OUTPUT_MODE;
	if (fd >= 0 && fchmod(fd, mode) < 0) {
		int e = errno;
		close(fd);
		unlink(path);
		errno = e;
		return -1;
	}
	return fd;
}

/* Opens PATH for writing without ever changing what it names beyond its
 * content: a symbolic link is not followed (root must not be steered into
 * another file), a new file is created 0600 (recordings hold addresses and
 * command lines), and an existing file keeps its mode and owner.  Only a
 * name the user gave (TRUNCATE) may exist: an existing regular file is then
 * truncated, a character device (/dev/null) is written as it is, and a
 * FIFO, socket or directory is refused (EINVAL, EISDIR) rather than waited
 * on. */
static int open_output(const char *path, int truncate)
{
	int fd = mt_create_output(path, O_WRONLY, 0);
	if (fd >= 0)
		return fd;
	/* a made-up name that exists was put there by someone else: leave it */
	if (errno != EEXIST || !truncate)
		return fd;
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	int e = 0;
	if (fstat(fd, &st) < 0)
		e = errno;
	else if (S_ISREG(st.st_mode))
		e = ftruncate(fd, 0) < 0 ? errno : 0;
	else if (!S_ISCHR(st.st_mode))
		e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
	else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		e = errno;
	if (e) {
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int create(const char *path, int truncate)
{
	int fd = open_output(path, truncate);
	if (fd < 0)
		return -1;
	uint8_t h[MT_FILE_HEADER_SIZE] = { 0 };
	memcpy(h, MT_FILE_MAGIC, 8);
	h[8] = MT_FILE_VERSION;
	h[10] = MT_FILE_HEADER_SIZE;
	if (write_all(fd, h, sizeof h)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int mt_file_create(const char *path)
{
	return create(path, 1);
}

int mt_file_create_new(const char *path)
{
	return create(path, 0);
}

const char *mt_file_refused(const char *path, int err)
{
	struct stat st;
	/* ELOOP: O_NOFOLLOW met a link; ENXIO: a FIFO without a reader or a
	 * socket; EINVAL: a FIFO with one */
	if (err != ELOOP && err != ENXIO && err != EINVAL && err != EISDIR && err != EEXIST)
		return NULL;
	if (lstat(path, &st) < 0)
		return NULL;
	if (S_ISLNK(st.st_mode))
		return "is a symbolic link: not followed";
	if (S_ISFIFO(st.st_mode))
		return "is a FIFO: not written";
	if (S_ISSOCK(st.st_mode))
		return "is a socket: not written";
	if (S_ISDIR(st.st_mode))
		return "is a directory: not written";
	return err == EEXIST ? "exists: not overwritten" : NULL;
}

size_t mt_chunk_bound(size_t len)
{
	/* above both deflateBound and ZSTD_compressBound, without their contexts */
	return MT_CHUNK_HEADER_SIZE + len + (len >> 7) + 1024;
}

static void chunk_header(uint8_t *out, uint32_t stream, size_t len, uint32_t clen, uint32_t flags)
{
	put32(out, MT_CHUNK_MAGIC);
	put32(out + 4, stream);
	put32(out + 8, (uint32_t)len);
	put32(out + 12, clen);
	put32(out + 16, (uint32_t)crc32(0, out + MT_CHUNK_HEADER_SIZE, clen));
	put32(out + 20, flags);
}

int mt_chunk_rewrite(int fd, uint64_t at, uint8_t *out, uint32_t stream, size_t len)
{
	chunk_header(out, stream, len, (uint32_t)len, 0);
	size_t n = MT_CHUNK_HEADER_SIZE + len;
	ssize_t w;
	do
		w = pwrite(fd, out, n, (off_t)at);
	while (w < 0 && errno == EINTR);
	if (w == (ssize_t)n)
		return 0;
	if (w >= 0)
		errno = ENOSPC;
	return -1;
}

int mt_chunk_put(int fd, uint8_t *out, uint32_t stream, size_t len, uint32_t clen, uint32_t flags)
{
	chunk_header(out, stream, len, clen, flags);
	/* A chunk is whole or absent: one cut short (a full disk) is taken
	 * back, so that the file stays readable to its last chunk and a later,
	 * smaller chunk can still follow it.  What cannot seek (a pipe,
	 * /dev/null) keeps what it got. */
	off_t at = lseek(fd, 0, SEEK_CUR);
	/* Room for the chunk and MT_LOSS_RESERVE after it is allocated before
	 * it is written (beyond the end of the file, which does not grow), so
	 * that on a full disk the chunk is refused whole while the room kept
	 * by the chunk before still takes the loss chunk that says what the
	 * full disk cost (the writer's last word).  Where the file system
	 * cannot do that, writes find out as before. */
	if (at >= 0 &&
	    fallocate(fd, FALLOC_FL_KEEP_SIZE, at,
		      (off_t)(MT_CHUNK_HEADER_SIZE + clen + MT_LOSS_RESERVE)) != 0 &&
	    (errno == ENOSPC || errno == EDQUOT))
		return -1;
	if (write_all(fd, out, MT_CHUNK_HEADER_SIZE + clen) == 0)
		return 0;
	int e = errno;
	if (at >= 0 && ftruncate(fd, at) == 0)
		lseek(fd, at, SEEK_SET);
	errno = e;
	return -1;
}

void mt_chunk_salvage(const uint8_t *raw, size_t len, struct mt_salvage *s)
{
	/* The stream's state before this chunk is unknown here: a serial far
	 * above any real one lets compact frees decode, and the figures that
	 * depend on the state (times, addresses) are not used. */
	struct mt_dec d = { .p = raw, .end = raw + len, .st = { .serial = UINT64_MAX >> 1 } };
	struct mt_event ev;
	for (const uint8_t *at = d.p; mt_dec_next(&d, &ev) > 0; at = d.p) {
		switch (ev.type) {
		case MT_REC_ALLOC:
		case MT_REC_FREE:
		case MT_REC_REALLOC:
		case MT_REC_MARKER:
			s->events++;
			break;
		case MT_REC_CULLED:
			s->events += ev.count;
			break;
		case MT_REC_LOST:
			if (ev.value < MT_LOST_KIND_COUNT)
				s->lost[ev.value] += ev.count;
			break;
		case MT_REC_PROCESS:
			/* may start with THREAD records: harmless anywhere */
			s->process = at;
			s->process_len = (size_t)(d.p - at);
			break;
		case MT_REC_EXIT:
			s->have_exit = 1;
			s->exit_ts = ev.ts;
			s->exit_status = ev.status;
			break;
		}
	}
}

int mt_chunk_write(int fd, z_stream *zs, uint32_t stream, const void *raw, size_t len,
		   void *scratch, size_t scratch_len)
{
	uint8_t *out = scratch;
	if (deflateReset(zs) != Z_OK) {
		errno = EINVAL;
		return -1;
	}
	zs->next_in = (Bytef *)raw;
	zs->avail_in = (uInt)len;
	zs->next_out = out + MT_CHUNK_HEADER_SIZE;
	zs->avail_out = (uInt)(scratch_len - MT_CHUNK_HEADER_SIZE);
	if (deflate(zs, Z_FINISH) != Z_STREAM_END) {
		errno = ENOBUFS;
		return -1;
	}
	uint32_t clen = (uint32_t)(scratch_len - MT_CHUNK_HEADER_SIZE - zs->avail_out);
	return mt_chunk_put(fd, out, stream, len, clen, MT_CHUNK_FLAG_ZLIB);
}

size_t mt_loss_records(const struct mt_salvage *s, const uint8_t *process, size_t process_len,
		       uint8_t *out)
{
	uint8_t *w = out;
	if (process_len)
		memcpy(w, process, process_len);
	w += process_len;
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++) {
		*w++ = MT_REC_LOST;
		*w++ = (uint8_t)k;
		w = mt_put_uv_wide(w, s->lost[k] + (k == MT_LOST_WRITE_FAILED ? s->events : 0));
	}
	if (s->have_exit) {
		*w++ = MT_REC_EXIT;
		w = mt_put_uv_wide(w, s->exit_ts);
		w = mt_put_uv_wide(w, ((uint64_t)s->exit_status << 1) ^
					      (uint64_t)(s->exit_status >> 63));
	} else {
		/* the EXIT record's room, until it is known */
		*w++ = MT_REC_EXT;
		*w++ = MT_EXT_PAD;
		*w++ = 2 * MT_UV_WIDE - 2;
		memset(w, 0, 2 * MT_UV_WIDE - 2);
		w += 2 * MT_UV_WIDE - 2;
	}
	return (size_t)(w - out);
}
