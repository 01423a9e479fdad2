/*
 * report.c - the text views of `memtrace report`, and what all views share.
 */
#include "report.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

const char *const mt_view_names[] = {"summary", "leaks", "peak", "temporary", "frequency"};

uint64_t mt_site_measure(const struct mt_site_stats *s, enum mt_view view)
{
	switch (view) {
	case MT_VIEW_LEAKS:
		return s->live_bytes;
	case MT_VIEW_PEAK:
		return s->peak_bytes;
	case MT_VIEW_TEMPORARY:
		return s->temporary;
	case MT_VIEW_FREQUENCY:
		return s->allocations;
	case MT_VIEW_SUMMARY:
	default:
		return s->allocated_bytes;
	}
}

uint64_t mt_total_measure(const struct mt_totals *t, enum mt_view view)
{
	switch (view) {
	case MT_VIEW_LEAKS:
		return t->live_bytes;
	case MT_VIEW_PEAK:
		return t->peak_bytes;
	case MT_VIEW_TEMPORARY:
		return t->temporary;
	case MT_VIEW_FREQUENCY:
		return t->allocations;
	case MT_VIEW_SUMMARY:
	default:
		return t->allocated_bytes;
	}
}

static const struct mt_process *rank_proc;
static enum mt_view rank_view;

static int by_measure(const void *a, const void *b)
{
	const struct mt_site_stats *sa = &rank_proc->col.sites[*(const uint32_t *)a];
	const struct mt_site_stats *sb = &rank_proc->col.sites[*(const uint32_t *)b];
	uint64_t ma = mt_site_measure(sa, rank_view), mb = mt_site_measure(sb, rank_view);
	if (ma != mb)
		return ma > mb ? -1 : 1;
	/* ties: more allocations first, then the older site */
	if (sa->allocations != sb->allocations)
		return sa->allocations > sb->allocations ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

uint32_t *mt_rank_sites(const struct mt_process *p, enum mt_view view, int nonzero, size_t *n)
{
	uint32_t *v = xmalloc((p->col.nsites + 1) * sizeof *v);
	size_t k = 0;
	for (uint32_t i = 0; i < p->col.nsites; i++)
		if (!nonzero || mt_site_measure(&p->col.sites[i], view))
			v[k++] = i;
	rank_proc = p;
	rank_view = view;
	qsort(v, k, sizeof *v, by_measure);
	*n = k;
	return v;
}

struct mt_symbolizer *mt_process_symbolizer(const struct mt_process *p)
{
	struct mt_symbolizer *s = mt_sym_new();
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct mt_module *m = &p->modules[i];
		mt_sym_add_module(s, m->path, m->bias, m->start, m->end, m->build_id, m->build_id_len);
	}
	return s;
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

int mt_site_frames(const struct mt_process *p, struct mt_symbolizer *sym, uint32_t site,
		   struct mt_frame *out, int max)
{
	const uint64_t *pcs = p->frames + p->site_off[site];
	uint32_t n = p->site_len[site];
	int k = 0;
	for (uint32_t i = 0; i < n && k < max; i++) {
		if (pcs[i] == 0) {
			out[k++] = (struct mt_frame){.function = NULL, .address = 0};
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
	return k - lead;
}

/* ---- text ---- */

static void print_frames(FILE *f, const struct mt_frame *fr, int n, int max, const char *indent)
{
	for (int i = 0; i < n && i < max; i++) {
		const struct mt_frame *x = &fr[i];
		if (x->function)
			fprintf(f, "%s%s", indent, x->function);
		else
			fprintf(f, "%s0x%llx", indent, (unsigned long long)x->address);
		if (x->file)
			fprintf(f, " [%s:%d]", x->file, x->line);
		else if (x->module)
			fprintf(f, " (%s)", x->module);
		if (x->inlined)
			fputs(" (inlined)", f);
		fputc('\n', f);
	}
	if (n > max)
		fprintf(f, "%s... %d more frames\n", indent, n - max);
}

static void process_header(FILE *f, const struct mt_process *p)
{
	fprintf(f, "process %u: %s", p->pid, p->exe ? p->exe : "?");
	for (int i = 1; i < p->argc && i < 8; i++)
		fprintf(f, " %s", p->argv[i]);
	if (p->argc > 8)
		fputs(" ...", f);
	fprintf(f, "\n  backend %s, %.3f s", p->backend ? p->backend : "?", mt_process_duration(p));
	if (p->exited) {
		if (p->exit_status >= 0)
			fprintf(f, ", exit status %lld", (long long)p->exit_status);
		else
			fprintf(f, ", killed by signal %lld", (long long)-p->exit_status);
	}
	fputc('\n', f);
}

static void print_totals(FILE *f, const struct mt_process *p)
{
	const struct mt_totals *t = &p->col.t;
	char a[32], b[32], c[32];
	fprintf(f, "  allocations:     %s (%s)\n", mt_fmt_count(t->allocations, a), mt_fmt_bytes(t->allocated_bytes, b));
	fprintf(f, "  frees:           %s\n", mt_fmt_count(t->frees, a));
	fprintf(f, "  temporary:       %s (%.1f%% of allocations)\n", mt_fmt_count(t->temporary, a),
		t->allocations ? 100.0 * (double)t->temporary / (double)t->allocations : 0.0);
	fprintf(f, "  peak:            %s in %s blocks, at %.3f s\n", mt_fmt_bytes(t->peak_bytes, a),
		mt_fmt_count(t->peak_count, c),
		t->peak_ts > p->start_ts ? (double)(t->peak_ts - p->start_ts) / 1e9 : 0.0);
	fprintf(f, "  leaked:          %s in %s allocations\n", mt_fmt_bytes(t->live_bytes, a), mt_fmt_count(t->live_count, b));
	if (t->unmatched_frees)
		fprintf(f, "  unmatched frees: %s\n", mt_fmt_count(t->unmatched_frees, a));
	if (t->culled)
		fprintf(f, "  culled:          %s short-lived allocations (in the totals, not in the stream)\n",
			mt_fmt_count(t->culled, a));
	for (size_t i = 0; i < p->nmarkers; i++)
		fprintf(f, "  marker:          %.3f s: %s\n",
			p->markers[i].ts > p->start_ts ? (double)(p->markers[i].ts - p->start_ts) / 1e9 : 0.0,
			p->markers[i].text);
	uint64_t lost = mt_process_lost(p);
	fprintf(f, "  lost events:     %s", mt_fmt_count(lost, a));
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		if (p->lost[k])
			fprintf(f, " (%s: %s)", mt_lost_names[k], mt_fmt_count(p->lost[k], b));
	fputc('\n', f);
}

static void summary_section(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			    enum mt_view view, const char *title, long limit)
{
	size_t n;
	uint32_t *sites = mt_rank_sites(p, view, 1, &n);
	if (!n) {
		free(sites);
		return;
	}
	fprintf(f, "\n%s\n", title);
	struct mt_frame fr[256];
	for (size_t i = 0; i < n && (long)i < limit; i++) {
		const struct mt_site_stats *s = &p->col.sites[sites[i]];
		char a[32], b[32], c[32];
		switch (view) {
		case MT_VIEW_FREQUENCY: {
			const char *obj = p->site_object[sites[i]], *base = obj ? strrchr(obj, '/') : NULL;
			fprintf(f, "  %s calls to %s%s%s (%s) from:\n", mt_fmt_count(s->allocations, a),
				mt_fn_names[s->fn], obj ? " in " : "", base ? base + 1 : obj ? obj : "",
				mt_fmt_bytes(s->allocated_bytes, b));
			break;
		}
		case MT_VIEW_PEAK:
			fprintf(f, "  %s at peak in %s blocks (%s allocations) from:\n", mt_fmt_bytes(s->peak_bytes, a),
				mt_fmt_count(s->peak_count, b), mt_fmt_count(s->allocations, c));
			break;
		case MT_VIEW_LEAKS:
			fprintf(f, "  %s leaked in %s allocations from:\n", mt_fmt_bytes(s->live_bytes, a),
				mt_fmt_count(s->live_count, b));
			break;
		case MT_VIEW_TEMPORARY:
			fprintf(f, "  %s temporary of %s allocations from:\n", mt_fmt_count(s->temporary, a),
				mt_fmt_count(s->allocations, b));
			break;
		default:
			break;
		}
		int k = mt_site_frames(p, sym, sites[i], fr, 256);
		print_frames(f, fr, k, 8, "    ");
	}
	if ((long)n > limit)
		fprintf(f, "  ... and %zu more sites (use -n)\n", n - (size_t)limit);
	free(sites);
}

int mt_report_text(FILE *f, struct mt_recording *rec, const struct mt_report_opts *o)
{
	int shown = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (o->pid >= 0 && p->pid != (uint32_t)o->pid)
			continue;
		if (shown++)
			fputc('\n', f);
		process_header(f, p);
		struct mt_symbolizer *sym = mt_process_symbolizer(p);
		if (o->view == MT_VIEW_SUMMARY) {
			print_totals(f, p);
			long lim = o->limit > 0 ? o->limit : 5;
			summary_section(f, p, sym, MT_VIEW_FREQUENCY, "MOST CALLS TO ALLOCATION FUNCTIONS", lim);
			summary_section(f, p, sym, MT_VIEW_PEAK, "PEAK MEMORY CONSUMERS", lim);
			summary_section(f, p, sym, MT_VIEW_LEAKS, "MEMORY LEAKS", lim);
			summary_section(f, p, sym, MT_VIEW_TEMPORARY, "MOST TEMPORARY ALLOCATIONS", lim);
		} else {
			/* a tree never hides a loss */
			uint64_t lost = mt_process_lost(p);
			if (lost) {
				char a[32], b[32];
				fprintf(f, "  lost events: %s", mt_fmt_count(lost, a));
				for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
					if (p->lost[k])
						fprintf(f, " (%s: %s)", mt_lost_names[k], mt_fmt_count(p->lost[k], b));
				fputs("; the figures below are lower bounds\n", f);
			}
			size_t n;
			uint32_t *sites = mt_rank_sites(p, o->view, 1, &n);
			if (o->limit > 0 && (size_t)o->limit < n)
				n = (size_t)o->limit;
			mt_print_tree(f, p, sym, sites, n, o->view, o->threshold);
			free(sites);
		}
		const char *const *w = mt_sym_warnings(sym);
		for (; w && *w; w++)
			mt_warning("%s", *w);
		mt_sym_free(sym);
	}
	return 0;
}
