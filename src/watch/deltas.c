/*
 * deltas.c - see deltas.h.  A site is known by a hash of its pid and stack:
 * snapshots number their sites afresh.  Two stacks of one process whose
 * hashes collide would only mix that process's own figures.
 */
#include "deltas.h"
#include "base/hash.h"
#include "base/slots.h"
#include "base/util.h"

#include <stdlib.h>

struct seen {
	uint64_t key, allocations, bytes;
};

struct mt_deltas {
	struct seen *v;
	size_t n, cap;
	uint32_t *slot;
	size_t mask;
};

struct mt_deltas *mt_deltas_new(void)
{
	return xcalloc(1, sizeof(struct mt_deltas));
}

void mt_deltas_free(struct mt_deltas *d)
{
	if (!d)
		return;
	free(d->v);
	free(d->slot);
	free(d);
}

static uint64_t seen_hash(const void *ctx, size_t i)
{
	return mt_hash64(((const struct mt_deltas *)ctx)->v[i].key);
}

static struct seen *seen_of(struct mt_deltas *d, uint64_t key)
{
	if (d->mask)
		for (size_t i = mt_hash64(key) & d->mask; d->slot[i]; i = (i + 1) & d->mask)
			if (d->v[d->slot[i] - 1].key == key)
				return &d->v[d->slot[i] - 1];
	if (mt_slots_full(d->n, d->mask))
		mt_slots_grow(&d->slot, &d->mask, 1024, 0, d->n, seen_hash, d);
	mt_grow(&d->v, &d->cap, d->n, sizeof *d->v);
	d->v[d->n] = (struct seen){ .key = key };
	d->slot[mt_slots_empty(d->slot, d->mask, mt_hash64(key))] = (uint32_t)++d->n;
	return &d->v[d->n - 1];
}

void mt_deltas_take(struct mt_deltas *d, struct mt_recording *snap)
{
	for (size_t i = 0; i < snap->nprocs; i++) {
		struct mt_process *p = snap->procs[i];
		struct mt_totals *t = &p->figures.t;
		t->allocations = t->allocated_bytes = 0;
		for (uint32_t s = 0; s < p->figures.nsites; s++) {
			struct mt_site_stats *st = &p->figures.sites[s];
			uint64_t key = mt_fnv_bytes(mt_hash64(p->pid), p->frames + p->site_off[s],
						    p->site_len[s] * sizeof *p->frames);
			struct seen *e = seen_of(d, key);
			/* the maps only grow while a process lives; a pid used
			 * again starts from nothing */
			uint64_t a = st->allocations >= e->allocations ? e->allocations : 0;
			uint64_t b = st->allocated_bytes >= e->bytes ? e->bytes : 0;
			e->allocations = st->allocations;
			e->bytes = st->allocated_bytes;
			st->allocations -= a;
			st->allocated_bytes -= b;
			t->allocations += st->allocations;
			t->allocated_bytes += st->allocated_bytes;
		}
	}
}
