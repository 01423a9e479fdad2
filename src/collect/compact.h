/*
 * compact.h - rewriting a process's record stream into the compact form the
 * recorder stores: allocations and frees name blocks by allocation serial
 * instead of address (MT_REC_NALLOC, NFREE, NREALLOC in codec.h).  A free of
 * a block allocated before tracing began has no serial and keeps its address.
 * Runs in `memtrace record`, off the traced program's core.
 */
#ifndef MEMTRACE_COMPACT_H
#define MEMTRACE_COMPACT_H

#include <stddef.h>
#include <stdint.h>

struct mt_event;

struct mt_compact;

typedef void (*mt_compact_emit_fn)(void *ctx, const uint8_t *records, size_t len);

struct mt_compact *mt_compact_new(mt_compact_emit_fn emit, void *ctx);
/* Also passes every MODULE record fed to FN (with the same ctx), as it is
 * met: the recorder learns which files a process maps as they go by. */
void mt_compact_on_module(struct mt_compact *c, void (*fn)(void *ctx, const struct mt_event *ev));
/* Feeds whole records; what they become is passed to emit before return.
 * Returns how many bytes were taken: less than LEN if a record was
 * malformed (or too large to re-encode), where the stream must end. */
size_t mt_compact_feed(struct mt_compact *c, const uint8_t *records, size_t len);
void mt_compact_free(struct mt_compact *c);

/* Keeps the size of every live block as well (for the leak scan), from
 * the next record on. */
void mt_compact_track_sizes(struct mt_compact *c);
/* Visits every live block the stream allocated (address and size), when
 * sizes are tracked.  Returns how many. */
size_t mt_compact_each_live(const struct mt_compact *c,
			    void (*fn)(void *ctx, uint64_t addr, uint64_t size), void *ctx);

#endif
