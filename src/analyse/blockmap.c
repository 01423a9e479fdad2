/*
 * blockmap.c - see blockmap.h.  The window works as the collector's
 * (figures.c): its oldest thirty-second moves to the map when it must reach
 * further, unless that part is mostly live while a quarter of the window
 * is, in which case it doubles; a serial far ahead restarts it.
 */
#include "blockmap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define SERIAL_BIT (1ull << 63)
#define WIN_FIRST_SLOTS 1024

void mt_blockmap_init(struct mt_blockmap *m)
{
	memset(m, 0, sizeof *m);
	mt_ptrmap_xinit(&m->map, 1024);
}

void mt_blockmap_destroy(struct mt_blockmap *m)
{
	mt_ptrmap_destroy(&m->map);
	free(m->win);
	memset(m, 0, sizeof *m);
}

static void win_alloc(struct mt_blockmap *m, size_t slots, uint64_t base)
{
	m->win = xcalloc(slots, sizeof *m->win);
	m->win_mask = slots - 1;
	m->win_base = base;
	m->win_used = 0;
}

static void win_spill(struct mt_blockmap *m, uint64_t upto)
{
	uint64_t end = upto - m->win_base > m->win_mask ? m->win_base + m->win_mask + 1 : upto;
	for (uint64_t s = m->win_base; s < end && m->win_used; s++) {
		uint64_t *w = &m->win[s & m->win_mask];
		if (!*w)
			continue;
		mt_ptrmap_xput(&m->map, SERIAL_BIT | s, *w);
		*w = 0;
		m->win_used--;
	}
	m->win_base = upto;
}

static void win_grow(struct mt_blockmap *m)
{
	uint64_t *old = m->win;
	size_t n = m->win_mask + 1;
	m->win = xcalloc(n * 2, sizeof *m->win);
	for (size_t i = 0; i < n; i++)
		if (old[i]) {
			uint64_t s = m->win_base + (((uint64_t)i - m->win_base) & (n - 1));
			m->win[s & (n * 2 - 1)] = old[i];
		}
	m->win_mask = n * 2 - 1;
	free(old);
}

static size_t win_live_oldest(const struct mt_blockmap *m, size_t n)
{
	size_t live = 0;
	for (uint64_t s = m->win_base; s < m->win_base + n; s++)
		live += m->win[s & m->win_mask] != 0;
	return live;
}

static void win_make_room(struct mt_blockmap *m, uint64_t s)
{
	size_t n = m->win_mask + 1;
	if (s - m->win_base >= 2 * (uint64_t)n) {
		win_spill(m, m->win_base + n);
		if (n > WIN_FIRST_SLOTS) {
			free(m->win);
			win_alloc(m, WIN_FIRST_SLOTS, s);
		}
		m->win_base = s;
		return;
	}
	while (s - m->win_base > m->win_mask) {
		n = m->win_mask + 1;
		if (m->win_used * 4 > n && win_live_oldest(m, n / 32) * 2 > n / 32)
			win_grow(m);
		else
			win_spill(m, m->win_base + n / 32);
	}
}

void mt_blockmap_put(struct mt_blockmap *m, uint64_t key, uint64_t val)
{
	if (key & SERIAL_BIT) {
		uint64_t s = key & ~SERIAL_BIT;
		if (!m->win)
			win_alloc(m, WIN_FIRST_SLOTS, s);
		if (s >= m->win_base) { /* (an older serial goes to the map) */
			if (s - m->win_base > m->win_mask)
				win_make_room(m, s);
			uint64_t *w = &m->win[s & m->win_mask];
			m->win_used += !*w;
			*w = val;
			return;
		}
	}
	mt_ptrmap_xput(&m->map, key, val);
}

int mt_blockmap_take(struct mt_blockmap *m, uint64_t key, uint64_t *val)
{
	uint64_t s = key & ~SERIAL_BIT;
	if ((key & SERIAL_BIT) && m->win && s >= m->win_base) {
		if (s - m->win_base > m->win_mask)
			return 0;
		uint64_t *w = &m->win[s & m->win_mask];
		if (!*w)
			return 0;
		*val = *w;
		*w = 0;
		m->win_used--;
		return 1;
	}
	return key && mt_ptrmap_take(&m->map, key, val);
}
