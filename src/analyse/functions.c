/*
 * functions.c - see functions.h.  One pass over the sites: each site's
 * frames are symbolized once, and its weights added to the self figures of
 * its first frame's function and to the inclusive figures of every
 * function on its stack (once, even when recursive).
 */
#include "functions.h"
#include "base/hash.h"
#include "base/slots.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const mt_fn_weight_names[MT_FW_COUNT] = { "allocations",	      "allocated_bytes",
						      "leaked_allocations",   "leaked_bytes",
						      "peak_allocations",     "peak_bytes",
						      "temporary_allocations" };

void mt_site_weights(const struct mt_site_stats *s, uint64_t out[MT_FW_COUNT])
{
	out[MT_FW_ALLOCATIONS] = s->allocations;
	out[MT_FW_ALLOCATED_BYTES] = s->allocated_bytes;
	out[MT_FW_LEAKED_ALLOCATIONS] = s->live_count;
	out[MT_FW_LEAKED_BYTES] = s->live_bytes;
	out[MT_FW_PEAK_ALLOCATIONS] = s->peak_count;
	out[MT_FW_PEAK_BYTES] = s->peak_bytes;
	out[MT_FW_TEMPORARY] = s->temporary;
}

int mt_view_weight(enum mt_view view)
{
	switch (view) {
	case MT_VIEW_LEAKS:
		return MT_FW_LEAKED_BYTES;
	case MT_VIEW_PEAK:
		return MT_FW_PEAK_BYTES;
	case MT_VIEW_TEMPORARY:
		return MT_FW_TEMPORARY;
	case MT_VIEW_FREQUENCY:
		return MT_FW_ALLOCATIONS;
	default:
		return MT_FW_ALLOCATED_BYTES;
	}
}

static uint64_t name_hash(const void *ctx, size_t k)
{
	const struct mt_functions *fs = ctx;
	return mt_fnv_str(MT_FNV_SEED, fs->v[k].name);
}

static size_t lookup(const struct mt_functions *fs, const char *name, size_t *slot)
{
	if (!fs->mask)
		return SIZE_MAX;
	size_t i = mt_fnv_str(MT_FNV_SEED, name) & fs->mask;
	for (; fs->slot[i]; i = (i + 1) & fs->mask)
		if (!strcmp(fs->v[fs->slot[i] - 1].name, name))
			return fs->slot[i] - 1;
	if (slot)
		*slot = i;
	return SIZE_MAX;
}

/* The function named NAME, added when new (with FR's file and module). */
static struct mt_func *intern(struct mt_functions *fs, const char *name, const struct mt_frame *fr)
{
	if (mt_slots_full(fs->n, fs->mask))
		mt_slots_grow(&fs->slot, &fs->mask, 256, 0, fs->n, name_hash, fs);
	size_t slot = 0, k = lookup(fs, name, &slot);
	if (k != SIZE_MAX)
		return &fs->v[k];
	mt_grow(&fs->v, &fs->cap, fs->n, sizeof *fs->v);
	fs->v[fs->n] = (struct mt_func){ .name = xstrdup(name),
					 .file = fr ? fr->file : NULL,
					 .module = fr ? fr->module : NULL };
	fs->slot[slot] = (uint32_t)++fs->n;
	return &fs->v[fs->n - 1];
}

const struct mt_func *mt_functions_find(const struct mt_functions *fs, const char *name)
{
	size_t k = lookup(fs, name, NULL);
	return k == SIZE_MAX ? NULL : &fs->v[k];
}

void mt_functions_free(struct mt_functions *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		free(fs->v[i].name);
	free(fs->v);
	free(fs->slot);
	memset(fs, 0, sizeof *fs);
}

static void add(uint64_t *to, const uint64_t *w)
{
	for (int i = 0; i < MT_FW_COUNT; i++)
		to[i] += w[i];
}

static int site_used(const struct mt_site_stats *s)
{
	return s->allocations || s->live_count || s->peak_count || s->temporary;
}

void mt_functions_build(struct mt_functions *fs, const struct mt_process *p,
			struct mt_symbolizer *sym)
{
	memset(fs, 0, sizeof *fs);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	char buf[512];
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		const struct mt_site_stats *st = &p->figures.sites[s];
		if (!site_used(st))
			continue;
		uint64_t w[MT_FW_COUNT];
		mt_site_weights(st, w);
		int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		for (int i = 0; i < n; i++) {
			struct mt_func *f =
				intern(fs, mt_frame_label(&fr[i], buf, sizeof buf), &fr[i]);
			if (i == 0)
				add(f->self, w);
			if (f->last_site == s + 1)
				continue; /* recursion: once per site */
			f->last_site = s + 1;
			f->sites++;
			add(f->incl, w);
		}
	}
}

struct rank_ctx {
	const struct mt_functions *fs;
	int w;
};

static int by_weight(const void *a, const void *b, void *arg)
{
	const struct rank_ctx *c = arg;
	const struct mt_func *x = &c->fs->v[*(const size_t *)a], *y = &c->fs->v[*(const size_t *)b];
	if (x->incl[c->w] != y->incl[c->w])
		return x->incl[c->w] > y->incl[c->w] ? -1 : 1;
	if (x->self[c->w] != y->self[c->w])
		return x->self[c->w] > y->self[c->w] ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t *mt_functions_rank(const struct mt_functions *fs, int w, size_t *n)
{
	size_t *v = xmalloc((fs->n + 1) * sizeof *v);
	for (size_t i = 0; i < fs->n; i++)
		v[i] = i;
	struct rank_ctx c = { fs, w };
	qsort_r(v, fs->n, sizeof *v, by_weight, &c);
	*n = fs->n;
	return v;
}

size_t mt_functions_neighbours(struct mt_functions *fs, const struct mt_process *p,
			       struct mt_symbolizer *sym, const char *name, int callers)
{
	memset(fs, 0, sizeof *fs);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	char buf[512];
	size_t through = 0;
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		const struct mt_site_stats *st = &p->figures.sites[s];
		if (!site_used(st))
			continue;
		int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		int at = -1;
		for (int i = 0; i < n; i++)
			if (!strcmp(mt_frame_label(&fr[i], buf, sizeof buf), name)) {
				at = i;
				if (callers)
					break; /* innermost */
			}
		if (at < 0)
			continue;
		through++;
		uint64_t w[MT_FW_COUNT];
		mt_site_weights(st, w);
		struct mt_func *f;
		if (callers)
			f = at + 1 < n ? intern(fs, mt_frame_label(&fr[at + 1], buf, sizeof buf),
						&fr[at + 1]) :
					 intern(fs, "[root]", NULL);
		else
			f = at > 0 ? intern(fs, mt_frame_label(&fr[at - 1], buf, sizeof buf),
					    &fr[at - 1]) :
				     intern(fs, mt_fn_names[st->fn], NULL);
		f->sites++;
		add(f->incl, w);
	}
	return through;
}

/* Objects of the C and C++ runtime, by file name. */
static int runtime_module(const char *path)
{
	static const char *const prefixes[] = {
		"libc.so", "libc-",	"libstdc++.so", "libgcc_s.so",	       "ld-linux",
		"ld-musl", "libc++.so", "libc++abi.so", "libmemtrace-preload", "libpthread.so",
		"libm.so"
	};
	if (!path)
		return 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* Whether FN names an allocation function of its own (sqlite3Malloc,
 * sqlite3DbMallocZero, xmalloc, g_realloc): "alloc" in its name, in any
 * case. */
static int wrapper_name(const char *fn)
{
	for (const char *s = fn; s && *s; s++)
		if (!strncasecmp(s, "alloc", 5))
			return 1;
	return 0;
}

static int same_module(const struct mt_frame *a, const struct mt_frame *b)
{
	return a->module && b->module && !strcmp(a->module, b->module);
}

int mt_useful_frame(const struct mt_frame *fr, int n)
{
	int at = 0;
	for (int i = 0; i < n; i++) {
		const char *fn = fr[i].function;
		if (runtime_module(fr[i].module))
			continue;
		if (fn && (!strncmp(fn, "operator new", 12) || !strncmp(fn, "operator delete", 15)))
			continue;
		at = i;
		break;
	}
	/* A library's own allocator: the frames of one module up to a function
	 * named as one (sqlite3MemMalloc, unsymbolized, under sqlite3Malloc),
	 * two or three of them, and the functions so named that called it
	 * (sqlite3DbMallocZero); their caller is what tells the sites apart.
	 * A program's function that calls malloc itself stays its site's name. */
	for (int j = at + 1; j < n && j <= at + 2 && same_module(&fr[j], &fr[at]); j++) {
		if (!wrapper_name(fr[j].function))
			continue;
		int k = j + 1;
		while (k + 1 < n && same_module(&fr[k], &fr[at]) && wrapper_name(fr[k].function))
			k++;
		return k < n ? k : at;
	}
	return at;
}
