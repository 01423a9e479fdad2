/*
 * sites.c - see sites.h.
 */
#include "sites.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

const char *const mt_view_names[] = { "summary", "leaks", "peak", "temporary", "frequency" };

/* Sites and totals name their figures alike: one definition serves both. */
#define AMOUNT_OF(x, view)                                                                  \
	((view) == MT_VIEW_LEAKS ? (struct mt_amount){ (x)->live_bytes, (x)->live_count } : \
	 (view) == MT_VIEW_PEAK	 ? (struct mt_amount){ (x)->peak_bytes, (x)->peak_count } : \
	 (view) == MT_VIEW_TEMPORARY ?                                                      \
				  (struct mt_amount){ 0, (x)->temporary } :                 \
				  (struct mt_amount){ (x)->allocated_bytes, (x)->allocations })

struct mt_amount mt_site_amount(const struct mt_site_stats *s, enum mt_view view)
{
	return AMOUNT_OF(s, view);
}

struct mt_amount mt_total_amount(const struct mt_totals *t, enum mt_view view)
{
	return AMOUNT_OF(t, view);
}

uint64_t mt_amount_measure(struct mt_amount a, enum mt_view view)
{
	return view == MT_VIEW_FREQUENCY || view == MT_VIEW_TEMPORARY ? a.count : a.bytes;
}

uint64_t mt_site_measure(const struct mt_site_stats *s, enum mt_view view)
{
	return mt_amount_measure(mt_site_amount(s, view), view);
}

uint64_t mt_total_measure(const struct mt_totals *t, enum mt_view view)
{
	return mt_amount_measure(mt_total_amount(t, view), view);
}

struct rank_ctx {
	const struct mt_process *p;
	enum mt_view view;
};

static int by_measure(const void *a, const void *b, void *arg)
{
	const struct rank_ctx *c = arg;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct mt_site_stats *sa = &c->p->figures.sites[ia], *sb = &c->p->figures.sites[ib];
	uint64_t ma = mt_site_measure(sa, c->view), mb = mt_site_measure(sb, c->view);
	if (ma != mb)
		return ma > mb ? -1 : 1;
	/* ties: more allocations first, then the older site */
	if (sa->allocations != sb->allocations)
		return sa->allocations > sb->allocations ? -1 : 1;
	return ia < ib ? -1 : 1;
}

uint32_t *mt_rank_sites(const struct mt_process *p, enum mt_view view, int nonzero, size_t *n)
{
	uint32_t *v = xmalloc((p->figures.nsites + 1) * sizeof *v);
	size_t k = 0;
	for (uint32_t i = 0; i < p->figures.nsites; i++)
		if (!nonzero || mt_site_measure(&p->figures.sites[i], view))
			v[k++] = i;
	struct rank_ctx c = { .p = p, .view = view };
	qsort_r(v, k, sizeof *v, by_measure, &c);
	*n = k;
	return v;
}

struct mt_symbolizer *mt_process_symbolizer(const struct mt_process *p)
{
	struct mt_symbolizer *s = mt_sym_new();
	mt_sym_set_objects(s, p->embedded);
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct mt_module *m = &p->modules[i];
		mt_sym_add_module(s, m->path, m->bias, m->start, m->end, m->build_id,
				  m->build_id_len);
	}
	return s;
}

/* A frame of the shim (libmemtrace-preload.so), named or not. */
static int shim_frame(const struct mt_frame *f)
{
	return f->module && strstr(f->module, "libmemtrace-preload") != NULL;
}

/* Frames that belong to the allocator rather than to the program: C++'s
 * operator new and the like call malloc on the user's behalf. */
static int allocator_frame(const struct mt_frame *f)
{
	if (!f->function)
		return 0;
	return strncmp(f->function, "operator new", 12) == 0 ||
	       strncmp(f->function, "operator delete", 15) == 0 ||
	       (f->module && strstr(f->module, "libmemtrace-preload"));
}

static int symbolize(const uint64_t *pcs, uint32_t n, struct mt_symbolizer *sym,
		     struct mt_frame *out, int max)
{
	int k = 0;
	/* Symbolizing is what a loop over sites spends its time on: when the
	 * request behind it is gone, every site has no frames and the loop
	 * runs out at once. */
	if (mt_budget_stopped())
		return 0;
	for (uint32_t i = 0; i < n && k < max; i++) {
		if (pcs[i] == 0) {
			out[k++] = (struct mt_frame){ .function = NULL, .address = 0 };
			continue;
		}
		/* return addresses point after the call: look up the call itself */
		k += mt_sym_resolve(sym, pcs[i] - 1, out + k, max - k);
	}
	int lead = 0;
	while (lead < k - 1 && allocator_frame(&out[lead]))
		lead++;
	if (lead)
		memmove(out, out + lead, (size_t)(k - lead) * sizeof *out);
	k -= lead;
	/* The shim's frames further up too: its dlopen wrapper (the loader's
	 * allocations while a library is loaded run through it), its own code
	 * where a signal handler interrupted it.  The program did not call
	 * them, and the BPF backend's stacks of the same calls have none. */
	int j = 0;
	for (int i = 0; i < k; i++)
		if (!shim_frame(&out[i]) || (j == 0 && i == k - 1))
			out[j++] = out[i];
	return j;
}

int mt_site_frames(const struct mt_process *p, struct mt_symbolizer *sym, uint32_t site,
		   struct mt_frame *out, int max)
{
	return symbolize(p->frames + p->site_off[site], p->site_len[site], sym, out, max);
}

/* The C library's wrappers of the mapping calls (the BPF backend's stacks
 * start in them: it sees the system call), under any of glibc's names
 * (__mmap, __GI_munmap, __brk_call...). */
static int wrapper_frame(const struct mt_frame *f)
{
	static const char *const names[] = { "mmap",	"mmap64",    "munmap",	  "mremap",
					     "brk",	"sbrk",	     "brk_call",  "GI_munmap",
					     "GI_mmap", "GI_mmap64", "GI_mremap", "GI_brk",
					     "GI_sbrk" };
	const char *n = f->function;
	if (!n)
		return 0;
	while (*n == '_')
		n++;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(n, names[i]) == 0)
			return 1;
	if (strncmp(n, "GI_", 3) == 0)
		for (n += 3; *n == '_';)
			n++;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(n, names[i]) == 0)
			return 1;
	return 0;
}

int mt_stack_frames(struct mt_symbolizer *sym, const uint64_t *pcs, uint32_t n,
		    struct mt_frame *out, int max)
{
	return symbolize(pcs, n, sym, out, max);
}

int mt_mapev_frames(const struct mt_process *p, struct mt_symbolizer *sym, const struct mt_mapev *e,
		    struct mt_frame *out, int max)
{
	int k = symbolize(p->map_frames + e->frames, e->nframes, sym, out, max), lead = 0;
	while (lead < k - 1 && wrapper_frame(&out[lead]))
		lead++;
	if (lead)
		memmove(out, out + lead, (size_t)(k - lead) * sizeof *out);
	return k - lead;
}
