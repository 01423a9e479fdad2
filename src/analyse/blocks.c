/*
 * blocks.c - see blocks.h.
 */
#include "blocks.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void mt_blocks_init(struct mt_blocks *t)
{
	memset(t, 0, sizeof *t);
	mt_ptrmap_xinit(&t->map, 1024);
}

void mt_blocks_destroy(struct mt_blocks *t)
{
	mt_ptrmap_destroy(&t->map);
	free(t->recs);
	memset(t, 0, sizeof *t);
}

void mt_blocks_put(struct mt_blocks *t, const struct mt_block *b)
{
	uint32_t i;
	if (!b->ptr)
		return;
	if (t->free_head) {
		i = t->free_head - 1;
		t->free_head = t->recs[i].next_free;
	} else {
		mt_grow(&t->recs, &t->cap, t->n, sizeof *t->recs);
		i = (uint32_t)t->n++;
	}
	t->recs[i] = *b;
	t->recs[i].next_free = 0;
	mt_ptrmap_xput(&t->map, b->ptr, (uint64_t)i + 1);
}

int mt_blocks_take(struct mt_blocks *t, uint64_t ptr, struct mt_block *out)
{
	uint64_t v;
	if (!ptr || !t->map.keys || !mt_ptrmap_take(&t->map, ptr, &v))
		return 0;
	*out = t->recs[v - 1];
	t->recs[v - 1].next_free = t->free_head;
	t->free_head = (uint32_t)v;
	return 1;
}

const struct mt_block *mt_blocks_next(const struct mt_blocks *t, size_t *pos)
{
	for (; t->map.keys && *pos <= t->map.mask; (*pos)++)
		if (t->map.keys[*pos])
			return &t->recs[t->map.vals[(*pos)++] - 1];
	return NULL;
}
