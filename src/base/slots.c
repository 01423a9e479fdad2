/*
 * slots.c - growing the indexes of slots.h.
 */
#include "slots.h"
#include "util.h"

#include <stdlib.h>

void mt_slots_grow(uint32_t **slot, size_t *mask, size_t min, size_t from, size_t n,
		   uint64_t (*hash)(const void *ctx, size_t i), const void *ctx)
{
	size_t cap = *mask ? (*mask + 1) * 2 : min;
	free(*slot);
	*slot = xcalloc(cap, sizeof **slot);
	*mask = cap - 1;
	for (size_t i = from; i < n; i++)
		(*slot)[mt_slots_empty(*slot, *mask, hash(ctx, i))] = (uint32_t)i + 1;
}
