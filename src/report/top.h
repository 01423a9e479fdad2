/*
 * top.h - the periodic top-N table of attach and top: call sites of
 * running processes by bytes outstanding, with their allocation rate since
 * the previous table, as text or as one JSON object per line; and top's
 * live screen on a terminal, redrawn in place.
 */
#ifndef MEMTRACE_TOP_H
#define MEMTRACE_TOP_H

#include <stdio.h>

#include "analyse/recording.h"

struct mt_top;

struct mt_top *mt_top_new(void);
void mt_top_free(struct mt_top *t);

/* What the rows are sorted by (default: outstanding bytes). */
enum mt_top_sort { MT_TOP_OUTSTANDING, MT_TOP_BLOCKS, MT_TOP_RATE };
void mt_top_sort_by(struct mt_top *t, enum mt_top_sort sort);

/* A screen of top on a terminal of WIDTH x HEIGHT: at most N rows (<= 0:
 * as many as fit); REDRAW: the same interval drawn again (after a key),
 * its rates kept. */
struct mt_top_screen {
	long n;
	int width, height;
	int redraw;
};
/* Draws SNAP over the previous screen (from the top left corner, each line
 * and then what is below erased): a header of totals and keys, then the
 * sites, each told from the others by the first frame their stacks do not
 * share.  No line is longer than the width. */
void mt_top_draw(struct mt_top *t, FILE *f, struct mt_recording *snap, double time_s,
		 const struct mt_top_screen *s);
/* Prints SNAP's top N sites (N <= 0: all); TIME_S is the time since tracing
 * began, used with the previous call's to compute rates. */
void mt_top_print(struct mt_top *t, FILE *f, struct mt_recording *snap, double time_s, long n,
		  int json);
/* The symbolizer kept for PID's process P (rebuilt when its objects change). */
struct mt_symbolizer *mt_top_symbolizer(struct mt_top *t, const struct mt_process *p);

#endif
