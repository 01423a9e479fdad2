/*
 * select.c - see select.h.
 */
#include "select.h"
#include "base/ptrmap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* An allocation followed through its life (pass A). */
struct life_rec {
	uint64_t ord, ts, size;
	uint32_t site, next_free;
};

struct mt_sel_proc {
	uint32_t stream;
	struct mt_filter_proc fp;
	uint64_t *bits; /* allocation ordinal -> matched */
	size_t nwords;
	uint64_t next_ord;
	struct mt_ptrmap live;    /* pass A: ptr -> life index + 1; gate: matched ptr -> 1 */
	struct mt_ptrmap threads; /* pass A: tid + 1 -> the block its last event allocated */
	struct life_rec *lives;
	size_t nlives, cap;
	uint32_t free_head; /* index + 1 of a free life record */
};

struct pass {
	struct mt_selection *s;
	const struct mt_replay_ops *ops;
};

static struct mt_sel_proc *state_of(struct mt_selection *s, const struct mt_process *p, size_t *index)
{
	for (size_t i = 0; i < s->all.nprocs; i++)
		if (s->procs[i].stream == p->stream) {
			if (index)
				*index = i;
			return &s->procs[i];
		}
	return NULL; /* a stream the first load did not see: cannot happen for one file */
}

static void reset_maps(struct mt_sel_proc *sp)
{
	mt_ptrmap_destroy(&sp->live);
	mt_ptrmap_destroy(&sp->threads);
	mt_ptrmap_xinit(&sp->live, 1024);
	mt_ptrmap_xinit(&sp->threads, 64);
	sp->next_ord = 0;
}

static void set_bit(struct mt_sel_proc *sp, uint64_t ord)
{
	size_t w = (size_t)(ord >> 6);
	if (w >= sp->nwords) {
		size_t n = sp->nwords ? sp->nwords : 64;
		while (n <= w)
			n *= 2;
		sp->bits = xrealloc(sp->bits, n * sizeof *sp->bits);
		memset(sp->bits + sp->nwords, 0, (n - sp->nwords) * sizeof *sp->bits);
		sp->nwords = n;
	}
	sp->bits[w] |= 1ull << (ord & 63);
}

static int bit(const struct mt_sel_proc *sp, uint64_t ord)
{
	size_t w = (size_t)(ord >> 6);
	return w < sp->nwords && (sp->bits[w] >> (ord & 63) & 1);
}

/* ---- pass A: lives ---- */

static void life_begin(struct mt_sel_proc *sp, const struct mt_event *ev, uint64_t ptr, uint64_t size,
		       uint32_t site)
{
	uint32_t i;
	if (sp->free_head) {
		i = sp->free_head - 1;
		sp->free_head = sp->lives[i].next_free;
	} else {
		mt_grow(&sp->lives, &sp->cap, sp->nlives, sizeof *sp->lives);
		i = (uint32_t)sp->nlives++;
	}
	sp->lives[i] = (struct life_rec){sp->next_ord++, ev->ts, size, site, 0};
	uint64_t old;
	if (mt_ptrmap_take(&sp->live, ptr, &old)) {
		/* allocated again without a free we saw: the old one ends here */
		struct life_rec *o = &sp->lives[old - 1];
		struct mt_life l = {ptr, o->size, o->ts, ev->ts, o->site, 1, 0};
		if (mt_filter_match(&sp->fp, &l))
			set_bit(sp, o->ord);
		o->next_free = sp->free_head;
		sp->free_head = (uint32_t)old;
	}
	mt_ptrmap_xput(&sp->live, ptr, i + 1);
	mt_ptrmap_xput(&sp->threads, (uint64_t)ev->tid + 1, ptr);
}

static void life_end(struct mt_sel_proc *sp, const struct mt_event *ev, uint64_t ptr)
{
	uint64_t i, last = 0;
	mt_ptrmap_take(&sp->threads, (uint64_t)ev->tid + 1, &last);
	if (!ptr || !mt_ptrmap_take(&sp->live, ptr, &i))
		return;
	struct life_rec *r = &sp->lives[i - 1];
	struct mt_life l = {ptr, r->size, r->ts, ev->ts, r->site, 1, last == ptr};
	if (mt_filter_match(&sp->fp, &l))
		set_bit(sp, r->ord);
	r->next_free = sp->free_head;
	sp->free_head = (uint32_t)i;
}

static enum mt_gate pass_lives(void *ctx, struct mt_process *p, const struct mt_event *ev, uint32_t site)
{
	struct mt_sel_proc *sp = state_of(ctx, p, NULL);
	if (!sp)
		return MT_GATE_SKIP;
	if (ev->type == MT_REC_FREE || ev->type == MT_REC_REALLOC)
		life_end(sp, ev, ev->type == MT_REC_FREE ? ev->ptr : ev->old_ptr);
	if (ev->type != MT_REC_FREE)
		life_begin(sp, ev, ev->ptr, ev->size, site);
	return MT_GATE_SKIP; /* this load's own figures are not used */
}

static void lives_leaked(struct mt_sel_proc *sp)
{
	for (size_t k = 0; k <= sp->live.mask; k++) {
		if (!sp->live.keys[k])
			continue;
		struct life_rec *r = &sp->lives[sp->live.vals[k] - 1];
		struct mt_life l = {sp->live.keys[k], r->size, r->ts, 0, r->site, 0, 0};
		if (mt_filter_match(&sp->fp, &l))
			set_bit(sp, r->ord);
	}
	free(sp->lives);
	sp->lives = NULL;
	sp->nlives = sp->cap = 0;
	sp->free_head = 0;
}

/* ---- the gate: matched allocations and their frees ---- */

static enum mt_gate gate(struct mt_sel_proc *sp, const struct mt_event *ev)
{
	uint64_t v;
	int old_m = 0, new_m = 0;
	if (ev->type != MT_REC_ALLOC)
		old_m = mt_ptrmap_take(&sp->live, ev->type == MT_REC_FREE ? ev->ptr : ev->old_ptr, &v);
	if (ev->type != MT_REC_FREE) {
		new_m = bit(sp, sp->next_ord++);
		if (new_m)
			mt_ptrmap_xput(&sp->live, ev->ptr, 1);
	}
	switch (ev->type) {
	case MT_REC_ALLOC:
		return new_m ? MT_GATE_PASS : MT_GATE_SKIP;
	case MT_REC_FREE:
		return old_m ? MT_GATE_PASS : MT_GATE_SKIP;
	default:
		return old_m && new_m ? MT_GATE_PASS
		       : old_m	      ? MT_GATE_FREE_ONLY
		       : new_m	      ? MT_GATE_ALLOC_ONLY
				      : MT_GATE_SKIP;
	}
}

static enum mt_gate pass_matched(void *ctx, struct mt_process *p, const struct mt_event *ev, uint32_t site)
{
	(void)site;
	struct mt_sel_proc *sp = state_of(ctx, p, NULL);
	return sp ? gate(sp, ev) : MT_GATE_SKIP;
}

static int culled_counts(void *ctx, struct mt_process *p)
{
	(void)p;
	/* culled allocations exist only as per-site sums: no filter applies */
	return !((struct mt_selection *)ctx)->filtered;
}

int mt_select_load(struct mt_selection *s, const char *path, const struct mt_filter *f, char *err,
		   size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->path = path;
	if (mt_recording_load(&s->all, path, err, errlen) < 0)
		return -1;
	s->procs = xcalloc(s->all.nprocs ? s->all.nprocs : 1, sizeof *s->procs);
	for (size_t i = 0; i < s->all.nprocs; i++)
		s->procs[i].stream = s->all.procs[i]->stream;
	s->filtered = f && f->active;
	if (!s->filtered) {
		s->matched = s->all;
		return 0;
	}
	for (size_t i = 0; i < s->all.nprocs; i++) {
		mt_filter_prepare(&s->procs[i].fp, f, s->all.procs[i], NULL);
		reset_maps(&s->procs[i]);
	}
	struct mt_recording tmp;
	struct mt_load_hook lives = {pass_lives, NULL, s};
	if (mt_recording_load_hooked(&tmp, path, &lives, err, errlen) < 0)
		goto fail;
	mt_recording_free(&tmp);
	for (size_t i = 0; i < s->all.nprocs; i++) {
		lives_leaked(&s->procs[i]);
		reset_maps(&s->procs[i]);
	}
	struct mt_load_hook matched = {pass_matched, culled_counts, s};
	if (mt_recording_load_hooked(&s->matched, path, &matched, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	mt_select_free(s);
	return -1;
}

void mt_select_free(struct mt_selection *s)
{
	if (s->filtered)
		mt_recording_free(&s->matched);
	for (size_t i = 0; s->procs && i < s->all.nprocs; i++) {
		struct mt_sel_proc *sp = &s->procs[i];
		mt_filter_proc_free(&sp->fp);
		mt_ptrmap_destroy(&sp->live);
		mt_ptrmap_destroy(&sp->threads);
		free(sp->bits);
		free(sp->lives);
	}
	free(s->procs);
	mt_recording_free(&s->all);
	memset(s, 0, sizeof *s);
}

static enum mt_gate pass_replay(void *ctx, struct mt_process *p, const struct mt_event *ev, uint32_t site)
{
	struct pass *ps = ctx;
	size_t idx;
	struct mt_sel_proc *sp = state_of(ps->s, p, &idx);
	if (!sp)
		return MT_GATE_SKIP;
	enum mt_gate g = ps->s->filtered ? gate(sp, ev) : MT_GATE_PASS;
	const struct mt_replay_ops *o = ps->ops;
	if (g == MT_GATE_SKIP) {
		if (o->touch)
			o->touch(o->ctx, idx, ev->ts, ev->tid);
		return MT_GATE_SKIP;
	}
	if (ev->type == MT_REC_FREE)
		o->free(o->ctx, idx, ev->ts, ev->tid, ev->ptr);
	if (ev->type == MT_REC_REALLOC && (g == MT_GATE_PASS || g == MT_GATE_FREE_ONLY))
		o->free(o->ctx, idx, ev->ts, ev->tid, ev->old_ptr);
	if (ev->type == MT_REC_ALLOC || (ev->type == MT_REC_REALLOC && g != MT_GATE_FREE_ONLY))
		o->alloc(o->ctx, idx, ev->ts, ev->tid, ev->ptr, ev->size, site);
	return MT_GATE_SKIP; /* the replay's own collector is not used */
}

int mt_select_replay(struct mt_selection *s, const struct mt_replay_ops *ops, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->all.nprocs; i++)
		reset_maps(&s->procs[i]);
	struct pass ps = {s, ops};
	struct mt_load_hook h = {pass_replay, NULL, &ps};
	struct mt_recording tmp;
	if (mt_recording_load_hooked(&tmp, s->path, &h, err, errlen) < 0)
		return -1;
	mt_recording_free(&tmp);
	return 0;
}
