/*
 * stacktab.c - deduplication of stacks inside the shim.
 *
 * Each distinct stack is written to the record stream once, as a STACK
 * record with a small id, and allocations refer to the id.  The table is an
 * open-addressing hash of (hash, id, frames) in mmap'd memory; it is only
 * touched with the channel lock held, so it needs no locking of its own.
 * When it fills up it is cleared and ids continue from where they were: a
 * stack is then emitted again under a new id, and the reader merges stacks
 * by content, so nothing is lost but a few bytes.
 */
#include "shim.h"
#include "base/hash.h"

#include <string.h>

struct slot {
	uint64_t hash;
	uint64_t id;
	uint32_t off, n; /* frames in the pool */
};

static struct slot *tab;
static uint64_t mask, used, next_id = 1;
static uint64_t *pool;
static size_t pool_len, pool_cap;

void mt_stacktab_init(uint64_t capacity)
{
	uint64_t cap = 1024;
	while (cap < capacity * 2 && cap < (1ull << 26))
		cap <<= 1;
	tab = mt_map(cap * sizeof *tab);
	mask = tab ? cap - 1 : 0;
	pool_cap = (size_t)cap * 16;
	pool = mt_map(pool_cap * sizeof *pool);
	used = 0;
	pool_len = 0;
}

void mt_stacktab_reset(void)
{
	if (tab)
		memset(tab, 0, (mask + 1) * sizeof *tab);
	used = 0;
	pool_len = 0;
}

/* One multiply per frame and base/hash.h's finalizer once at the end: the
 * multiply carries each frame's bits upwards, and the finalizer folds the
 * high bits into the low ones the table index is taken from.  (Finalizing
 * every frame would cost a third more on deep stacks, under the lock.) */
static inline uint64_t hash_pcs(const uint64_t *pcs, unsigned n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (unsigned i = 0; i < n; i++)
		h = (h ^ pcs[i]) * 0xff51afd7ed558ccdull;
	return mt_hash64(h) | 1; /* 0 marks an empty slot */
}

/* (a loop rather than memcmp: stacks are a few words, and the call costs
 * more than the compare) */
static inline int same(const uint64_t *a, const uint64_t *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

uint64_t mt_stacktab_intern(const uint64_t *pcs, unsigned n, int *is_new)
{
	uint64_t h = hash_pcs(pcs, n);
	if (unlikely(!tab || !pool)) {
		*is_new = 1;
		return next_id++;
	}
	for (uint64_t i = h & mask;; i = (i + 1) & mask) {
		struct slot *s = &tab[i];
		if (!s->hash)
			break;
		if (s->hash == h && s->n == n && same(pool + s->off, pcs, n)) {
			*is_new = 0;
			return s->id;
		}
	}
	if (used * 4 >= (mask + 1) * 3 || pool_len + n > pool_cap)
		mt_stacktab_reset();
	uint64_t i = h & mask;
	while (tab[i].hash)
		i = (i + 1) & mask;
	memcpy(pool + pool_len, pcs, n * sizeof *pcs);
	tab[i] = (struct slot){ .hash = h, .id = next_id, .off = (uint32_t)pool_len, .n = n };
	pool_len += n;
	used++;
	*is_new = 1;
	return next_id++;
}
