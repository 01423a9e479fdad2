/*
 * top.h - the periodic top-N table of attach and top: call sites of
 * running processes by bytes outstanding, with their allocation rate since
 * the previous table, as text or as one JSON object per line.
 */
#ifndef MEMTRACE_TOP_H
#define MEMTRACE_TOP_H

#include <stdio.h>

#include "analyse/recording.h"

struct mt_top;

struct mt_top *mt_top_new(void);
void mt_top_free(struct mt_top *t);
/* Prints SNAP's top N sites (N <= 0: all); TIME_S is the time since tracing
 * began, used with the previous call's to compute rates. */
void mt_top_print(struct mt_top *t, FILE *f, struct mt_recording *snap, double time_s, long n,
		  int json);
/* The symbolizer kept for PID's process P (rebuilt when its objects change). */
struct mt_symbolizer *mt_top_symbolizer(struct mt_top *t, const struct mt_process *p);

#endif
