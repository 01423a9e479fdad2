/*
 * report.c - the text views of `memtrace report`.
 */
#include "report.h"
#include "analyse/images.h"
#include "analyse/resident.h"
#include "analyse/mapped.h"
#include "base/json.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

int mt_report_wants(const struct mt_report_opts *o, const struct mt_process *p)
{
	return (o->pid < 0 || p->pid == (uint32_t)o->pid) && mt_image_named(o->image, p);
}

/* ---- text ---- */

void mt_print_frames(FILE *f, const struct mt_frame *fr, int n, int max, const char *indent,
		     const struct mt_fit *fit)
{
	for (int i = 0; i < n && i < max; i++) {
		const struct mt_frame *x = &fr[i];
		fputs(indent, f);
		char name[2048];
		mt_text_str(f, mt_fit_label(x, fit, name, sizeof name));
		if (x->file) {
			fputs(" [", f);
			mt_text_str(f, x->file);
			fprintf(f, ":%d]", x->line);
		} else if (x->module && x->function) {
			/* without a function, the name says the module already */
			fputs(" (", f);
			mt_text_str(f, x->module);
			fputc(')', f);
		}
		if (x->inlined)
			fputs(" (inlined)", f);
		fputc('\n', f);
	}
	if (n > max)
		fprintf(f, "%s... %d more frame%s\n", indent, n - max, mt_s((uint64_t)(n - max)));
}

static void process_header(FILE *f, const struct mt_process *p, int is_main)
{
	fprintf(f, "process %u (", p->pid);
	mt_text_str(f, mt_process_name(p));
	fprintf(f, "%s): ", is_main ? ", main" : "");
	/* The command line as it was run, its executable's path for its first
	 * word, unless the program was run under another name (a link to it,
	 * git's git-upload-pack, a shell's sh): that name is part of what ran
	 * (git and busybox go by it), and the executable follows. */
	const char *a0 = p->argc ? p->argv[0] : "", *b0 = strrchr(a0, '/');
	const char *be = p->exe ? strrchr(p->exe, '/') : NULL;
	int renamed = p->exe && a0[0] && strcmp(b0 ? b0 + 1 : a0, be ? be + 1 : p->exe) != 0;
	mt_text_str(f, renamed ? a0 : p->exe ? p->exe : "?");
	for (int i = 1; i < p->argc && i < 8; i++) {
		fputc(' ', f);
		mt_text_str(f, p->argv[i]);
	}
	if (p->argc > 8)
		fputs(" ...", f);
	if (renamed) {
		fputs(" (running ", f);
		mt_text_str(f, p->exe);
		fputc(')', f);
	}
	/* (the recording's strings, the exec's path the traced program's:
	 * escaped for the terminal) */
	fputs("\n  backend ", f);
	mt_text_str(f, p->backend ? p->backend : "?");
	fprintf(f, ", %.3f s", mt_process_duration(p));
	if (p->exec_outcome) {
		fputs(", replaced by exec of ", f);
		mt_text_str(f, p->exec_path ? p->exec_path : "?");
	}
	if (p->exec_outcome && p->exec_why) {
		fputs(" (not traced: ", f);
		mt_text_str(f, p->exec_why);
		fputc(')', f);
	}
	if (p->exited) {
		const char *sig = mt_process_signal_name(p);
		if (p->exit_status >= 0)
			fprintf(f, ", exit status %lld", (long long)p->exit_status);
		else if (sig)
			fprintf(f, ", killed by %s", sig);
		else
			fprintf(f, ", killed by signal %llu",
				(unsigned long long)mt_process_signal(p));
	} else if (!p->exec_outcome) {
		/* neither an exit nor an exec: it ran on after tracing stopped */
		fputs(", still running when tracing stopped", f);
	}
	fputc('\n', f);
	if (p->heap && !strcmp(p->heap, "executable"))
		/* a static program, or one that defines malloc itself */
		fprintf(f, "  allocator the executable's own malloc (%s)\n",
			p->heap_object ? p->heap_object : p->exe);
	else if (p->heap)
		fprintf(f, "  allocator %s%s%s%s\n", p->heap, p->heap_object ? " (" : "",
			p->heap_object ? p->heap_object : "", p->heap_object ? ")" : "");
	if (p->untraced_children)
		fprintf(f, "  %llu child process%s not traced: use -f (record --follow-forks%s)\n",
			(unsigned long long)p->untraced_children,
			p->untraced_children == 1 ? "" : "es",
			p->backend && !strcmp(p->backend, "bpf") ? " --backend=preload" : "");
}

/* " (kind: N)" for each kind of loss P had. */
static void print_lost_kinds(FILE *f, const struct mt_process *p)
{
	char a[32];
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		if (p->lost[k])
			fprintf(f, " (%s: %s)", mt_lost_names[k], mt_fmt_count(p->lost[k], a));
}

/* The memory samples beside the heap: resident peak, and anonymous memory
 * beyond the heap in use at the end (what the allocator holds that the
 * program does not, when it is much). */
static void print_resident(FILE *f, const struct mt_process *p)
{
	struct mt_resident r;
	char a[32], b[32], c[32], d[32], e[32];
	mt_resident_of(p, &r);
	if (!r.samples)
		return;
	double at = r.peak_ts > p->start_ts ? (double)(r.peak_ts - p->start_ts) / 1e9 : 0;
	fprintf(f, "  resident:        peak %s at %.3f s (heap then %s)\n",
		mt_fmt_bytes(r.peak_rss, a), at, mt_fmt_bytes(r.peak_heap, b));
	fprintf(f, "                   at the peak: anonymous %s, file %s, shared %s\n",
		mt_fmt_bytes(r.peak_anon, a), mt_fmt_bytes(r.peak_file, b),
		mt_fmt_bytes(r.peak_shmem, c));
	fprintf(f,
		"                   at the end:  %s: anonymous %s, file %s, shared %s; heap %s\n",
		mt_fmt_bytes(r.end_rss, a), mt_fmt_bytes(r.end_anon, b),
		mt_fmt_bytes(r.end_file, c), mt_fmt_bytes(r.end_shmem, d),
		mt_fmt_bytes(r.end_heap, e));
	if (r.ring_peak)
		fprintf(f, "                   (memtrace's own ring, up to %s, is not counted)\n",
			mt_fmt_bytes(r.ring_peak, a));
	if (r.end_beyond >= (1u << 20) && r.end_beyond >= r.end_heap / 4)
		fprintf(f,
			"  beyond the heap: %s of anonymous memory at the end is not the heap in "
			"use\n                   (allocator overhead, fragmentation, freed memory not "
			"given back, stacks)\n",
			mt_fmt_bytes(r.end_beyond, a));
}

/* What the leak scan at the process's end found the leaked blocks to be
 * (memcheck's kinds), or why it could not tell. */
static void print_scan(FILE *f, const struct mt_process *p)
{
	static const char *const label[MT_LEAK_KINDS] = { "definitely lost:", "indirectly lost:",
							  "possibly lost:", "still reachable:" };
	const struct mt_leak_kinds *k = &p->kinds;
	char a[32], b[32];
	if (!k->ran)
		return;
	const char *e = p->figures.sample_mean ? "~" : ""; /* an estimate */
	for (int i = 0; i < MT_LEAK_KINDS; i++)
		fprintf(f, "    %-17s%s%s in %s%s block%s\n", label[i], e,
			mt_fmt_bytes(k->total.bytes[i], a), e, mt_fmt_count(k->total.count[i], b),
			mt_s(k->total.count[i]));
	if (!k->scan.complete) {
		fputs("    (the leak scan could not read everything", f);
		if (k->why) {
			fputs(": ", f);
			mt_text_str(f, k->why);
		}
		fputs("; every block counted still reachable)\n", f);
	} else {
		fprintf(f, "    (leak scan at the end: %s read, the process held %.1f ms)\n",
			mt_fmt_bytes(k->scan.scanned, a), (double)k->scan.ns / 1e6);
	}
}

/* The parts a leak view shows of a process a scan classified, in order
 * (the still reachable in one line after them: reachable_line): their
 * kinds, and their titles in the tree view and in the summary. */
static const struct {
	unsigned mask;
	const char *tree, *summary;
} leak_parts[] = {
	{ MT_LEAK_LOST, "DEFINITELY AND INDIRECTLY LOST (nothing the program holds points at them)",
	  "MEMORY LEAKS (definitely and indirectly lost)" },
	{ MT_LEAK_MASK(MT_LEAK_POSSIBLE), "POSSIBLY LOST (only pointers into their middle)",
	  "POSSIBLY LOST (only pointers into their middle)" },
};

/* P as a leak view of the blocks of the kinds in MASK shows it: a copy
 * sharing all but its site figures (mt_leak_kinds_select), which
 * kinds_done frees. */
static struct mt_process *kinds_view(const struct mt_process *p, unsigned mask)
{
	struct mt_process *q = xmalloc(sizeof *q);
	*q = *p;
	size_t n = p->figures.nsites;
	q->figures.sites = xmalloc((n ? n : 1) * sizeof *q->figures.sites);
	if (n)
		memcpy(q->figures.sites, p->figures.sites, n * sizeof *q->figures.sites);
	mt_leak_kinds_select(q, mask);
	return q;
}

static void kinds_done(struct mt_process *q)
{
	free(q->figures.sites);
	free(q);
}

/* The still reachable blocks in one line: where they are is --leaks=all's. */
static void reachable_line(FILE *f, const struct mt_process *p)
{
	const struct mt_leak_kinds *k = &p->kinds;
	char a[32], b[32];
	size_t sites = 0;
	for (size_t i = 0; i < k->nsites; i++)
		sites += k->sites[i].count[MT_LEAK_REACHABLE] != 0;
	uint64_t n = k->total.count[MT_LEAK_REACHABLE];
	if (!n)
		return;
	fprintf(f,
		"\nSTILL REACHABLE: %s in %s block%s at %zu site%s (still held, not leaks: "
		"--leaks=all to list)\n",
		mt_fmt_bytes(k->total.bytes[MT_LEAK_REACHABLE], a), mt_fmt_count(n, b), mt_s(n),
		sites, mt_s(sites));
}

/* The mapping calls: memory mapped at the end and at most, the calls. */
static void print_mapped(FILE *f, const struct mt_process *p)
{
	struct mt_mapped m;
	char a[32], b[32], c[32], d[32], e[32];
	if (!p->nmaps)
		return;
	mt_mapped_of(p, &m);
	fprintf(f,
		"  mapped:          peak %s at %.3f s; at the end %s (mmap %s, brk %s, "
		"allocator's blocks %s)\n",
		mt_fmt_bytes(m.peak_bytes, a),
		m.peak_ts > p->start_ts ? (double)(m.peak_ts - p->start_ts) / 1e9 : 0.0,
		mt_fmt_bytes(m.end_bytes, b), mt_fmt_bytes(m.end_mmap, c),
		mt_fmt_bytes(m.end_brk, d), mt_fmt_bytes(m.end_blocks, e));
	fprintf(f, "  mapping calls:   %zu (", m.calls);
	for (int k = 0; k < MT_MAP_KIND_COUNT; k++)
		fprintf(f, "%s%s %zu", k ? ", " : "", mt_map_kind_names[k], m.kind[k]);
	fprintf(f, "); %zu failed, %zu by the allocator\n", m.failed, m.by_allocator);
}

/* "  filtered:" and the keys of O's filter, with the span they keep. */
static void print_filter(FILE *f, const struct mt_process *p, const struct mt_report_opts *o)
{
	if (!o->filter || !o->filter->active || !o->filter->desc)
		return;
	fputs("  filtered:        ", f);
	for (const char *s = o->filter->desc; *s;) {
		size_t n = strcspn(s, "\n");
		char *kv = xstrndup(s, n);
		if (s != o->filter->desc)
			fputc(' ', f);
		fputs("--", f);
		for (char *c = kv; *c && *c != '='; c++)
			if (*c == '_')
				*c = '-';
		mt_text_str(f, kv);
		free(kv);
		s += n + (s[n] == '\n');
	}
	double from, span = mt_filter_span_s(o->filter, p, &from);
	fprintf(f,
		"\n                   (every figure counts only the allocations matched; "
		"rates are over %.3f s to %.3f s)\n",
		from, from + span);
}

static void print_totals(FILE *f, const struct mt_process *p, const struct mt_report_opts *o)
{
	const struct mt_totals *t = &p->figures.t;
	char a[32], b[32], c[32];
	double span = mt_filter_span_s(o->filter, p, NULL);
	const char *e = p->figures.sample_mean ? "~" : ""; /* an estimate */
	if (p->figures.sample_mean)
		fprintf(f,
			"  sampled:         one allocation per %s allocated, on average: every "
			"figure is an estimate (~)\n",
			mt_fmt_size(p->figures.sample_mean, a));
	fprintf(f, "  allocations:     %s%s (%s%s)\n", e, mt_fmt_count(t->allocations, a), e,
		mt_fmt_bytes(t->allocated_bytes, b));
	if (span > 0)
		fprintf(f, "  rate:            %s%s allocations/s over %.3f s%s\n", e,
			mt_fmt_count((uint64_t)((double)t->allocations / span + 0.5), a), span,
			o->filter && o->filter->active &&
					(o->filter->from.set || o->filter->to.set) ?
				" (the span filtered)" :
				"");
	fprintf(f, "  frees:           %s%s\n", e, mt_fmt_count(t->frees, a));
	fprintf(f, "  temporary:       %s%s (%.1f%% of allocations)\n", e,
		mt_fmt_count(t->temporary, a),
		t->allocations ? 100.0 * (double)t->temporary / (double)t->allocations : 0.0);
	fprintf(f, "  peak:            %s%s in %s%s block%s, at %.3f s\n", e,
		mt_fmt_bytes(t->peak_bytes, a), e, mt_fmt_count(t->peak_count, c),
		mt_s(t->peak_count),
		t->peak_ts > p->start_ts ? (double)(t->peak_ts - p->start_ts) / 1e9 : 0.0);
	if (o->leak_kinds && p->kinds.ran) {
		char k[64];
		fprintf(f, "  leaked (%s):", mt_leak_kinds_text(o->leak_kinds, k, sizeof k));
		fprintf(f, " %s%s in %s%s allocation%s\n", e, mt_fmt_bytes(t->live_bytes, a), e,
			mt_fmt_count(t->live_count, b), mt_s(t->live_count));
	} else {
		fprintf(f, "  leaked:          %s%s in %s%s allocation%s\n", e,
			mt_fmt_bytes(t->live_bytes, a), e, mt_fmt_count(t->live_count, b),
			mt_s(t->live_count));
	}
	print_scan(f, p);
	print_resident(f, p);
	print_mapped(f, p);
	if (t->held_count)
		fprintf(f,
			"  runtime-held:    %s in %s allocation%s (kept by the C/C++ runtime until "
			"exit, not leaks)\n",
			mt_fmt_bytes(t->held_bytes, a), mt_fmt_count(t->held_count, b),
			mt_s(t->held_count));
	if (t->suppressed_count)
		fprintf(f, "  suppressed:      %s in %s leaked allocations (--suppressions)\n",
			mt_fmt_bytes(t->suppressed_bytes, a), mt_fmt_count(t->suppressed_count, b));
	if (t->unmatched_frees)
		fprintf(f, "  unmatched frees: %s\n", mt_fmt_count(t->unmatched_frees, a));
	if (t->culled)
		fprintf(f,
			"  culled:          %s short-lived allocations (in the totals, not in the stream)\n",
			mt_fmt_count(t->culled, a));
	for (size_t i = 0; i < p->nmarkers; i++) {
		fprintf(f, "  marker:          %.3f s: ",
			p->markers[i].ts > p->start_ts ?
				(double)(p->markers[i].ts - p->start_ts) / 1e9 :
				0.0);
		mt_text_str(f, p->markers[i].text);
		fputc('\n', f);
	}
	uint64_t lost = mt_process_lost(p);
	fprintf(f, "  lost events:     %s", mt_fmt_count(lost, a));
	print_lost_kinds(f, p);
	fputc('\n', f);
}

static void summary_section(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			    enum mt_view view, const char *title, long limit,
			    const struct mt_fit *fit)
{
	size_t n;
	uint32_t *sites = mt_rank_sites(p, view, 1, &n);
	if (!n) {
		free(sites);
		return;
	}
	fprintf(f, "\n%s\n", title);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < n && (long)i < limit; i++) {
		const struct mt_site_stats *s = &p->figures.sites[sites[i]];
		char a[32], b[32], c[32];
		fputs(p->figures.sample_mean ? "  ~" : "  ", f); /* an estimate */
		switch (view) {
		case MT_VIEW_FREQUENCY: {
			const char *obj = p->site_object[sites[i]],
				   *base = obj ? strrchr(obj, '/') : NULL;
			fprintf(f, "%s call%s to %s%s%s (%s) from:\n",
				mt_fmt_count(s->allocations, a), mt_s(s->allocations),
				mt_fn_names[s->fn], obj ? " in " : "",
				base ? base + 1 :
				obj  ? obj :
				       "",
				mt_fmt_bytes(s->allocated_bytes, b));
			break;
		}
		case MT_VIEW_PEAK:
			fprintf(f, "%s at peak in %s block%s (%s allocation%s) from:\n",
				mt_fmt_bytes(s->peak_bytes, a), mt_fmt_count(s->peak_count, b),
				mt_s(s->peak_count), mt_fmt_count(s->allocations, c),
				mt_s(s->allocations));
			break;
		case MT_VIEW_LEAKS:
			fprintf(f, "%s leaked in %s allocation%s from:\n",
				mt_fmt_bytes(s->live_bytes, a), mt_fmt_count(s->live_count, b),
				mt_s(s->live_count));
			break;
		case MT_VIEW_TEMPORARY:
			fprintf(f, "%s temporary of %s allocation%s from:\n",
				mt_fmt_count(s->temporary, a), mt_fmt_count(s->allocations, b),
				mt_s(s->allocations));
			break;
		default:
			break;
		}
		int k = mt_site_frames(p, sym, sites[i], fr, MT_SYM_MAX_FRAMES);
		mt_print_frames(f, fr, k, 8, "    ", fit);
	}
	if ((long)n > limit)
		fprintf(f, "  ... and %zu more sites (use -n)\n", n - (size_t)limit);
	free(sites);
}

/* The calls that tuned the allocator (mallopt, malloc_trim), when there
 * are any: one line each, then up to four frames. */
static void print_tunes(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			const struct mt_fit *fit)
{
	if (!p->ntunes)
		return;
	fputs("\nMALLOPT CALLS\n", f);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < p->ntunes; i++) {
		const struct mt_tune_call *t = &p->tunes[i];
		char text[128];
		fprintf(f, "  %.3f s: %s from:\n",
			t->ts > p->start_ts ? (double)(t->ts - p->start_ts) / 1e9 : 0.0,
			mt_tune_text(t, text, sizeof text));
		int k = mt_stack_frames(sym, t->frames, t->nframes, fr, MT_SYM_MAX_FRAMES);
		mt_print_frames(f, fr, k, 4, "    ", fit);
	}
}

/* A process in a tree view: its losses, then the tree of its sites. */
static void tree_view(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
		      const struct mt_report_opts *o)
{
	/* a tree never hides a loss */
	uint64_t lost = mt_process_lost(p);
	if (lost) {
		char a[32];
		fprintf(f, "  lost events: %s", mt_fmt_count(lost, a));
		print_lost_kinds(f, p);
		fputs("; the figures below are lower bounds\n", f);
	}
	if (o->view == MT_VIEW_PEAK) {
		/* the tree is of one moment: say which */
		const struct mt_totals *t = &p->figures.t;
		char a[32], c[32];
		fprintf(f, "  peak: %s in %s block%s, at %.3f s\n", mt_fmt_bytes(t->peak_bytes, a),
			mt_fmt_count(t->peak_count, c), mt_s(t->peak_count),
			t->peak_ts > p->start_ts ? (double)(t->peak_ts - p->start_ts) / 1e9 : 0.0);
	}
	size_t n;
	uint32_t *sites = mt_rank_sites(p, o->view, 1, &n);
	if (o->limit > 0 && (size_t)o->limit < n)
		n = (size_t)o->limit;
	if (o->top_down)
		mt_print_topdown_tree(f, p, sym, sites, n, o->view, o->threshold, &o->fit);
	else
		mt_print_tree(f, p, sym, sites, n, o->view, o->threshold, &o->fit);
	free(sites);
}

/* --leaks of a process a leak scan classified (and no --leaks=KINDS): the
 * lost blocks first, then the possibly lost, then the still reachable in
 * one line. */
static void kinds_trees(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			const struct mt_report_opts *o)
{
	for (size_t i = 0; i < sizeof leak_parts / sizeof *leak_parts; i++) {
		struct mt_process *q = kinds_view(p, leak_parts[i].mask);
		fprintf(f, "%s%s:%s\n", i ? "\n" : "", leak_parts[i].tree,
			q->figures.t.live_count ? "" : " none");
		if (q->figures.t.live_count)
			tree_view(f, q, sym, o);
		kinds_done(q);
	}
	reachable_line(f, p);
}

/* Returns 0 when P has no function of --callers or --callees. */
static int process_text(FILE *f, const struct mt_process *p, const struct mt_report_opts *o,
			int first, int is_main, size_t idx)
{
	int found = 1;
	if (!first)
		fputc('\n', f);
	process_header(f, p, is_main);
	print_filter(f, p, o);
	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	if (mt_report_section(o)) {
		print_totals(f, p, o);
		found = mt_report_sections(f, p, sym, o, idx, 0);
	} else if (o->view == MT_VIEW_SUMMARY) {
		print_totals(f, p, o);
		long lim = o->limit > 0 ? o->limit : 5;
		summary_section(f, p, sym, MT_VIEW_FREQUENCY, "MOST CALLS TO ALLOCATION FUNCTIONS",
				lim, &o->fit);
		summary_section(f, p, sym, MT_VIEW_PEAK, "PEAK MEMORY CONSUMERS", lim, &o->fit);
		if (p->kinds.ran && !o->leak_kinds) {
			/* leaks are what nothing points at: LeakSanitizer's */
			for (size_t i = 0; i < sizeof leak_parts / sizeof *leak_parts; i++) {
				struct mt_process *q = kinds_view(p, leak_parts[i].mask);
				summary_section(f, q, sym, MT_VIEW_LEAKS, leak_parts[i].summary,
						lim, &o->fit);
				kinds_done(q);
			}
		} else {
			summary_section(f, p, sym, MT_VIEW_LEAKS, "MEMORY LEAKS", lim, &o->fit);
		}
		summary_section(f, p, sym, MT_VIEW_TEMPORARY, "MOST TEMPORARY ALLOCATIONS", lim,
				&o->fit);
		print_tunes(f, p, sym, &o->fit);
	} else if (o->view == MT_VIEW_LEAKS && p->kinds.ran && !o->leak_kinds) {
		kinds_trees(f, p, sym, o);
	} else if (o->view == MT_VIEW_LEAKS && p->kinds.ran) {
		char k[64];
		fprintf(f, "LEAKED BLOCKS OF THE KINDS: %s\n",
			mt_leak_kinds_text(o->leak_kinds, k, sizeof k));
		tree_view(f, p, sym, o);
	} else {
		tree_view(f, p, sym, o);
	}
	const char *const *w = mt_sym_warnings(sym);
	for (; w && *w; w++)
		mt_warning("%s", *w);
	mt_sym_free(sym);
	return found;
}

static int wanted(const void *o, const struct mt_process *p)
{
	return mt_report_wants(o, p);
}

/* The other images O wants besides LEAD, one line each after LEAD's
 * report: a program run through wrappers (pyenv's shims run seven images
 * of bash and env before Python) is read first, alone, and the wrappers
 * are still named, with what they allocated.  At most this many lines: */
#define OTHER_IMAGES_MAX 20

static void other_images(FILE *f, const struct mt_recording *rec, const struct mt_report_opts *o,
			 const struct mt_process *lead)
{
	size_t n = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (p == lead || !mt_report_wants(o, p) || n++ >= OTHER_IMAGES_MAX)
			continue;
		if (n == 1)
			fputs("\nalso recorded (--image N shows one, --all-images every one):\n",
			      f);
		char a[32], b[32];
		fprintf(f, "  image %u: process %u (", p->image, p->pid);
		mt_text_str(f, mt_process_name(p));
		fputs("): ", f);
		mt_text_str(f, p->exe ? p->exe : "?");
		fprintf(f, ", %s allocation%s (%s)", mt_fmt_count(p->figures.t.allocations, a),
			mt_s(p->figures.t.allocations),
			mt_fmt_bytes(p->figures.t.allocated_bytes, b));
		if (p->exec_outcome) {
			fputs(", replaced by exec of ", f);
			mt_text_str(f, p->exec_path ? p->exec_path : "?");
		}
		fputc('\n', f);
	}
	if (n > OTHER_IMAGES_MAX)
		fprintf(f, "  ... and %zu more images\n", n - OTHER_IMAGES_MAX);
}

int mt_report_text(FILE *f, struct mt_recording *rec, const struct mt_report_opts *o)
{
	int shown = 0, found = 0;
	/* without --image or --all-images: the lead alone, the others named */
	const struct mt_process *lead = o->image || o->all_images ? NULL :
								    mt_image_lead(rec, wanted, o);
	const struct mt_process *m = mt_recording_main(rec);
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (mt_report_wants(o, p) && (!lead || p == lead))
			found |= process_text(f, p, o, !shown++, rec->nprocs > 1 && p == m, i);
	}
	if (lead)
		other_images(f, rec, o, lead);
	if (shown && !found) {
		mt_error("no function named '%s' on any stack (--functions lists them)",
			 o->callers ? o->callers : o->callees);
		return 1;
	}
	return 0;
}
