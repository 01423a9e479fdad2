/*
 * blockrecs.h - the live blocks of a replay with a record each (struct
 * mt_block): what a reader of the events in time order remembers of each
 * block between its allocation and its free (the filter's pass over lives,
 * the json export, the server's listings and timeline; a reader that needs
 * only a number a block takes blockvals.h).  A pointer map finds a block's record; freed records are
 * reused through a free list, so memory is bounded by the blocks live at
 * once, never by the events.  Blocks named by serial (the recorder's
 * compact records) are found through a window indexed by serial instead of
 * the map, as the figures' are (figures.h): 4 bytes a slot, no hashing,
 * and the blocks freed in about the order they came stay close together.
 */
#ifndef MEMTRACE_BLOCKRECS_H
#define MEMTRACE_BLOCKRECS_H

#include <stddef.h>
#include <stdint.h>

#include "base/ptrmap.h"
#include "base/window.h"

struct mt_block {
	uint64_t ptr, ts, size;
	uint64_t seq; /* the caller's order of allocations */
	uint32_t site, tid;
	uint32_t aux;	    /* the caller's (the timeline: a bucket) */
	uint32_t next_free; /* the table's: index + 1 of the next free record */
};

struct mt_blockrecs {
	struct mt_ptrmap map; /* block -> record index + 1 */
	struct mt_block *recs;
	size_t n, cap;
	uint32_t free_head; /* index + 1 of a reusable record */
	size_t live;	    /* blocks kept */
	/* serials from win.base (base/window.h): a uint32_t slot each, the
	 * record index + 1 (0: none); older serials are in the map */
	struct mt_window win;
};

void mt_blockrecs_init(struct mt_blockrecs *t);
/* Frees T; harmless on a zeroed or already destroyed table. */
void mt_blockrecs_destroy(struct mt_blockrecs *t);

/* Remembers B at B->ptr, which must not be live (take it first); a block
 * at address 0 is no block and is not kept. */
void mt_blockrecs_put(struct mt_blockrecs *t, const struct mt_block *b);

/* Forgets the block at PTR: 1 with its record in *OUT, or 0 if none. */
int mt_blockrecs_take(struct mt_blockrecs *t, uint64_t ptr, struct mt_block *out);

/* For a reader that sees frees coming: asks the memory of the block at PTR
 * to be fetched. */
void mt_blockrecs_prefetch(const struct mt_blockrecs *t, uint64_t ptr);

/* The live blocks one by one (in no particular order): start with *POS 0;
 * NULL at the end.  T must not change meanwhile. */
const struct mt_block *mt_blockrecs_next(const struct mt_blockrecs *t, size_t *pos);

#endif
