/*
 * leakkinds.c - see leakkinds.h.
 */
#include "leakkinds.h"
#include "recording.h"
#include "base/util.h"

#include <stdio.h>
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
	const struct mt_figures *figures;
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
	uint64_t n = mt_figures_weight(w->figures, b);
	k->total.count[kind] += n;
	k->total.bytes[kind] += n * b->size;
	if (b->site < k->nsites) {
		k->sites[b->site].count[kind] += n;
		k->sites[b->site].bytes[kind] += n * b->size;
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
	struct walk w = { k, &p->figures, (int)k->scan.complete };
	mt_figures_each_live(&p->figures, count_block, &w);
}

int mt_leak_kind_of(const struct mt_process *p, uint64_t key)
{
	const struct mt_leak_kinds *k = &p->kinds;
	uint64_t v = 0;
	if (!k->ran)
		return -1;
	if (k->scan.complete && k->lost.keys && mt_ptrmap_get(&k->lost, key, &v))
		return (int)(v - 1);
	return MT_LEAK_REACHABLE;
}

void mt_leak_kinds_free(struct mt_leak_kinds *k)
{
	free(k->why);
	free(k->sites);
	mt_ptrmap_destroy(&k->lost);
	memset(k, 0, sizeof *k);
}

int mt_leak_kinds_parse(const char *s, unsigned *mask, char *err, size_t len)
{
	*mask = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		unsigned m = 0;
		for (int k = 0; k < MT_LEAK_KINDS; k++)
			if (strlen(mt_leak_kind_names[k]) == n &&
			    !strncmp(s, mt_leak_kind_names[k], n))
				m = MT_LEAK_MASK(k);
		if (n == 4 && !strncmp(s, "lost", 4))
			m = MT_LEAK_LOST;
		else if (n == 3 && !strncmp(s, "all", 3))
			m = MT_LEAK_ALL;
		if (!m) {
			snprintf(
				err, len,
				"'%.*s' is no kind of leak (definite, indirect, possible, reachable, "
				"lost, all)",
				(int)(n > 64 ? 64 : n), s);
			return -1;
		}
		*mask |= m;
		s += n + (s[n] == ',');
	}
	if (!*mask) {
		snprintf(err, len,
			 "no kind of leak named (definite, indirect, possible, reachable, "
			 "lost, all)");
		return -1;
	}
	return 0;
}

const char *mt_leak_kinds_text(unsigned mask, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (int k = 0; k < MT_LEAK_KINDS; k++)
		if (mask & MT_LEAK_MASK(k)) {
			int w = snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
					 mt_leak_kind_names[k]);
			if (w < 0 || (size_t)w >= len - at)
				break;
			at += (size_t)w;
		}
	return buf;
}

void mt_kind_sum(const struct mt_kind_figures *k, unsigned mask, uint64_t *count, uint64_t *bytes)
{
	*count = *bytes = 0;
	for (int i = 0; i < MT_LEAK_KINDS; i++)
		if (mask & MT_LEAK_MASK(i)) {
			*count += k->count[i];
			*bytes += k->bytes[i];
		}
}

int mt_leak_kinds_select(struct mt_process *p, unsigned mask)
{
	const struct mt_leak_kinds *k = &p->kinds;
	if (!k->ran || !k->sites)
		return 0;
	for (size_t i = 0; i < p->figures.nsites && i < k->nsites; i++) {
		struct mt_site_stats *s = &p->figures.sites[i];
		mt_kind_sum(&k->sites[i], mask, &s->live_count, &s->live_bytes);
	}
	mt_kind_sum(&k->total, mask, &p->figures.t.live_count, &p->figures.t.live_bytes);
	return 1;
}
