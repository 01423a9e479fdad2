/*
 * hash.h - the project's hashes: the finalizer of MurmurHash3
 * (fmix64's first half), enough to spread block addresses, stack ids and
 * interned pointers over power-of-two tables; and FNV-1a for names, paths
 * and build-ids, which every string table shares.  Header-only, so the
 * shim and the BPF loader use them without linking anything.
 */
#ifndef MEMTRACE_HASH_H
#define MEMTRACE_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t mt_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	return x ^ (x >> 33);
}

/* FNV-1a, for names, paths and build-ids: the hash H of what came before
 * (MT_FNV_SEED to start) with the N bytes at P, or the string S, folded
 * in. */
#define MT_FNV_SEED 0xcbf29ce484222325ull
#define MT_FNV_PRIME 0x100000001b3ull

static inline uint64_t mt_fnv_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * MT_FNV_PRIME;
	return h;
}

static inline uint64_t mt_fnv_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * MT_FNV_PRIME;
	return h;
}

/* Folds V into the running hash H (for keys of several words). */
static inline uint64_t mt_hash_combine(uint64_t h, uint64_t v)
{
	return mt_hash64(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
}

#endif
