/*
 * chunks.h - a recording's records, read, checked, decompressed and decoded
 * by a second thread, handed over in batches.
 *
 * Reading a recording is two jobs of about the same size: turning the file
 * into records (read, CRC, zstd, varints) and turning records into figures
 * (recording.c, figures.c).  The first runs here, on its own thread, ahead
 * of the second, so that a load uses two cores.  Allocation events come
 * decoded (struct mt_bev); every other record comes as a copy of its bytes,
 * to be decoded by the reader with mt_bev_record, since only allocation
 * events are many.  Memory: the chunk being decoded, a few batches of
 * events and records, and the binaries' chunks they point into, at most
 * MT_CHUNKS_INFLIGHT bytes of them beyond the one being read.
 */
#ifndef MEMTRACE_CHUNKS_H
#define MEMTRACE_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

enum {
	MT_BEV_OTHER = 32, /* a record that is no allocation event: a copy of its
			    * `size` bytes at `ptr` (a pointer, valid as long
			    * as its batch), ts and tid the stream's state
			    * before it */
	MT_BEV_CHUNK = 33, /* a chunk starts: stream in `stack`, its file offset
			    * in `old_ptr`, the offset after it in `ts`; for
			    * the binaries' stream (MT_STREAM_OBJECTS), which
			    * comes undecoded, its data at `ptr` (a pointer) of
			    * `size` bytes */
};

/* An event, or a record's place.  For MT_REC_ALLOC, MT_REC_FREE and
 * MT_REC_REALLOC the fields mean what struct mt_event's do. */
struct mt_bev {
	uint8_t type, fn;
	uint32_t tid;
	uint64_t ts, ptr, old_ptr, size, stack;
};

#define MT_BEV_BATCH 4096
#define MT_CHUNKS_INFLIGHT (32u << 20)

struct mt_chunks;

/* Starts reading R (opened by mt_file_open, its header read) on a thread
 * of its own; R belongs to that thread until mt_chunks_end. */
struct mt_chunks *mt_chunks_start(struct mt_file_reader *r);
/* The next batch: *N events, valid until the next call; NULL at the end. */
const struct mt_bev *mt_chunks_next(struct mt_chunks *c, size_t *n);
/* Stops the thread (early, if the batches were not all taken) and frees
 * everything; R then says whether the file ended cleanly.  Returns 0, or
 * -1 when a record was malformed: *CHUNK is the file offset of its chunk,
 * *BAD its byte in the chunk's data. */
int mt_chunks_end(struct mt_chunks *c, uint64_t *chunk, size_t *bad);

/* Decodes the record of an MT_BEV_OTHER into EV (which points into the
 * batch): 1, or -1 when it is malformed (the thread decoded it once
 * already). */
int mt_bev_record(const struct mt_bev *b, struct mt_event *ev);

#endif
