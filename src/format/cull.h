/*
 * cull.h - dropping short-lived allocations from a record stream.
 *
 * Fed a process's records in order, it passes them on, except that an
 * allocation freed within the threshold disappears together with its free;
 * such allocations are added to per-stack CULLED aggregates (count, bytes,
 * temporaries), emitted before the stream ends, so allocation and byte totals
 * stay exact (bytehound drops them outright).  Allocations wait in a FIFO
 * until they are older than the threshold; events behind them wait too, so
 * the order of what is emitted is the order things happened.  The FIFO is
 * bounded: past PENDING entries the oldest are let through regardless.
 *
 * Used by `memtrace record --cull-temporary` and by the standalone shim; it
 * takes its memory from mmap so it can run inside a traced process.
 */
#ifndef MEMTRACE_CULL_H
#define MEMTRACE_CULL_H

#include <stddef.h>
#include <stdint.h>

struct mt_cull;

typedef void (*mt_cull_emit_fn)(void *ctx, const uint8_t *records, size_t len);

struct mt_cull *mt_cull_new(uint64_t threshold_ns, mt_cull_emit_fn emit, void *ctx);
void mt_cull_set_pending_limit(struct mt_cull *c, uint64_t entries);
/* Feeds whole records; NOW is the current time on the stream's clock.  With
 * FINAL everything pending is emitted, then the aggregates.  Returns how
 * many bytes were taken: less than LEN if a record was malformed (or too
 * large to re-encode), where the stream must end. */
size_t mt_cull_feed(struct mt_cull *c, const uint8_t *records, size_t len, uint64_t now, int final);
void mt_cull_free(struct mt_cull *c);

#endif
