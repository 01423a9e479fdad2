/*
 * report.h - what the report views share: which figure each view ranks
 * sites by, and a site's frames as a user sees them (symbolized, inlined
 * frames expanded, the allocator's and memtrace's own frames dropped).
 */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "analyse/recording.h"
#include "analyse/symbols.h"

enum mt_view { MT_VIEW_SUMMARY, MT_VIEW_LEAKS, MT_VIEW_PEAK, MT_VIEW_TEMPORARY, MT_VIEW_FREQUENCY };

extern const char *const mt_view_names[];

struct mt_report_opts {
	enum mt_view view;
	int json;
	double threshold; /* percent of the view's total below which tree nodes fold */
	long limit;       /* -n: sites shown (0: all in JSON and trees, 5 per summary section) */
	long pid;         /* -1: every process */
};

/* The figure VIEW ranks sites by. */
uint64_t mt_site_measure(const struct mt_site_stats *s, enum mt_view view);
uint64_t mt_total_measure(const struct mt_totals *t, enum mt_view view);

/* Indices of P's sites, best first by VIEW's measure; with NONZERO only those
 * whose measure is not 0.  *n is set. */
uint32_t *mt_rank_sites(const struct mt_process *p, enum mt_view view, int nonzero, size_t *n);

/* Frames of site SITE, leaf first, into OUT (at most MAX).  Returns the count. */
int mt_site_frames(const struct mt_process *p, struct mt_symbolizer *sym, uint32_t site,
		   struct mt_frame *out, int max);

/* A symbolizer loaded with P's modules. */
struct mt_symbolizer *mt_process_symbolizer(const struct mt_process *p);

int mt_report_text(FILE *f, struct mt_recording *rec, const struct mt_report_opts *o);
int mt_report_json(FILE *f, struct mt_recording *rec, const struct mt_report_opts *o);

void mt_json_frames(FILE *f, const struct mt_frame *fr, int n);
/* A process's totals object, its "lost_events" and "lost_by_kind" keys, its
 * markers array: as the JSON report writes them (the server's summary too). */
void mt_json_totals(FILE *f, const struct mt_process *p);
void mt_json_lost(FILE *f, const struct mt_process *p);
/* A site's figures, as keys without braces ("allocations": ... "max_size": N). */
void mt_json_site_figures(FILE *f, const struct mt_site_stats *s);
void mt_json_markers(FILE *f, const struct mt_process *p);

/* tree.c: memtrail-style text trees of sites, leaf outwards. */
void mt_print_tree(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
		   const uint32_t *sites, size_t nsites, enum mt_view view, double threshold);

#endif
