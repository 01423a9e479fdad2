/*
 * blockrecs.c - see blockrecs.h; the window of serials is base/window.h's.
 */
#include "blockrecs.h"
#include "base/util.h"
#include "base/window.h"

#include <stdlib.h>
#include <string.h>

#define SERIAL_BIT (1ull << 63)

void mt_blockrecs_init(struct mt_blockrecs *t)
{
	memset(t, 0, sizeof *t);
	mt_ptrmap_xinit(&t->map, 1024);
}

void mt_blockrecs_destroy(struct mt_blockrecs *t)
{
	mt_ptrmap_destroy(&t->map);
	free(t->recs);
	mt_window_free(&t->win);
	memset(t, 0, sizeof *t);
}

static int slot_live(const void *slot)
{
	return *(const uint32_t *)slot != 0;
}

/* An older serial's block goes to the map. */
static void slot_spill(void *owner, uint64_t s, const void *slot)
{
	mt_ptrmap_xput(&((struct mt_blockrecs *)owner)->map, SERIAL_BIT | s,
		       *(const uint32_t *)slot);
}

static const struct mt_window_kind wkind = { sizeof(uint32_t), slot_live, slot_spill };

/* The window slot of PTR, or NULL when PTR is not kept there. */
static inline uint32_t *win_slot(const struct mt_blockrecs *t, uint64_t ptr)
{
	uint64_t s = ptr & ~SERIAL_BIT;
	if (!(ptr & SERIAL_BIT) || !mt_window_covers(&t->win, s))
		return NULL;
	return mt_window_slot(&t->win, sizeof(uint32_t), s);
}

void mt_blockrecs_put(struct mt_blockrecs *t, const struct mt_block *b)
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
	t->live++;
	if (b->ptr & SERIAL_BIT) {
		uint64_t s = b->ptr & ~SERIAL_BIT;
		if (!t->win.slots)
			mt_window_start(&t->win, &wkind, MT_WINDOW_FIRST_SLOTS, s);
		if (s >= t->win.base) { /* (an older serial goes to the map) */
			uint32_t *w = mt_window_reach(&t->win, &wkind, t, s);
			t->win.used += !*w;
			*w = i + 1;
			return;
		}
	}
	mt_ptrmap_xput(&t->map, b->ptr, (uint64_t)i + 1);
}

int mt_blockrecs_take(struct mt_blockrecs *t, uint64_t ptr, struct mt_block *out)
{
	uint64_t v;
	uint32_t *w = win_slot(t, ptr);
	if (w) {
		if (!*w)
			return 0;
		v = *w;
		*w = 0;
		t->win.used--;
	} else if (!ptr ||
		   (ptr & SERIAL_BIT && t->win.slots && (ptr & ~SERIAL_BIT) >= t->win.base) ||
		   !t->map.keys || !mt_ptrmap_take(&t->map, ptr, &v)) {
		return 0;
	}
	*out = t->recs[v - 1];
	t->recs[v - 1].next_free = t->free_head;
	t->free_head = (uint32_t)v;
	t->live--;
	return 1;
}

void mt_blockrecs_prefetch(const struct mt_blockrecs *t, uint64_t ptr)
{
	uint32_t *w = win_slot(t, ptr);
	if (w && *w)
		__builtin_prefetch(&t->recs[*w - 1]);
}

const struct mt_block *mt_blockrecs_next(const struct mt_blockrecs *t, size_t *pos)
{
	size_t nmap = t->map.keys ? t->map.mask + 1 : 0;
	for (; *pos < nmap; (*pos)++)
		if (t->map.keys[*pos])
			return &t->recs[t->map.vals[(*pos)++] - 1];
	const uint32_t *w = t->win.slots;
	for (; w && *pos - nmap <= t->win.mask; (*pos)++)
		if (w[*pos - nmap])
			return &t->recs[w[(*pos)++ - nmap] - 1];
	return NULL;
}
