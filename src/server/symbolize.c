/*
 * symbolize.c - a loaded process's call sites symbolized once, before it is
 * served, so that requests only read frames: each site's frames, leaf
 * first, as indices into the process's distinct frames (srv_proc).
 */
#include "server.h"
#include "base/hash.h"
#include "base/progress.h"
#include "base/util.h"

#include <stdlib.h>

static uint64_t frame_hash(const struct mt_frame *f, uint64_t salt)
{
	uint64_t h = mt_hash64(f->address ^ ((uint64_t)f->inlined << 63) ^ salt);
	h = mt_hash_combine(h, (uint64_t)(uintptr_t)f->function);
	h = mt_hash_combine(h, (uint64_t)(uintptr_t)f->file);
	h = mt_hash_combine(h, (uint64_t)(uintptr_t)f->module);
	return mt_hash_combine(h, (uint64_t)f->line);
}

/* The same frame: the symbolizer keeps one copy of each string. */
static int frame_same(const struct mt_frame *a, const struct mt_frame *b)
{
	return a->address == b->address && a->inlined == b->inlined && a->function == b->function &&
	       a->file == b->file && a->module == b->module && a->line == b->line;
}

/* The distinct frames of a process, found by hash while it is symbolized. */
struct frame_set {
	uint32_t *index; /* frame + 1, 0 = empty */
	size_t mask, cap;
	uint64_t salt; /* addresses come from the file (mt_hash_salt) */
};

static uint32_t frame_id(struct srv_proc *sp, struct frame_set *fs, const struct mt_frame *f)
{
	if ((sp->nframes + 1) * 2 > (fs->index ? fs->mask + 1 : 0)) {
		free(fs->index);
		fs->mask = fs->index ? fs->mask * 2 + 1 : 1023;
		fs->index = xcalloc(fs->mask + 1, sizeof *fs->index);
		for (size_t k = 0; k < sp->nframes; k++) {
			size_t j = frame_hash(&sp->frames[k], fs->salt) & fs->mask;
			while (fs->index[j])
				j = (j + 1) & fs->mask;
			fs->index[j] = (uint32_t)k + 1;
		}
	}
	size_t i = frame_hash(f, fs->salt) & fs->mask;
	for (; fs->index[i]; i = (i + 1) & fs->mask)
		if (frame_same(&sp->frames[fs->index[i] - 1], f))
			return fs->index[i] - 1;
	mt_grow(&sp->frames, &fs->cap, sp->nframes, sizeof *sp->frames);
	sp->frames[sp->nframes] = *f;
	fs->index[i] = (uint32_t)++sp->nframes;
	return (uint32_t)sp->nframes - 1;
}

void srv_proc_symbolize(struct srv_proc *sp, const struct mt_process *p, struct mt_progress *pr)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	size_t nids = 0, cap = 0;
	struct frame_set fs = { .salt = mt_hash_salt() };
	sp->sym = mt_process_symbolizer(p);
	sp->nsites = p->figures.nsites;
	sp->site_off = xcalloc(sp->nsites + 1, sizeof *sp->site_off);
	sp->site_len = xcalloc(sp->nsites + 1, sizeof *sp->site_len);
	for (uint32_t s = 0; s < sp->nsites; s++) {
		int n = mt_site_frames(p, sp->sym, s, fr, MT_SYM_MAX_FRAMES);
		if (nids + (size_t)n + 1 >= cap) {
			cap = (nids + (size_t)n + 1) * 2;
			sp->frame_ids = xrealloc(sp->frame_ids, cap * sizeof *sp->frame_ids);
		}
		for (int k = 0; k < n; k++)
			sp->frame_ids[nids + (size_t)k] = frame_id(sp, &fs, &fr[k]);
		sp->site_off[s] = (uint32_t)nids;
		sp->site_len[s] = (uint32_t)n;
		nids += (size_t)n;
		if ((uint32_t)n > sp->max_depth)
			sp->max_depth = (uint32_t)n;
		/* (not the clock at every site) */
		if ((s & 255) == 255)
			mt_progress_at(pr, s, sp->nsites);
	}
	free(fs.index);
}
