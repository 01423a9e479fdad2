/*
 * slots.h - the index its owner keeps beside an array of entries, for
 * looking them up by a key: open addressing over a power-of-two array of
 * slots, each holding an entry's index + 1 (0: empty), linear probing, at
 * most half full.  The owner hashes and compares its own keys; what every
 * such table did alike (when to grow, and placing the entries again) is
 * here.
 */
#ifndef MEMTRACE_SLOTS_H
#define MEMTRACE_SLOTS_H

#include <stddef.h>
#include <stdint.h>

/* Whether an index of MASK + 1 slots (MASK 0: none yet) must grow before
 * a table of N entries takes one more. */
static inline int mt_slots_full(size_t n, size_t mask)
{
	return (n + 1) * 2 > mask + 1;
}

/* Where an entry of hash H goes in an index of MASK + 1 slots (not full):
 * the first empty slot from its home on.  (Lookups probe the same way,
 * for (i = H & MASK; SLOT[i]; i = (i + 1) & MASK), comparing keys their
 * own way: a helper taking the comparison would not be shorter.) */
static inline size_t mt_slots_empty(const uint32_t *slot, size_t mask, uint64_t h)
{
	size_t i = h & mask;
	while (slot[i])
		i = (i + 1) & mask;
	return i;
}

/* Makes the index *SLOT of *MASK + 1 slots twice as large (MIN slots, a
 * power of two, when there is none yet) and places entries FROM to N - 1
 * in it again, HASH(CTX, I) giving entry I's hash. */
void mt_slots_grow(uint32_t **slot, size_t *mask, size_t min, size_t from, size_t n,
		   uint64_t (*hash)(const void *ctx, size_t i), const void *ctx);

#endif
