/*
 * blockvals.h - a map from a live block (its address, or the serial of the
 * recorder's compact records) to a non-zero 64-bit value, for readers that
 * follow blocks through a replay with no more than a number each (the
 * heaptrack export: the row of its allocation; blockrecs.h keeps a whole
 * record).  Blocks named by serial sit
 * in a window indexed by serial, as the figures' do (figures.h), the
 * others in a pointer map: 8 bytes a block freed in about the order it
 * came, found without hashing.  Memory: the live blocks, never the events.
 */
#ifndef MEMTRACE_BLOCKVALS_H
#define MEMTRACE_BLOCKVALS_H

#include <stddef.h>
#include <stdint.h>

#include "base/ptrmap.h"
#include "base/window.h"

struct mt_blockvals {
	struct mt_ptrmap map; /* addresses, and serials below win.base */
	struct mt_window win; /* base/window.h: a uint64_t value a slot (0: none) */
};

void mt_blockvals_init(struct mt_blockvals *m);
void mt_blockvals_destroy(struct mt_blockvals *m);
/* Sets KEY (non-zero) to VAL (non-zero). */
void mt_blockvals_put(struct mt_blockvals *m, uint64_t key, uint64_t val);
/* Removes KEY: 1 with its value in *VAL, or 0 if it is not there. */
int mt_blockvals_take(struct mt_blockvals *m, uint64_t key, uint64_t *val);

#endif
