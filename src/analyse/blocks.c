/*
 * blocks.c - see blocks.h.
 *
 * The window works as the collector's (figures.c): its oldest
 * thirty-second moves to the map when the window must reach further,
 * unless that part is mostly live while a quarter of the window is, in
 * which case it doubles; a serial far ahead restarts it.
 */
#include "blocks.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define SERIAL_BIT (1ull << 63)
#define WIN_FIRST_SLOTS 1024

void mt_blocks_init(struct mt_blocks *t)
{
	memset(t, 0, sizeof *t);
	mt_ptrmap_xinit(&t->map, 1024);
}

void mt_blocks_destroy(struct mt_blocks *t)
{
	mt_ptrmap_destroy(&t->map);
	free(t->recs);
	free(t->win);
	memset(t, 0, sizeof *t);
}

static void win_alloc(struct mt_blocks *t, size_t slots, uint64_t base)
{
	t->win = xcalloc(slots, sizeof *t->win);
	t->win_mask = slots - 1;
	t->win_base = base;
	t->win_used = 0;
}

/* Moves the blocks of serials [win_base, UPTO) to the map. */
static void win_spill(struct mt_blocks *t, uint64_t upto)
{
	uint64_t end = upto - t->win_base > t->win_mask ? t->win_base + t->win_mask + 1 : upto;
	for (uint64_t s = t->win_base; s < end && t->win_used; s++) {
		uint32_t *w = &t->win[s & t->win_mask];
		if (!*w)
			continue;
		mt_ptrmap_xput(&t->map, SERIAL_BIT | s, *w);
		*w = 0;
		t->win_used--;
	}
	t->win_base = upto;
}

static void win_grow(struct mt_blocks *t)
{
	uint32_t *old = t->win;
	size_t n = t->win_mask + 1;
	t->win = xcalloc(n * 2, sizeof *t->win);
	for (size_t i = 0; i < n; i++)
		if (old[i]) {
			uint64_t s = t->win_base + (((uint64_t)i - t->win_base) & (n - 1));
			t->win[s & (n * 2 - 1)] = old[i];
		}
	t->win_mask = n * 2 - 1;
	free(old);
}

static size_t win_live_oldest(const struct mt_blocks *t, size_t n)
{
	size_t live = 0;
	for (uint64_t s = t->win_base; s < t->win_base + n; s++)
		live += t->win[s & t->win_mask] != 0;
	return live;
}

static void win_make_room(struct mt_blocks *t, uint64_t s)
{
	size_t n = t->win_mask + 1;
	if (s - t->win_base >= 2 * (uint64_t)n) {
		win_spill(t, t->win_base + n);
		if (n > WIN_FIRST_SLOTS) {
			free(t->win);
			win_alloc(t, WIN_FIRST_SLOTS, s);
		}
		t->win_base = s;
		return;
	}
	while (s - t->win_base > t->win_mask) {
		n = t->win_mask + 1;
		if (t->win_used * 4 > n && win_live_oldest(t, n / 32) * 2 > n / 32)
			win_grow(t);
		else
			win_spill(t, t->win_base + n / 32);
	}
}

/* The window slot of PTR, or NULL when PTR is not kept there. */
static inline uint32_t *win_slot(const struct mt_blocks *t, uint64_t ptr)
{
	uint64_t s = ptr & ~SERIAL_BIT;
	if (!(ptr & SERIAL_BIT) || !t->win || s - t->win_base > t->win_mask)
		return NULL;
	return &t->win[s & t->win_mask];
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
	t->live++;
	if (b->ptr & SERIAL_BIT) {
		uint64_t s = b->ptr & ~SERIAL_BIT;
		if (!t->win)
			win_alloc(t, WIN_FIRST_SLOTS, s);
		if (s >= t->win_base) { /* (an older serial goes to the map) */
			if (s - t->win_base > t->win_mask)
				win_make_room(t, s);
			uint32_t *w = &t->win[s & t->win_mask];
			t->win_used += !*w;
			*w = i + 1;
			return;
		}
	}
	mt_ptrmap_xput(&t->map, b->ptr, (uint64_t)i + 1);
}

int mt_blocks_take(struct mt_blocks *t, uint64_t ptr, struct mt_block *out)
{
	uint64_t v;
	uint32_t *w = win_slot(t, ptr);
	if (w) {
		if (!*w)
			return 0;
		v = *w;
		*w = 0;
		t->win_used--;
	} else if (!ptr || (ptr & SERIAL_BIT && t->win && (ptr & ~SERIAL_BIT) >= t->win_base) ||
		   !t->map.keys || !mt_ptrmap_take(&t->map, ptr, &v)) {
		return 0;
	}
	*out = t->recs[v - 1];
	t->recs[v - 1].next_free = t->free_head;
	t->free_head = (uint32_t)v;
	t->live--;
	return 1;
}

void mt_blocks_prefetch(const struct mt_blocks *t, uint64_t ptr)
{
	uint32_t *w = win_slot(t, ptr);
	if (w && *w)
		__builtin_prefetch(&t->recs[*w - 1]);
}

const struct mt_block *mt_blocks_next(const struct mt_blocks *t, size_t *pos)
{
	size_t nmap = t->map.keys ? t->map.mask + 1 : 0;
	for (; *pos < nmap; (*pos)++)
		if (t->map.keys[*pos])
			return &t->recs[t->map.vals[(*pos)++] - 1];
	for (; t->win && *pos - nmap <= t->win_mask; (*pos)++)
		if (t->win[*pos - nmap])
			return &t->recs[t->win[(*pos)++ - nmap] - 1];
	return NULL;
}
