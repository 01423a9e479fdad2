/*
 * select.c - see select.h.
 */
#include "select.h"
#include "blockrecs.h"
#include "base/ptrmap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

struct mt_sel_proc {
	uint32_t stream;
	struct mt_filter_proc fp;
	uint64_t *bits; /* allocation ordinal -> matched */
	size_t nwords;
	uint64_t next_ord;
	struct mt_blockrecs lives; /* pass A: each live block, seq its allocation's ordinal */
	struct mt_ptrmap threads;  /* pass A: tid + 1 -> the block its last event allocated */
	struct mt_ptrmap live;	   /* the gate: matched ptr -> 1 */
};

struct pass {
	struct mt_selection *s;
	const struct mt_replay_ops *ops;
};

static struct mt_sel_proc *state_of(struct mt_selection *s, const struct mt_process *p,
				    size_t *index)
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

/* Sets the bit of block B's allocation if it matches, ended at END_TS
 * (FREED) or leaked.  B's aux says whether its id is one of the filter's
 * "where" (see life_begin). */
static void life_ends(struct mt_sel_proc *sp, const struct mt_block *b, int freed, uint64_t end_ts,
		      int temporary)
{
	if (sp->fp.f->where && !b->aux)
		return;
	struct mt_life l = { .ptr = b->ptr,
			     .size = b->size,
			     .ts = b->ts,
			     .free_ts = end_ts,
			     .site = b->site,
			     .tid = b->tid,
			     .freed = freed,
			     .temporary = temporary };
	if (mt_filter_match(&sp->fp, &l))
		set_bit(sp, b->seq);
}

/* Whether the allocation with id ID + 1 is one the "where" condition matched. */
static int where_bit(const struct mt_filter *f, uint64_t id)
{
	return id < f->where_n && (f->where_bits[id >> 6] >> (id & 63) & 1);
}

static void life_begin(struct mt_selection *s, struct mt_sel_proc *sp, const struct mt_event *ev,
		       uint64_t ptr, uint64_t size, uint32_t site)
{
	struct mt_block old;
	uint64_t ord = sp->next_ord++;
	/* ids count the blocks of the whole file in the order of its events,
	 * as query/db.c numbers its rows */
	uint32_t in_where = ptr && sp->fp.f->where ? (uint32_t)where_bit(sp->fp.f, s->where_next) :
						     0;
	if (ptr)
		s->where_next++;
	/* allocated again without a free we saw: the old one ends here */
	if (mt_blockrecs_take(&sp->lives, ptr, &old))
		life_ends(sp, &old, 1, ev->ts, 0);
	mt_blockrecs_put(&sp->lives, &(struct mt_block){ .ptr = ptr,
							 .ts = ev->ts,
							 .size = size,
							 .seq = ord,
							 .site = site,
							 .tid = ev->tid,
							 .aux = in_where });
	mt_ptrmap_xput(&sp->threads, (uint64_t)ev->tid + 1, ptr);
}

static void life_end(struct mt_sel_proc *sp, const struct mt_event *ev, uint64_t ptr)
{
	uint64_t last = 0;
	struct mt_block b;
	mt_ptrmap_take(&sp->threads, (uint64_t)ev->tid + 1, &last);
	if (mt_blockrecs_take(&sp->lives, ptr, &b))
		life_ends(sp, &b, 1, ev->ts, last == ptr);
}

static enum mt_gate pass_lives(void *ctx, struct mt_process *p, const struct mt_event *ev,
			       uint32_t site)
{
	struct mt_sel_proc *sp = state_of(ctx, p, NULL);
	if (!sp)
		return MT_GATE_SKIP;
	if (ev->type == MT_REC_FREE || ev->type == MT_REC_REALLOC)
		life_end(sp, ev, ev->type == MT_REC_FREE ? ev->ptr : ev->old_ptr);
	if (ev->type != MT_REC_FREE)
		life_begin(ctx, sp, ev, ev->ptr, ev->size, site);
	return MT_GATE_SKIP; /* this load's own figures are not used */
}

static void lives_leaked(struct mt_sel_proc *sp)
{
	size_t pos = 0;
	for (const struct mt_block *b; (b = mt_blockrecs_next(&sp->lives, &pos));)
		life_ends(sp, b, 0, 0, 0);
	mt_blockrecs_destroy(&sp->lives);
}

/* ---- the gate: matched allocations and their frees ---- */

static enum mt_gate gate(struct mt_sel_proc *sp, const struct mt_event *ev)
{
	uint64_t v;
	int old_m = 0, new_m = 0;
	if (ev->type != MT_REC_ALLOC)
		old_m = mt_ptrmap_take(&sp->live, ev->type == MT_REC_FREE ? ev->ptr : ev->old_ptr,
				       &v);
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
		return old_m && new_m ? MT_GATE_PASS :
		       old_m	      ? MT_GATE_FREE_ONLY :
		       new_m	      ? MT_GATE_ALLOC_ONLY :
					MT_GATE_SKIP;
	}
}

static enum mt_gate pass_matched(void *ctx, struct mt_process *p, const struct mt_event *ev,
				 uint32_t site)
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

static int select_over(struct mt_selection *s, const struct mt_filter *f, char *err, size_t errlen);

int mt_select_load(struct mt_selection *s, const char *path, const struct mt_filter *f, char *err,
		   size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->path = path;
	if (mt_recording_load(&s->all, path, err, errlen) < 0)
		return -1;
	return select_over(s, f, err, errlen);
}

int mt_select_load_over(struct mt_selection *s, const struct mt_recording *all, const char *path,
			const struct mt_filter *f, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->path = path;
	s->all = *all;
	s->borrowed = 1;
	return select_over(s, f, err, errlen);
}

static int select_over(struct mt_selection *s, const struct mt_filter *f, char *err, size_t errlen)
{
	int rc = -1;
	const char *path = s->path;
	s->procs = xcalloc(s->all.nprocs ? s->all.nprocs : 1, sizeof *s->procs);
	for (size_t i = 0; i < s->all.nprocs; i++)
		s->procs[i].stream = s->all.procs[i]->stream;
	s->filtered = f && f->active;
	s->filter = s->filtered ? f : NULL;
	if (s->filtered && f->where && !f->where_bits) {
		snprintf(err, errlen, "where: the condition was not evaluated");
		rc = MT_SELECT_BAD_FILTER;
		goto fail;
	}
	if (!s->filtered) {
		s->matched = s->all;
		return 0;
	}
	for (size_t i = 0; i < s->all.nprocs; i++) {
		mt_filter_prepare(&s->procs[i].fp, f, s->all.procs[i], NULL);
		if (s->procs[i].fp.too_costly) {
			snprintf(err, errlen,
				 "%s: the pattern is too costly to match (it ran into PCRE2's "
				 "match limits); make it simpler",
				 s->procs[i].fp.too_costly);
			rc = MT_SELECT_BAD_FILTER;
			goto fail;
		}
		mt_blockrecs_init(&s->procs[i].lives);
		reset_maps(&s->procs[i]);
	}
	struct mt_recording tmp;
	struct mt_load_hook lives = { pass_lives, NULL, s, s->all.read_to };
	if (mt_recording_load_hooked(&tmp, path, &lives, err, errlen) < 0)
		goto fail;
	mt_recording_free(&tmp);
	for (size_t i = 0; i < s->all.nprocs; i++) {
		lives_leaked(&s->procs[i]);
		reset_maps(&s->procs[i]);
	}
	struct mt_load_hook matched = { pass_matched, culled_counts, s, s->all.read_to };
	if (mt_recording_load_hooked(&s->matched, path, &matched, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	mt_select_free(s);
	return rc;
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
		mt_blockrecs_destroy(&sp->lives);
	}
	free(s->procs);
	if (!s->borrowed)
		mt_recording_free(&s->all);
	memset(s, 0, sizeof *s);
}

static enum mt_gate pass_replay(void *ctx, struct mt_process *p, const struct mt_event *ev,
				uint32_t site)
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
	return MT_GATE_SKIP; /* the replay's own figures are not used */
}

int mt_select_replay(struct mt_selection *s, const struct mt_replay_ops *ops, char *err,
		     size_t errlen)
{
	for (size_t i = 0; i < s->all.nprocs; i++)
		reset_maps(&s->procs[i]);
	struct pass ps = { s, ops };
	struct mt_load_hook h = { pass_replay, NULL, &ps, s->all.read_to };
	struct mt_recording tmp;
	if (mt_recording_load_hooked(&tmp, s->path, &h, err, errlen) < 0)
		return -1;
	mt_recording_free(&tmp);
	return 0;
}
