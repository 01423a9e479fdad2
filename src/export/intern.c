/*
 * intern.c - see intern.h: open addressing on an FNV-1a hash of the triple.
 */
#include "intern.h"
#include "base/hash.h"
#include "base/slots.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(uint64_t h, const char *s)
{
	if (s)
		h = mt_fnv_str(h, s);
	return (h ^ (s ? 0xff : 0xfe)) * MT_FNV_PRIME; /* NULL differs from "" */
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static uint64_t pair_hash(const void *ctx, size_t k)
{
	const struct mt_pairs *t = ctx;
	return t->v[k].hash;
}

uint32_t mt_pairs_index(struct mt_pairs *t, const char *a, const char *b, uint32_t tag, int *added)
{
	uint64_t h = hash_str(hash_str(MT_FNV_SEED, a), b) ^ tag * 0x9e3779b97f4a7c15ull;
	if (mt_slots_full(t->n, t->mask))
		mt_slots_grow(&t->slot, &t->mask, 1024, 0, t->n, pair_hash, t);
	size_t i = h & t->mask;
	for (; t->slot[i]; i = (i + 1) & t->mask) {
		const struct mt_pair *k = &t->v[t->slot[i] - 1];
		if (k->hash == h && k->tag == tag && same(k->a, a) && same(k->b, b)) {
			if (added)
				*added = 0;
			return t->slot[i] - 1;
		}
	}
	mt_grow(&t->v, &t->cap, t->n, sizeof *t->v);
	t->v[t->n] = (struct mt_pair){ xstrdup(a ? a : ""), b ? xstrdup(b) : NULL, tag, 0, h };
	t->slot[i] = (uint32_t)++t->n;
	if (added)
		*added = 1;
	return (uint32_t)(t->n - 1);
}

void mt_pairs_free(struct mt_pairs *t)
{
	for (size_t k = 0; k < t->n; k++) {
		free(t->v[k].a);
		free(t->v[k].b);
	}
	free(t->v);
	free(t->slot);
	memset(t, 0, sizeof *t);
}
