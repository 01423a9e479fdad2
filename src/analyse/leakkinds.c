/*
 * leakkinds.c - see leakkinds.h.
 */
#include "leakkinds.h"
#include "recording.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void mt_leak_kinds_event(struct mt_leak_kinds *k, const struct mt_event *ev)
{
	if (ev->ext == MT_EXT_SCAN) {
		k->ran = 1;
		k->scan = ev->scan;
		free(k->why);
		k->why = ev->text.len ? xstrndup(ev->text.s, ev->text.len) : NULL;
		mt_ptrmap_destroy(&k->lost);
		return;
	}
	if (ev->ext != MT_EXT_LEAKS || !k->ran)
		return; /* (a LEAKS record before any SCAN says nothing) */
	if (!k->lost.keys)
		mt_ptrmap_xinit(&k->lost, 1024);
	for (unsigned i = 0; i < ev->nframes; i++)
		if (ev->frames[i])
			mt_ptrmap_xput(&k->lost, ev->frames[i], ev->value + 1);
}

struct walk {
	struct mt_leak_kinds *k;
	int complete;
};

static void count_block(void *ctx, const struct mt_live *b)
{
	struct walk *w = ctx;
	struct mt_leak_kinds *k = w->k;
	uint64_t v = 0;
	/* a block no LEAKS record names is reachable; so is every block of
	 * a scan that could not read all it needed (never a false leak) */
	unsigned kind = w->complete && k->lost.keys && mt_ptrmap_get(&k->lost, b->ptr, &v) ?
				(unsigned)(v - 1) :
				MT_LEAK_REACHABLE;
	k->total.count[kind]++;
	k->total.bytes[kind] += b->size;
	if (b->site < k->nsites) {
		k->sites[b->site].count[kind]++;
		k->sites[b->site].bytes[kind] += b->size;
	}
}

void mt_leak_kinds_finish(struct mt_process *p)
{
	struct mt_leak_kinds *k = &p->kinds;
	if (!k->ran)
		return;
	k->nsites = p->figures.nsites;
	k->sites = xcalloc(k->nsites ? k->nsites : 1, sizeof *k->sites);
	memset(&k->total, 0, sizeof k->total);
	struct walk w = { k, (int)k->scan.complete };
	mt_figures_each_live(&p->figures, count_block, &w);
	mt_ptrmap_destroy(&k->lost);
}

void mt_leak_kinds_free(struct mt_leak_kinds *k)
{
	free(k->why);
	free(k->sites);
	mt_ptrmap_destroy(&k->lost);
	memset(k, 0, sizeof *k);
}
