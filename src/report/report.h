/*
 * report.h - the views of `memtrace report` (text and JSON) and the JSON
 * pieces that the server and the json export write the same way.  What a
 * site weighs in a view, ranking and a site's frames: analyse/sites.h.
 */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "analyse/filter.h"
#include "analyse/histo.h"
#include "analyse/recording.h"
#include "analyse/sites.h"
#include "analyse/symbols.h"
#include "fit.h"

struct mt_report_opts {
	enum mt_view view;
	int json;
	double threshold; /* percent of the view's total below which tree nodes fold */
	long limit;	  /* -n: sites shown (0: all in JSON and trees, 5 per summary section) */
	long pid;	  /* -1: every process */
	/* --image: the images named so (analyse/images.h), NULL: any; and
	 * --all-images.  Without either, the text report shows the image it
	 * leads with (mt_image_lead) and a line for each other one. */
	const char *image;
	int all_images;
	const struct mt_filter *filter; /* what the recording was loaded through; NULL: nothing */
	int functions;			/* --functions: the per-function table */
	const char *callers, *callees;	/* --callers FN, --callees FN */
	int top_down;			/* --top-down: trees from main down */
	int sizes;			/* --sizes: size and lifetime histograms */
	const struct mt_histo *histo;	/* with sizes: per process of the recording */
	/* --leaks=KINDS: the leaked figures count the blocks of these kinds
	 * alone (analyse/leakkinds.h's mask, applied by mt_leak_kinds_select
	 * at load); 0: every leaked block, shown kind by kind when a scan ran */
	unsigned leak_kinds;
	struct mt_fit fit; /* text: names folded or whole, the width */
	int unchanged;	   /* diff: the sites and branches that did not change too */
};

/* A section of a process's report (views.c): written after its totals in
 * text, as keys of its object in JSON.  IDX is P's index in the recording.
 * Returns 0 when the function it names is on no stack, else 1. */
typedef int mt_report_section_fn(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
				 const struct mt_report_opts *o, size_t idx);

/* A view of `memtrace report`: the option that asks for it (with ARGH, its
 * argument's name) and its lines in --help; a section also says whether O
 * asks for it, and what writes it. */
struct mt_report_view {
	const char *option, *argh, *help;
	int (*asked)(const struct mt_report_opts *o);
	mt_report_section_fn *text, *json;
};

/* The views in the order of --help, then one with a NULL option. */
extern const struct mt_report_view mt_report_views[];
/* report --help's list of them, one "  --option   what" line (or more) each. */
void mt_report_views_help(FILE *f);
/* The first section O asks for; NULL when O shows its view's sites. */
const struct mt_report_view *mt_report_section(const struct mt_report_opts *o);
/* Writes every section O asks for, as text or JSON: 0 when one named a
 * function on no stack. */
int mt_report_sections(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
		       const struct mt_report_opts *o, size_t idx, int json);

/* histo: P's histograms of --sizes, as text or as JSON keys. */
void mt_print_histo(FILE *f, const struct mt_histo *h);
void mt_json_histo(FILE *f, const struct mt_histo *h);

/* Is P one of the processes O shows (--pid, --image)? */
int mt_report_wants(const struct mt_report_opts *o, const struct mt_process *p);

int mt_report_text(FILE *f, struct mt_recording *rec, const struct mt_report_opts *o);
int mt_report_json(FILE *f, struct mt_recording *rec, const struct mt_report_opts *o);

/* framejson.c: frames FR[0..N) as a JSON array.  With a cache C (NULL:
 * none), each distinct frame is written once and copied after: C must not
 * outlive the symbolizer that made the frames. */
void mt_json_frames(FILE *f, const struct mt_frame *fr, int n);
struct mt_frame_json;
struct mt_frame_json *mt_frame_json_new(void);
void mt_frame_json_free(struct mt_frame_json *c);
void mt_json_frames_cached(FILE *f, const struct mt_frame *fr, int n, struct mt_frame_json *c);
/* Up to MAX of the N frames FR, one a line after INDENT, escaped for a
 * terminal, named as FIT says (NULL: folded); "... K more frames" for the
 * rest. */
void mt_print_frames(FILE *f, const struct mt_frame *fr, int n, int max, const char *indent,
		     const struct mt_fit *fit);
/* Who a process is, as keys without braces: "pid", "ppid", "exe", "argv"
 * and "backend", SEP between them (", " or a line break and indent); with
 * HTML, its strings safe inside a <script> element (mt_json_str_html). */
void mt_json_identity(FILE *f, const struct mt_process *p, const char *sep, int html);
/* Its argv alone, as a JSON array. */
void mt_json_argv(FILE *f, const struct mt_process *p, int html);
/* A process's totals object, its "lost_events" and "lost_by_kind" keys, its
 * markers array: as the JSON report writes them (the server's summary too). */
void mt_json_totals(FILE *f, const struct mt_process *p);
void mt_json_lost(FILE *f, const struct mt_process *p);
/* "leak_kinds": what the leak scan at the process's end found (null: none
 * ran); a site's kinds (nothing when none ran). */
void mt_json_leak_kinds(FILE *f, const struct mt_process *p);
void mt_json_site_kinds(FILE *f, const struct mt_process *p, uint32_t site);
/* A site's figures, as keys without braces ("allocations": ... "max_size": N). */
void mt_json_site_figures(FILE *f, const struct mt_site_stats *s);
/* For a diff (diff.c), as keys without braces: the totals and site figures
 * a diff keeps (sizes and times left out), each NEW's minus BASE's; and one
 * side's own totals, the same keys, on one line. */
void mt_json_totals_delta(FILE *f, const struct mt_totals *base, const struct mt_totals *new);
void mt_json_site_delta(FILE *f, const struct mt_site_stats *base, const struct mt_site_stats *new);
void mt_json_totals_side(FILE *f, const struct mt_totals *t);
void mt_json_markers(FILE *f, const struct mt_process *p);
/* tune.c: the calls that tuned the allocator (mallopt, malloc_trim):
 * glibc's name of a mallopt parameter (NULL when it has none), the
 * function's, and the call as C ("mallopt(M_MMAP_THRESHOLD, 1048576) = 1")
 * in BUF. */
const char *mt_tune_param_name(int64_t param);
const char *mt_tune_function(const struct mt_tune_call *t);
char *mt_tune_text(const struct mt_tune_call *t, char *buf, size_t len);
/* Its threads, by tid: [{"tid", "allocations", "allocated_bytes"}] (what
 * each allocated under the filter; a thread every allocation of which the
 * filter left out is listed with zeros). */
void mt_json_threads(FILE *f, const struct mt_process *p);
/* The process's memory samples summed up (analyse/resident.h), or null. */
void mt_json_memory(FILE *f, const struct mt_process *p);
/* FLT's keys as an object of strings ({"from": "200ms", ...}), or null when
 * it filters nothing; with HTML, safe inside a <script> element. */
void mt_json_filter(FILE *f, const struct mt_filter *flt, int html);
/* P's "span_s" and "span_from_s" keys (without braces): the part of its
 * run the figures cover, which rates divide by (FLT's from and to, or the
 * whole run). */
void mt_json_span(FILE *f, const struct mt_filter *flt, const struct mt_process *p);

/* functions.c: the --functions table and --callers/--callees of P, after
 * its view (text), or as keys of its JSON object. */
mt_report_section_fn mt_report_functions_text, mt_report_functions_json;
mt_report_section_fn mt_report_callers_text, mt_report_callers_json;
mt_report_section_fn mt_report_callees_text, mt_report_callees_json;
/* histo.c: --sizes, P's histograms of o->histo. */
mt_report_section_fn mt_report_sizes_text, mt_report_sizes_json;

/* tree.c: memtrail-style text trees of sites, leaf outwards, names as FIT
 * says (NULL: folded).  Deep trees keep their indent on the screen and
 * show long chains of single callers shortened. */
void mt_print_tree(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
		   const uint32_t *sites, size_t nsites, enum mt_view view, double threshold,
		   const struct mt_fit *fit);
/* The same turned over: from main towards the allocator functions. */
void mt_print_topdown_tree(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			   const uint32_t *sites, size_t nsites, enum mt_view view,
			   double threshold, const struct mt_fit *fit);
/* The tree of function FN's callers (CALLERS: from FN towards main) or
 * callees (from FN towards the allocator), weighed by VIEW, percentages of
 * what went through FN.  Returns the number of sites through FN (0: none,
 * nothing printed). */
size_t mt_print_fn_tree(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			const char *fn, int callers, enum mt_view view, double threshold,
			const struct mt_fit *fit);
/* The same for the sites SITES of a diff, weights signed (NEW - BASE):
 * with UNCHANGED, the branches in which nothing changed too; else they are
 * left out and the number of their sites returned. */
struct mt_diff;
size_t mt_print_diff_tree(FILE *f, const struct mt_diff *d, const uint32_t *sites, size_t nsites,
			  enum mt_view view, double threshold, int unchanged);

/* gate.c: record's --fail-on-leak: 1 when REC's processes leaked more than
 * MAX_BYTES (with 0: any block), after printing the leak trees to F. */
int mt_leak_gate(FILE *f, struct mt_recording *rec, uint64_t max_bytes);

/* diff.c: `memtrace diff` of D (BASE and NEW's sites matched), ranked by
 * growth in O's view. */
int mt_report_diff_text(FILE *f, const struct mt_diff *d, const char *base, const char *new,
			const struct mt_report_opts *o);
int mt_report_diff_json(FILE *f, const struct mt_diff *d, const struct mt_recording *base,
			const struct mt_recording *new, const struct mt_report_opts *o);

#endif
