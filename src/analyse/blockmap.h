/*
 * blockmap.h - a map from a block (its address, or the serial of the
 * recorder's compact records) to a non-zero 64-bit value, for readers that
 * follow blocks through a replay with no more than a number each (the
 * heaptrack export: the row of its allocation).  Blocks named by serial sit
 * in a window indexed by serial, as the collector's do (figures.h), the
 * others in a pointer map: 8 bytes a block freed in about the order it
 * came, found without hashing.  Memory: the live blocks, never the events.
 */
#ifndef MEMTRACE_BLOCKMAP_H
#define MEMTRACE_BLOCKMAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/ptrmap.h"
#include "base/window.h"

struct mt_blockmap {
	struct mt_ptrmap map; /* addresses, and serials below win.base */
	struct mt_window win; /* base/window.h: a uint64_t value a slot (0: none) */
};

void mt_blockmap_init(struct mt_blockmap *m);
void mt_blockmap_destroy(struct mt_blockmap *m);
/* Sets KEY (non-zero) to VAL (non-zero). */
void mt_blockmap_put(struct mt_blockmap *m, uint64_t key, uint64_t val);
/* Removes KEY: 1 with its value in *VAL, or 0 if it is not there. */
int mt_blockmap_take(struct mt_blockmap *m, uint64_t key, uint64_t *val);

#endif
