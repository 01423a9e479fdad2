/*
 * diff.c - call sites of two recordings matched by their frames (diff.h).
 */
#include "diff.h"
#include "base/hash.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}

/* The module of P that holds ADDR, or NULL. */
static const struct mt_module *module_at(const struct mt_process *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nmodules; i++)
		if (addr >= p->modules[i].start && addr < p->modules[i].end)
			return &p->modules[i];
	return NULL;
}

/* Appends S and a separator to the key being built in *K. */
static void key_add(char **k, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);
	if (*len + n + 2 > *cap) {
		*cap = (*len + n + 2) * 2;
		*k = xrealloc(*k, *cap);
	}
	memcpy(*k + *len, s, n);
	*len += n;
	(*k)[(*len)++] = '\x1f'; /* a byte no name holds */
	(*k)[*len] = 0;
}

static const char *keep(struct mt_diff *d, const char *s)
{
	if (!s)
		return NULL;
	mt_grow(&d->strings, &d->strings_cap, d->nstrings, sizeof *d->strings);
	return d->strings[d->nstrings++] = xstrdup(s);
}

/* The name module M (of a recording added first or later) goes by in keys:
 * its file name, or the file name of the first module met with its build
 * id.  Two builds of a program (same path, other build ids) match by file
 * name; the same object recorded under two paths (the shim names objects
 * as the loader does, through symbolic links; the BPF backend as /proc
 * does, resolved) by build id. */
static const char *alias_of(struct mt_diff *d, const struct mt_module *m)
{
	const char *name = base_name(m->path);
	if (!m->build_id_len || !name)
		return name;
	for (size_t i = 0; i < d->naliases; i++)
		if (d->aliases[i].len == m->build_id_len &&
		    !memcmp(d->aliases[i].id, m->build_id, m->build_id_len))
			return d->aliases[i].name;
	mt_grow(&d->aliases, &d->aliases_cap, d->naliases, sizeof *d->aliases);
	d->aliases[d->naliases++] =
		(struct mt_diff_alias){ m->build_id, m->build_id_len, keep(d, name) };
	return d->aliases[d->naliases - 1].name;
}

/* The key of a site: its allocator function, then each frame from the
 * leaf out to main.  A frame with a function is keyed by the function's
 * name alone: the same code matches whatever its module is called (a
 * binary renamed or copied, app and app2; a library under another path; a
 * rebuild, whose build ID changed).  One without is keyed by its offset in
 * its module, the module named by build ID when it has one (NAMES, by
 * module index: alias_of), else by file name; one in no known module by
 * its address (the same in two runs of a program loaded at a fixed
 * address).  Frames beyond main are the C library's start-up, as in the
 * trees that show the sites: left out, so that they cannot tell two runs'
 * sites apart (a BPF recording may know no module there, whose addresses
 * then move with ASLR). */
static char *site_key(const struct mt_process *p, const char *const *names, int fn,
		      const struct mt_frame *fr, int n)
{
	char *k = NULL, buf[64];
	size_t len = 0, cap = 0;
	key_add(&k, &len, &cap, mt_fn_names[fn]);
	for (int i = 0; i < n; i++) {
		if (fr[i].function) {
			key_add(&k, &len, &cap, fr[i].function);
			if (!strcmp(fr[i].function, "main") && !fr[i].inlined)
				break;
			continue;
		}
		const struct mt_module *m = module_at(p, fr[i].address);
		const char *mod = m ? names[m - p->modules] : NULL;
		snprintf(buf, sizeof buf, "+0x%llx",
			 (unsigned long long)(mod ? fr[i].address - m->bias : fr[i].address));
		key_add(&k, &len, &cap, buf);
		key_add(&k, &len, &cap, mod ? mod : "");
	}
	return k;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0x243f6a8885a308d3ull;
	for (; *s; s++)
		h = mt_hash_combine(h, (unsigned char)*s);
	return h;
}

static void rehash(struct mt_diff *d)
{
	size_t cap = d->mask ? (d->mask + 1) * 2 : 1024;
	__typeof__(d->index) idx = xcalloc(cap, sizeof *idx);
	for (size_t i = 0; d->mask && i <= d->mask; i++) {
		if (!d->index[i].site)
			continue;
		size_t j = d->index[i].hash & (cap - 1);
		while (idx[j].site)
			j = (j + 1) & (cap - 1);
		idx[j] = d->index[i];
	}
	free(d->index);
	d->index = idx;
	d->mask = cap - 1;
}

/* The diff site of KEY (taken), made with frames FR when new. */
static struct mt_diff_site *site_for(struct mt_diff *d, char *key, int fn,
				     const struct mt_frame *fr, int n)
{
	if ((d->n + 1) * 4 > d->mask * 3)
		rehash(d);
	uint64_t h = str_hash(key);
	size_t j = h & d->mask;
	for (; d->index[j].site; j = (j + 1) & d->mask)
		if (d->index[j].hash == h && !strcmp(d->index[j].key, key)) {
			free(key);
			return &d->sites[d->index[j].site - 1];
		}
	mt_grow(&d->sites, &d->cap, d->n, sizeof *d->sites);
	struct mt_diff_site *s = &d->sites[d->n++];
	*s = (struct mt_diff_site){ .fn = fn, .nframes = n };
	s->frames = xcalloc(n ? (size_t)n : 1, sizeof *s->frames);
	for (int i = 0; i < n; i++) {
		s->frames[i] = fr[i];
		s->frames[i].function = keep(d, fr[i].function);
		s->frames[i].file = keep(d, fr[i].file);
		s->frames[i].module = keep(d, fr[i].module);
	}
	d->index[j].hash = h;
	d->index[j].key = key;
	d->index[j].site = (uint32_t)d->n;
	return s;
}

static void add_stats(struct mt_site_stats *to, const struct mt_site_stats *s)
{
	if (!to->allocations || (s->allocations && s->min_size < to->min_size))
		to->min_size = s->min_size;
	if (s->max_size > to->max_size)
		to->max_size = s->max_size;
	to->allocations += s->allocations;
	to->allocated_bytes += s->allocated_bytes;
	to->frees += s->frees;
	to->temporary += s->temporary;
	to->live_count += s->live_count;
	to->live_bytes += s->live_bytes;
	to->peak_bytes += s->peak_bytes;
	to->peak_count += s->peak_count;
	to->culled += s->culled;
}

static void add_totals(struct mt_totals *to, const struct mt_totals *t)
{
	to->allocations += t->allocations;
	to->frees += t->frees;
	to->allocated_bytes += t->allocated_bytes;
	to->live_bytes += t->live_bytes;
	to->live_count += t->live_count;
	to->peak_bytes += t->peak_bytes;
	to->peak_count += t->peak_count;
	to->temporary += t->temporary;
	to->unmatched_frees += t->unmatched_frees;
	to->culled += t->culled;
	to->suppressed_count += t->suppressed_count;
	to->suppressed_bytes += t->suppressed_bytes;
}

static void add_side(struct mt_diff *d, const struct mt_recording *rec, int is_new)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		add_totals(is_new ? &d->new : &d->base, &p->figures.t);
		if (p->figures.sample_mean)
			d->sampled = 1;
		struct mt_symbolizer *sym = mt_process_symbolizer(p);
		const char **names = xcalloc(p->nmodules ? p->nmodules : 1, sizeof *names);
		for (size_t m = 0; m < p->nmodules; m++)
			names[m] = alias_of(d, &p->modules[m]);
		for (uint32_t s = 0; s < p->figures.nsites; s++) {
			const struct mt_site_stats *st = &p->figures.sites[s];
			if (!st->allocations && !st->frees && !st->culled)
				continue;
			int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
			struct mt_diff_site *ds =
				site_for(d, site_key(p, names, st->fn, fr, n), st->fn, fr, n);
			add_stats(is_new ? &ds->new : &ds->base, st);
		}
		free(names);
		mt_sym_free(sym);
	}
}

int mt_diff_build(struct mt_diff *d, const struct mt_recording *base,
		  const struct mt_recording *new)
{
	memset(d, 0, sizeof *d);
	rehash(d);
	add_side(d, base, 0);
	add_side(d, new, 1);
	free(d->aliases); /* they point into the recordings */
	d->aliases = NULL;
	d->naliases = d->aliases_cap = 0;
	return 0;
}

void mt_diff_free(struct mt_diff *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->sites[i].frames);
	for (size_t i = 0; d->index && i <= d->mask; i++)
		free(d->index[i].key);
	for (size_t i = 0; i < d->nstrings; i++)
		free(d->strings[i]);
	free(d->sites);
	free(d->index);
	free(d->strings);
	free(d->aliases);
	memset(d, 0, sizeof *d);
}

int64_t mt_diff_measure(const struct mt_diff_site *s, enum mt_view view)
{
	return mt_sat_sub(mt_site_measure(&s->new, view), mt_site_measure(&s->base, view));
}

int64_t mt_diff_total_measure(const struct mt_diff *d, enum mt_view view)
{
	return mt_sat_sub(mt_total_measure(&d->new, view), mt_total_measure(&d->base, view));
}

struct rank_ctx {
	const struct mt_diff *d;
	enum mt_view view;
};

static int by_growth(const void *a, const void *b, void *arg)
{
	const struct rank_ctx *c = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int64_t dx = mt_diff_measure(&c->d->sites[x], c->view),
		dy = mt_diff_measure(&c->d->sites[y], c->view);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return x < y ? -1 : x > y; /* the order they were met: stable */
}

int mt_diff_changed(const struct mt_diff_site *s, enum mt_view view)
{
	struct mt_amount a = mt_site_amount(&s->new, view), b = mt_site_amount(&s->base, view);
	return mt_diff_measure(s, view) || a.bytes != b.bytes || a.count != b.count;
}

uint32_t *mt_diff_rank(const struct mt_diff *d, enum mt_view view, int changed, size_t *n)
{
	uint32_t *v = xmalloc((d->n ? d->n : 1) * sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < d->n; i++)
		if (!changed || mt_diff_changed(&d->sites[i], view))
			v[k++] = (uint32_t)i;
	struct rank_ctx c = { d, view };
	qsort_r(v, k, sizeof *v, by_growth, &c);
	*n = k;
	return v;
}
