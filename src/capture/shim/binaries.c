/*
 * binaries.c - MEMTRACE_WRITE_BINARIES_TO_OUTPUT: at exit, the standalone
 * shim appends to its recording the files of every module the process
 * mapped, as `memtrace record --embed-binaries` does (collect/embed.c), in
 * the same form and with the same code (format/objwrite.c): OBJECT records
 * of at most 1 MiB of a file each, in chunks of their own stream
 * (MT_STREAM_OBJECTS), so that reports, exports and the server symbolize
 * from them on a machine without these files.
 *
 * embed.c's walk cannot run here: it reads the recording back, and uses
 * zstd and the heap.  This file takes the modules from modules.c's list
 * instead (every one emitted, dlclose'd ones too) and compresses the
 * records into the recording with the shim's own deflate (channel.c), in
 * buffers of its own mapping.  A file that is gone or changed is left out
 * (said at MEMTRACE_LOG=warn): a wrong binary would name wrong functions.
 * A module's separate debug file, when the system has one under
 * /usr/lib/debug/.build-id, goes in too.
 */
#include "shim.h"
#include "base/hash.h"
#include "format/objwrite.h"

#include <errno.h>
#include <string.h>

#define CHUNK_RAW (4u << 20) /* record bytes per chunk (channel.c takes 8 MiB) */
#define MAX_DONE 4096

struct writer {
	struct mt_obj_out out;
	uint64_t done[MAX_DONE]; /* hashes of the path+build-id written */
	unsigned ndone;
};

/* A chunk of records, into the recording. */
static int write_chunk(void *ctx, const uint8_t *raw, size_t len)
{
	(void)ctx;
	mt_channel_lock();
	int r = mt_channel_append(MT_STREAM_OBJECTS, raw, len);
	int err = errno;
	mt_channel_unlock();
	errno = err;
	return r;
}

static void embed_one(const char *p, size_t plen, const uint8_t *id, size_t idlen, void *ctx)
{
	struct writer *w = ctx;
	char path[4096];
	if (w->out.failed || !mt_obj_is_file(p, plen) || plen >= sizeof path ||
	    idlen > MT_OBJ_BUILD_ID_MAX)
		return; /* the vDSO, memfds: no file to take */
	uint64_t h = mt_fnv_bytes(mt_fnv_bytes(MT_FNV_SEED, p, plen), id, idlen);
	for (unsigned i = 0; i < w->ndone; i++)
		if (w->done[i] == h)
			return;
	if (w->ndone < MAX_DONE)
		w->done[w->ndone++] = h;
	memcpy(path, p, plen);
	path[plen] = '\0';
	enum mt_obj_result r = mt_obj_embed(&w->out, path, id, idlen);
	if (r != MT_OBJ_EMBEDDED)
		mt_log(2, "WRITE_BINARIES_TO_OUTPUT: %s left out: %s", path, mt_obj_why(r, errno));
}

void mt_binaries_write(void)
{
	/* (a fork child that is not traced has no recording of its own) */
	if (!mt_channel_output()[0])
		return;
	struct writer *w = mt_map(sizeof *w);
	if (!w)
		return;
	w->out.raw = mt_map(CHUNK_RAW);
	w->out.cap = CHUNK_RAW;
	w->out.write = write_chunk;
	if (w->out.raw) {
		mt_modules_each(embed_one, w);
		mt_obj_flush(&w->out);
		if (w->out.failed)
			mt_log(1, "WRITE_BINARIES_TO_OUTPUT: %s: %s", mt_channel_output(),
			       strerror(w->out.failed));
		else
			mt_log(3, "embedded %u binaries (%.1f MB before compression)",
			       w->out.embedded, (double)w->out.bytes / 1e6);
		mt_sys_munmap(w->out.raw, CHUNK_RAW);
	}
	mt_sys_munmap(w, sizeof *w);
}
