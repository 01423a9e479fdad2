/*
 * watch.c - see watch.h.
 */
#include "watch.h"
#include "capture/bpf/procmaps.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

struct known_proc {
	uint32_t pid;
	struct mt_pinfo info;
	int have;
};

struct mt_watch {
	struct mt_bpf *b;
	struct known_proc *v;
	size_t n, cap;
};

struct mt_watch *mt_watch_new(struct mt_bpf *b)
{
	struct mt_watch *l = xcalloc(1, sizeof *l);
	l->b = b;
	return l;
}

void mt_watch_free(struct mt_watch *l)
{
	for (size_t i = 0; i < l->n; i++)
		mt_pinfo_free(&l->v[i].info);
	free(l->v);
	free(l);
}

static struct known_proc *known(struct mt_watch *l, uint32_t pid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].pid == pid)
			return &l->v[i];
	mt_grow(&l->v, &l->cap, l->n, sizeof *l->v);
	struct known_proc *k = &l->v[l->n++];
	memset(k, 0, sizeof *k);
	k->pid = pid;
	k->have = mt_pinfo_read(&k->info, (pid_t)pid) == 0;
	return k;
}

void mt_watch_add(struct mt_watch *l, uint32_t pid)
{
	known(l, pid);
}

static void note_pid(void *ctx, const struct mt_bpf_site *s)
{
	known(ctx, s->pid);
}

void mt_watch_refresh(struct mt_watch *l)
{
	mt_bpf_read_sites(l->b, 0, note_pid, l);
	/* objects mapped since (dlopen): read again while the process lives */
	for (size_t i = 0; i < l->n; i++) {
		struct mt_pinfo pi;
		if (mt_pinfo_read(&pi, (pid_t)l->v[i].pid) < 0)
			continue; /* gone: keep what we knew */
		if (!pi.nmods && l->v[i].have && l->v[i].info.nmods) {
			/* a zombie: its address space is gone, its old one told more */
			mt_pinfo_free(&pi);
			continue;
		}
		mt_pinfo_free(&l->v[i].info);
		l->v[i].info = pi;
		l->v[i].have = 1;
	}
}

struct snap {
	struct mt_watch *l;
	struct mt_recording *rec;
	int aged; /* second pass: only the outstanding figures, of old blocks */
};

static struct mt_process *process_of(struct snap *sn, uint32_t pid)
{
	for (size_t i = 0; i < sn->rec->nprocs; i++)
		if (sn->rec->procs[i]->pid == pid)
			return sn->rec->procs[i];
	struct known_proc *k = known(sn->l, pid);
	const struct mt_pinfo *pi = &k->info;
	struct mt_process *p = mt_process_add(sn->rec, pid, k->have ? (uint32_t)pi->ppid : 0,
					      k->have ? pi->exe : NULL, k->have ? pi->argv : NULL,
					      k->have ? pi->argv_len : 0, "bpf");
	/* sampled: the sites' figures are estimates (and say so) */
	p->figures.sample_mean = mt_bpf_sample_mean(sn->l->b);
	for (size_t i = 0; k->have && i < pi->nmods; i++) {
		const struct mt_pmod *m = &pi->mods[i];
		mt_process_add_module(p, m->path, m->bias, m->start, m->end, m->build_id,
				      m->build_id_len);
	}
	mt_bpf_lost(sn->l->b, pid, p->lost);
	p->figures.t.unmatched_frees = mt_bpf_unmatched_frees(sn->l->b, pid);
	/* the kernel saw it exit: its status, not "still running" */
	if (mt_bpf_exit_status(sn->l->b, pid, &p->exit_status, NULL))
		p->exited = 1;
	return p;
}

static uint32_t site_of(struct mt_process *p, const struct mt_bpf_site *s)
{
	unsigned n = s->nframes < MT_MAX_FRAMES ? s->nframes : MT_MAX_FRAMES;
	uint64_t none = 0;
	return n ? mt_process_site(p, s->frames, n) : mt_process_site(p, &none, 1);
}

static void add_site(void *ctx, const struct mt_bpf_site *s)
{
	struct snap *sn = ctx;
	struct mt_process *p = process_of(sn, s->pid);
	uint32_t site = site_of(p, s); /* may grow p->figures.sites: look it up after */
	struct mt_site_stats *st = &p->figures.sites[site];
	const char *obj = s->object != UINT32_MAX ? mt_bpf_object_path(sn->l->b, s->object) : NULL;
	if (obj && !sn->aged)
		mt_process_site_object(p, site, obj, strlen(obj));
	if (!sn->aged && s->fn >= 0 && s->fn < MT_FN_COUNT)
		st->fn = s->fn;
	struct mt_totals *t = &p->figures.t;
	if (sn->aged) {
		/* replaces the figures of every block by those of old blocks */
		st->live_bytes += s->outstanding_bytes;
		st->live_count += s->outstanding_allocations;
		t->live_bytes += s->outstanding_bytes;
		t->live_count += s->outstanding_allocations;
		return;
	}
	st->live_bytes += s->outstanding_bytes;
	st->live_count += s->outstanding_allocations;
	st->allocations += s->allocations;
	st->allocated_bytes += s->allocated_bytes;
	st->culled += s->culled;
	st->frees += s->allocations - s->outstanding_allocations;
	t->live_bytes += s->outstanding_bytes;
	t->live_count += s->outstanding_allocations;
	t->allocations += s->allocations;
	t->allocated_bytes += s->allocated_bytes;
	t->culled += s->culled;
	t->frees += s->allocations - s->outstanding_allocations;
}

void mt_watch_snapshot(struct mt_watch *l, uint64_t min_age_ns, struct mt_recording *out)
{
	memset(out, 0, sizeof *out);
	out->path = "(live)";
	struct snap sn = { .l = l, .rec = out, .aged = 0 };
	/* counts, bytes and frees from the kernel's counters */
	mt_bpf_read_sites(l->b, 0, add_site, &sn);
	if (min_age_ns) {
		/* then what is outstanding and older than MIN_AGE_NS */
		for (size_t i = 0; i < out->nprocs; i++) {
			struct mt_process *p = out->procs[i];
			for (size_t s = 0; s < p->figures.nsites; s++)
				p->figures.sites[s].live_bytes = p->figures.sites[s].live_count = 0;
			p->figures.t.live_bytes = p->figures.t.live_count = 0;
		}
		sn.aged = 1;
		mt_bpf_read_sites(l->b, min_age_ns, add_site, &sn);
	}
	for (size_t i = 0; i < out->nprocs; i++) {
		struct mt_process *p = out->procs[i];
		for (size_t s = 0; s < p->figures.nsites; s++)
			if (p->figures.sites[s].min_size == UINT64_MAX)
				p->figures.sites[s].min_size = 0; /* sizes are not kept per site */
		p->figures.finished = 1;
		mt_process_guess_heap(p); /* the report's allocator line */
	}
}
