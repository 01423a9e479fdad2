/*
 * resident.c - see resident.h.
 */
#include "resident.h"

#include <string.h>

static uint64_t beyond(const struct mt_rss_sample *s)
{
	return s->m.anon > s->heap ? s->m.anon - s->heap : 0;
}

void mt_resident_of(const struct mt_process *p, struct mt_resident *r)
{
	memset(r, 0, sizeof *r);
	r->samples = p->nrss;
	if (!p->nrss)
		return;
	for (size_t i = 0; i < p->nrss; i++) {
		const struct mt_rss_sample *s = &p->rss[i];
		if (s->m.rss > r->peak_rss) {
			r->peak_rss = s->m.rss;
			r->peak_ts = s->ts;
			r->peak_heap = s->heap;
			r->peak_anon = s->m.anon;
			r->peak_file = s->m.file;
			r->peak_shmem = s->m.shmem;
		}
		if (s->m.ring > r->ring_peak)
			r->ring_peak = s->m.ring;
		if (beyond(s) > r->beyond_bytes || i == 0) {
			r->beyond_bytes = beyond(s);
			r->beyond_ts = s->ts;
			r->beyond_heap = s->heap;
		}
		if (s->m.vm_data > r->vm_data_peak)
			r->vm_data_peak = s->m.vm_data;
	}
	const struct mt_rss_sample *e = &p->rss[p->nrss - 1];
	r->end_ts = e->ts;
	r->end_rss = e->m.rss;
	r->end_anon = e->m.anon;
	r->end_file = e->m.file;
	r->end_shmem = e->m.shmem;
	r->end_heap = e->heap;
	r->end_beyond = beyond(e);
}
