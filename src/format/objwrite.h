/*
 * objwrite.h - putting the files of a process's modules into its recording
 * as OBJECT records (codec.h), in chunks of their own stream
 * (MT_STREAM_OBJECTS): what `memtrace record --embed-binaries`
 * (collect/embed.c) and the standalone shim's
 * MEMTRACE_WRITE_BINARIES_TO_OUTPUT (capture/shim/binaries.c) both do.
 *
 * Nothing here allocates or uses stdio, so that the shim can run it inside
 * the traced program: the caller gives the buffer the records are gathered
 * in and the function that writes a full one out as a chunk (zstd for the
 * recorder, the shim's deflate for the shim).
 */
#ifndef MEMTRACE_OBJWRITE_H
#define MEMTRACE_OBJWRITE_H

#include <stddef.h>
#include <stdint.h>

#define MT_OBJ_PIECE (1u << 20) /* file bytes per OBJECT record */
#define MT_OBJ_BUILD_ID_MAX 64
/* The smallest buffer: one piece with its head (a path is at most PATH_MAX:
 * no longer one opens). */
#define MT_OBJ_BUF_MIN (MT_OBJ_PIECE + 64 + MT_OBJ_BUILD_ID_MAX + 4096)

struct mt_obj_out {
	uint8_t *raw;	 /* records not written yet: LEN of CAP bytes */
	size_t len, cap; /* CAP at least MT_OBJ_BUF_MIN */
	/* Writes RAW[0..LEN) out as a chunk of MT_STREAM_OBJECTS: 0, or -1
	 * with errno set. */
	int (*write)(void *ctx, const uint8_t *raw, size_t len);
	void *ctx;
	int failed;	   /* the errno of the first write that failed: no more is written */
	unsigned embedded; /* modules put in */
	uint64_t bytes;	   /* file bytes put in, debug files' too */
};

/* Why a module was left out (mt_obj_embed). */
enum mt_obj_result {
	MT_OBJ_EMBEDDED = 0,
	MT_OBJ_NO_FILE,	   /* it could not be opened, or is no regular file (errno: EINVAL) */
	MT_OBJ_CHANGED,	   /* its build-id is no longer the one it was mapped with */
	MT_OBJ_UNREADABLE, /* a read failed, or it shrank while read (errno) */
};

/* Whether a module's PATH (LEN bytes) names a file there could be to take:
 * not the vDSO's or another pseudo-name, nor a memfd's. */
int mt_obj_is_file(const char *path, size_t len);

/* A regular file at PATH, opened without waiting on a FIFO: the fd, and its
 * size in *SIZE; or -1 with errno set (EINVAL: not a regular file). */
int mt_obj_open(const char *path, uint64_t *size);

/* The GNU build-id in the PT_NOTE segments of the ELF file (either class,
 * this machine's byte order) open on FD, into ID: its length, or 0 when it
 * has none or is no such ELF. */
size_t mt_obj_build_id(int fd, uint8_t id[MT_OBJ_BUILD_ID_MAX]);

/* The separate debug file of build-id ID (LEN bytes, at least one), where
 * Debian's -dbgsym packages put it, into OUT (truncated to OUTLEN). */
void mt_obj_debug_path(const uint8_t *id, size_t len, char *out, size_t outlen);

/* Embeds the module file PATH, recorded with build-id ID (IDLEN bytes; 0:
 * none known, which any file matches), and, when it has a build-id, its
 * separate debug file where the system has one.  A file whose build-id
 * differs is left out: a wrong binary would name wrong functions.  Counts
 * it in W->embedded and W->bytes.  Returns MT_OBJ_EMBEDDED, or why it was
 * left out with errno set for NO_FILE and UNREADABLE. */
enum mt_obj_result mt_obj_embed(struct mt_obj_out *w, const char *path, const uint8_t *id,
				size_t idlen);

/* mt_obj_embed for the file open on FD (read with pread, left open), which
 * the caller made sure is module PATH's: the recorder's are the very files
 * the processes mapped, opened through /proc/PID/map_files. */
enum mt_obj_result mt_obj_embed_fd(struct mt_obj_out *w, int fd, const char *path,
				   const uint8_t *id, size_t idlen);

/* Words for what mt_obj_embed returned (ERR: the errno it left), as
 * "PATH left out: WHY" says it. */
const char *mt_obj_why(enum mt_obj_result r, int err);

/* Writes out what W holds (nothing once a write failed). */
void mt_obj_flush(struct mt_obj_out *w);

#endif
