/*
 * blockvals.c - see blockvals.h; the window of serials is base/window.h's.
 */
#include "blockvals.h"
#include "base/util.h"
#include "base/window.h"

#include <stdlib.h>
#include <string.h>

#define SERIAL_BIT (1ull << 63)

void mt_blockvals_init(struct mt_blockvals *m)
{
	memset(m, 0, sizeof *m);
	mt_ptrmap_xinit(&m->map, 1024);
}

void mt_blockvals_destroy(struct mt_blockvals *m)
{
	mt_ptrmap_destroy(&m->map);
	mt_window_free(&m->win);
	memset(m, 0, sizeof *m);
}

static int slot_live(const void *slot)
{
	return *(const uint64_t *)slot != 0;
}

/* An older serial's value goes to the map. */
static void slot_spill(void *owner, uint64_t s, const void *slot)
{
	mt_ptrmap_xput(&((struct mt_blockvals *)owner)->map, SERIAL_BIT | s,
		       *(const uint64_t *)slot);
}

static const struct mt_window_kind wkind = { sizeof(uint64_t), slot_live, slot_spill };

void mt_blockvals_put(struct mt_blockvals *m, uint64_t key, uint64_t val)
{
	if (key & SERIAL_BIT) {
		uint64_t s = key & ~SERIAL_BIT;
		if (!m->win.slots)
			mt_window_start(&m->win, &wkind, MT_WINDOW_FIRST_SLOTS, s);
		if (s >= m->win.base) { /* (an older serial goes to the map) */
			uint64_t *w = mt_window_reach(&m->win, &wkind, m, s);
			m->win.used += !*w;
			*w = val;
			return;
		}
	}
	mt_ptrmap_xput(&m->map, key, val);
}

int mt_blockvals_take(struct mt_blockvals *m, uint64_t key, uint64_t *val)
{
	uint64_t s = key & ~SERIAL_BIT;
	if ((key & SERIAL_BIT) && m->win.slots && s >= m->win.base) {
		if (s - m->win.base > m->win.mask)
			return 0;
		uint64_t *w = mt_window_slot(&m->win, sizeof *w, s);
		if (!*w)
			return 0;
		*val = *w;
		*w = 0;
		m->win.used--;
		return 1;
	}
	return key && mt_ptrmap_take(&m->map, key, val);
}
