/*
 * test_slots.c - unit test of base/slots.c, the index beside an array that
 * the function table, the exports' interned pairs, the HTML export's keys
 * and the SVG export's tree share: 5,000 keys (more than one growth from
 * the first size, with hashes that collide in their low bits) each found
 * at its own entry after every growth, entries before FROM left out of
 * the index, and the index never more than half full.
 */
#include "base/slots.h"
#include "../check.h"

#include <stdlib.h>

#define N 5000

static uint64_t keys[N];

/* A poor hash on purpose: keys 64 apart share their low bits. */
static uint64_t key_hash(const void *ctx, size_t i)
{
	const uint64_t *k = ctx;
	return k[i] * 64;
}

/* The entry holding KEY, or -1. */
static long find(const uint32_t *slot, size_t mask, uint64_t key)
{
	for (size_t j = (key * 64) & mask; slot[j]; j = (j + 1) & mask)
		if (keys[slot[j] - 1] == key)
			return (long)slot[j] - 1;
	return -1;
}

int main(void)
{
	uint32_t *slot = NULL;
	size_t mask = 0, n = 0, grew = 0;
	for (size_t i = 0; i < N; i++) {
		if (mt_slots_full(n, mask)) {
			mt_slots_grow(&slot, &mask, 16, 1, n, key_hash, keys);
			grew++;
		}
		keys[n] = i * 7 + 3;
		size_t j = (keys[n] * 64) & mask;
		while (slot[j])
			j = (j + 1) & mask;
		if (n) /* entry 0 stays out, as the SVG tree's root does */
			slot[j] = (uint32_t)n + 1;
		n++;
		CHECK(n * 2 <= mask + 1);
	}
	CHECK_EQ(mask + 1, 16384); /* 16, doubled 10 times */
	CHECK_EQ(grew, 11);
	size_t used = 0;
	for (size_t j = 0; j <= mask; j++)
		used += slot[j] != 0;
	CHECK_EQ(used, N - 1);
	CHECK_EQ(find(slot, mask, keys[0]), -1);
	for (size_t i = 1; i < N; i++)
		CHECK_EQ(find(slot, mask, keys[i]), i);
	CHECK_EQ(find(slot, mask, 4), -1); /* not a key */
	free(slot);
	return failures ? 1 : 0;
}
