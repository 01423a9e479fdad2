/*
 * ptrmap.h - an open-addressing map from a non-zero 64-bit key (a block
 * address) to a 64-bit value, with backward-shift deletion so that the
 * endless insert/remove churn of malloc/free never leaves tombstones behind.
 * Memory comes from mmap, so the shim can use it inside a traced process.
 */
#ifndef MEMTRACE_PTRMAP_H
#define MEMTRACE_PTRMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "hash.h"

struct mt_ptrmap {
	uint64_t *keys, *vals;
	size_t mask, used;
};

static inline uint64_t mt_ptrmap_hash(uint64_t x)
{
	return mt_hash64(x);
}

static inline void *mt_ptrmap_mem(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static inline int mt_ptrmap_init(struct mt_ptrmap *m, size_t slots /* power of two */)
{
	m->keys = mt_ptrmap_mem(slots * sizeof *m->keys);
	m->vals = mt_ptrmap_mem(slots * sizeof *m->vals);
	m->mask = slots - 1;
	m->used = 0;
	return m->keys && m->vals ? 0 : -1;
}

static inline void mt_ptrmap_destroy(struct mt_ptrmap *m)
{
	if (m->keys)
		munmap(m->keys, (m->mask + 1) * sizeof *m->keys);
	if (m->vals)
		munmap(m->vals, (m->mask + 1) * sizeof *m->vals);
	m->keys = m->vals = NULL;
}

static inline int mt_ptrmap_put(struct mt_ptrmap *m, uint64_t key, uint64_t val);

static inline int mt_ptrmap_grow(struct mt_ptrmap *m)
{
	struct mt_ptrmap n;
	if (mt_ptrmap_init(&n, (m->mask + 1) * 2) < 0) {
		mt_ptrmap_destroy(&n);
		return -1;
	}
	for (size_t i = 0; i <= m->mask; i++)
		if (m->keys[i])
			mt_ptrmap_put(&n, m->keys[i], m->vals[i]);
	mt_ptrmap_destroy(m);
	*m = n;
	return 0;
}

/* Inserts or replaces KEY.  A map that cannot grow keeps working, fuller;
 * returns -1 only when it is full and KEY could not be added, which the
 * caller must count or report: a dropped block would later look like an
 * unmatched free. */
static inline int mt_ptrmap_put(struct mt_ptrmap *m, uint64_t key, uint64_t val)
{
	if (!key) /* no key (an empty slot's): never stored, never found */
		return 0;
	if ((m->used + 1) * 4 > (m->mask + 1) * 3 && (mt_ptrmap_grow(m) < 0 && m->used == m->mask))
		return -1;
	size_t i = mt_ptrmap_hash(key) & m->mask;
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & m->mask;
	if (!m->keys[i])
		m->used++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

/* Removes KEY; returns 1 with its value in *val, or 0 if it was absent. */
static inline int mt_ptrmap_take(struct mt_ptrmap *m, uint64_t key, uint64_t *val)
{
	if (!key) /* (else it would "find" an empty slot, and free it again) */
		return 0;
	size_t i = mt_ptrmap_hash(key) & m->mask;
	while (m->keys[i] != key) {
		if (!m->keys[i])
			return 0;
		i = (i + 1) & m->mask;
	}
	*val = m->vals[i];
	for (size_t j = (i + 1) & m->mask; m->keys[j]; j = (j + 1) & m->mask) {
		size_t home = mt_ptrmap_hash(m->keys[j]) & m->mask;
		/* j's entry may move into the hole at i unless its home lies in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->used--;
	return 1;
}

/* Looks KEY up without changing the map: 1 with its value in *val, or 0. */
static inline int mt_ptrmap_get(const struct mt_ptrmap *m, uint64_t key, uint64_t *val)
{
	for (size_t i = mt_ptrmap_hash(key) & m->mask; m->keys[i]; i = (i + 1) & m->mask)
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return 1;
		}
	return 0;
}

/* In the memtrace binary (not the shim), a map that cannot be made or grown
 * is out of memory: the one policy of base/util.h, never a silent loss. */
void mt_oom(size_t n) __attribute__((noreturn));

static inline void mt_ptrmap_xinit(struct mt_ptrmap *m, size_t slots)
{
	if (mt_ptrmap_init(m, slots) < 0)
		mt_oom(slots * 2 * sizeof(uint64_t));
}

static inline void mt_ptrmap_xput(struct mt_ptrmap *m, uint64_t key, uint64_t val)
{
	if (mt_ptrmap_put(m, key, val) < 0)
		mt_oom((m->mask + 1) * 4 * sizeof(uint64_t));
}

#endif
