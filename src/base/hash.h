/*
 * hash.h - the one 64-bit hash of the project: the finalizer of MurmurHash3
 * (fmix64's first half), enough to spread block addresses, stack ids and
 * interned pointers over power-of-two tables.  Header-only, so the shim and
 * the BPF loader use it without linking anything.
 */
#ifndef MEMTRACE_HASH_H
#define MEMTRACE_HASH_H

#include <stdint.h>

static inline uint64_t mt_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	return x ^ (x >> 33);
}

/* Folds V into the running hash H (for keys of several words). */
static inline uint64_t mt_hash_combine(uint64_t h, uint64_t v)
{
	return mt_hash64(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
}

#endif
