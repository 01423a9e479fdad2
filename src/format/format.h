/*
 * format.h - the recording file: a header, then self-delimiting chunks.
 *
 * A chunk carries a piece of one process's record stream (codec.h),
 * zlib-compressed, with its own length and CRC, and always ends on a record
 * boundary.  Writers append whole chunks (one whose write fails is taken
 * back), so after a crash of the traced program or of memtrace, or on a full
 * disk, every chunk written so far is readable, and a reader meeting a short
 * or damaged chunk reports the file truncated.
 * Layout in man/memtrace-format.5.
 *
 * Chunks are compressed with zstd by `memtrace record` and with zlib by the
 * standalone shim, whose zlib stream is set up by its caller so that it can
 * be given an allocator that does not touch the heap being measured.
 */
#ifndef MEMTRACE_FORMAT_H
#define MEMTRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <zlib.h>

#include "codec.h"

#define MT_FILE_MAGIC "MEMTRACE"
#define MT_FILE_VERSION 1
#define MT_FILE_HEADER_SIZE 16
#define MT_CHUNK_MAGIC 0x4b43544du /* "MTCK" little-endian */
#define MT_CHUNK_HEADER_SIZE 24
#define MT_CHUNK_MAX_RAW (64u << 20)
#define MT_CHUNK_FLAG_ZLIB 1u
#define MT_CHUNK_FLAG_ZSTD 2u /* written by the recorder: a third smaller than zlib, as fast */

/* The one way memtrace creates a file it writes (recordings, exports and
 * pages, saved databases, a gathering and its sidecar): a new file only
 * (O_EXCL), a link never followed (root must not be steered into another
 * file).  A recording, and what holds as much (a saved database, a
 * gathering), is MT_OUTPUT_MODE whatever the umask: the command lines,
 * paths and addresses of the traced programs; a user shares one with
 * chmod.  SHARED: an export or a page, made to be passed on, is 0644 less
 * the umask, as any program's output (its owner may always read and write
 * it).  FLAGS are added (O_WRONLY or O_RDWR, O_APPEND...).  Returns the
 * descriptor, or -1 with errno set. */
#define MT_OUTPUT_MODE 0600
#define MT_SHARED_MODE 0644
int mt_create_output(const char *path, int flags, int shared);

/* Opens PATH, a name the user gave, for a recording and writes the file
 * header.  A new file is created with mode 0600; an existing regular file is
 * truncated and keeps its mode and owner; a character device is written as
 * it is; a symbolic link (ELOOP), FIFO, socket (EINVAL) or directory
 * (EISDIR) is refused.  Returns the fd or -1 with errno set. */
int mt_file_create(const char *path);
/* The same for a name memtrace made up: whatever exists at PATH (a file,
 * or a link planted by another user) is left alone (EEXIST). */
int mt_file_create_new(const char *path);
/* Why PATH was refused with ERR, in words ("is a symbolic link: not
 * followed"), or NULL when ERR is not about what PATH is (strerror says
 * it). */
const char *mt_file_refused(const char *path, int err);

/* Bound on the compressed size of a chunk of LEN raw bytes, header included. */
size_t mt_chunk_bound(size_t len);

/* Compresses RAW[0..LEN) with ZS (deflateInit'ed by the caller; reset here)
 * into SCRATCH (at least mt_chunk_bound(LEN) bytes) and writes the chunk to FD.
 * Returns 0, or -1 with errno set and, in a file that can seek, nothing of
 * the chunk left behind. */
int mt_chunk_write(int fd, z_stream *zs, uint32_t stream, const void *raw, size_t len,
		   void *scratch, size_t scratch_len);

/* The same with zstd, from the memtrace binary (the shim does not link it):
 * CCTX is a ZSTD_CCtx with its level set. */
int mt_chunk_write_zstd(int fd, void *cctx, uint32_t stream, const void *raw, size_t len,
			void *scratch, size_t scratch_len);

/* Writes the header of a chunk whose CLEN compressed bytes already sit in
 * OUT after room for the header, then the whole chunk. */
int mt_chunk_put(int fd, uint8_t *out, uint32_t stream, size_t len, uint32_t clen, uint32_t flags);
/* What the records of a chunk that could not be written held: the loss to
 * count, and the records that need no stream state (LOST, EXIT, PROCESS) to
 * be written again in a later chunk. */
struct mt_salvage {
	uint64_t events; /* allocations, frees, reallocations and markers; a
			  * CULLED summary counts its allocations */
	uint64_t lost[MT_LOST_KIND_COUNT];
	const uint8_t *process; /* its PROCESS record (inside the chunk) */
	size_t process_len;
	int have_exit;
	uint64_t exit_ts;
	int64_t exit_status;
};

/* Adds what RAW[0..LEN), whole records of one stream, held to S.  Uses no
 * heap (the shim calls it). */
void mt_chunk_salvage(const uint8_t *raw, size_t len, struct mt_salvage *s);

/* The records of a chunk that says what a full disk cost (S) and carries
 * PROCESS (the stream's PROCESS record, when the file has none), into OUT:
 * always MT_LOSS_SIZE(PROCESS_LEN) bytes, every kind's count in a fixed
 * width and the EXIT record or padding of its size, so that the chunk can
 * be rewritten in place as the figures grow. */
#define MT_LOSS_SIZE(process_len) \
	((process_len) + (2 + MT_UV_WIDE) * MT_LOST_KIND_COUNT + 1 + 2 * MT_UV_WIDE)
/* Room kept allocated after the last chunk for the loss chunks of a full
 * disk (a page: what file systems allocate in). */
#define MT_LOSS_RESERVE 4096
size_t mt_loss_records(const struct mt_salvage *s, const uint8_t *process, size_t process_len,
		       uint8_t *out);
/* Writes over the stored (uncompressed) chunk at offset AT a stored chunk of
 * the same LEN bytes, which sit in OUT after room for the header: 0, or -1
 * with errno set. */
int mt_chunk_rewrite(int fd, uint64_t at, uint8_t *out, uint32_t stream, size_t len);
/* Decompresses a zstd chunk of exactly DSTLEN bytes: 0, or -1. */
int mt_zstd_decompress(void *dst, size_t dstlen, const void *src, size_t srclen);
/* The same a piece of the compressed chunk at a time, straight into DST
 * (no window of its own: the reader holds one copy of a chunk, not three):
 * a context (NULL: no memory), made ready for a chunk by begin; each piece
 * then adds to *POS; 1 once the chunk's data is complete, 0 while more is
 * to come, -1 when it does not decompress. */
void *mt_zstd_stream_new(void);
void mt_zstd_stream_free(void *z);
void mt_zstd_stream_begin(void *z);
int mt_zstd_stream_piece(void *z, void *dst, size_t dstlen, size_t *pos, const void *src,
			 size_t srclen);

/* ---- reader ---- */

struct mt_file_reader {
	FILE *f;
	const char *path;
	int truncated;	 /* the file ends in a short or damaged chunk (a crash) */
	int corrupt;	 /* a damaged chunk with more data after it */
	char why[160];	 /* what was wrong, when truncated */
	uint64_t offset; /* of the next chunk */
	uint64_t chunk;	 /* of the chunk mt_file_next returned last */
	uint64_t size;	 /* of the file */
	int sized;	 /* a regular file, whose size is known */
	/* the chunk's data; a piece of its compressed bytes */
	uint8_t *raw, *comp;
	size_t raw_cap, comp_cap;
	z_stream zs;
	void *zd; /* the zstd context (mt_zstd_stream_new), made when first needed */
	/* 0, or the offset where the file ends for this reader (a file that
	 * grew since: what an earlier reader of it saw) */
	uint64_t limit;
};

/* Opens a recording.  On failure returns -1 with a one-line reason in ERR
 * (missing, empty, not a memtrace recording, unsupported version). */
int mt_file_open(struct mt_file_reader *r, const char *path, char *err, size_t errlen);

/* Next chunk: 1 with *stream and the decompressed bytes in *data and *len (valid
 * until the next call), 0 at the end (r->truncated or r->corrupt say whether
 * the file ended cleanly). */
int mt_file_next(struct mt_file_reader *r, uint32_t *stream, const uint8_t **data, size_t *len);

/* Makes the chunk at OFFSET (an r->chunk seen before) the next one: 0, or
 * -1 with errno set. */
int mt_file_seek(struct mt_file_reader *r, uint64_t offset);

void mt_file_close(struct mt_file_reader *r);

#endif
