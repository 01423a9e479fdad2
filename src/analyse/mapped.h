/*
 * mapped.h - what a process's mapping calls (MT_EXT_MMAP: mmap, munmap,
 * mremap, brk, the allocator's own mapped blocks) add up to: the memory
 * they mapped and still hold at each moment (the "mapped" series, beside
 * the heap in use and the resident memory), its peak, and the calls by kind.
 *
 * Mapped memory counts the traced calls only: address ranges that mmap and
 * mremap mapped, less what munmap and mremap took back of them (a mapping
 * made at a fixed address over another counts once); the program break's
 * moves (brk, sbrk: each call's new break less the one before it, or less
 * the last one seen when the record does not say); and the blocks an
 * allocator gave mappings of their own, while they live.
 */
#ifndef MEMTRACE_MAPPED_H
#define MEMTRACE_MAPPED_H

#include <stddef.h>
#include <stdint.h>

#include "recording.h"

struct mt_mapped {
	size_t calls;			/* mapping calls of every kind */
	size_t kind[MT_MAP_KIND_COUNT]; /* by kind (BLOCK: blocks mapped) */
	size_t failed;			/* calls that returned an error */
	size_t by_allocator;		/* calls the allocator made */
	uint64_t mmap_bytes;		/* the lengths mmap mapped, all told */
	/* mapped memory at the end, and its parts */
	uint64_t end_bytes, end_mmap, end_brk, end_blocks;
	/* at its most (the first time) */
	uint64_t peak_bytes, peak_ts;
};

void mt_mapped_of(const struct mt_process *p, struct mt_mapped *r);

/* Calls FN with the mapped memory after each of P's mapping calls, in
 * stream order (the calls' times never go back in a stream). */
typedef void (*mt_mapped_fn)(void *ctx, const struct mt_mapev *e, uint64_t bytes);
void mt_mapped_walk(const struct mt_process *p, mt_mapped_fn fn, void *ctx);

/* How far the brk or sbrk call M moved the program break (signed: 4096
 * for sbrk(4096), -4096 for sbrk(-4096), 0 for a call that failed): its
 * new break less the one before, or less *LAST, the last break seen (0:
 * none), when the record does not say.  Sets *LAST to M's new break.
 * (What M's LEN holds is what was asked, brk's address or sbrk's increment
 * zigzag-encoded, which cannot be told apart.) */
int64_t mt_brk_move(const struct mt_mapcall *m, uint64_t *last);

#endif
