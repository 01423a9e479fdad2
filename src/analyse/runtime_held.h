/*
 * runtime_held.h - blocks the C and C++ runtimes hold until exit
 * (libstdc++'s emergency pool, stdio buffers), counted apart from leaks; the
 * rule is in runtime_held.c.  (Runtimes with a heap of their own, Go's and
 * Java's, are managed.h's.)
 */
#ifndef MEMTRACE_RUNTIME_HELD_H
#define MEMTRACE_RUNTIME_HELD_H

#include "recording.h"

/* After the figures are finished (mt_figures_finish): moves the runtime's blocks among P's leaked
 * ones to the held figures (site and totals held_count/held_bytes). */
void mt_process_runtime_held(struct mt_process *p);

/* The same for a process seen in per-site figures only (attach, sweep: the
 * kernel's totals, no single block): the live figures of the sites that
 * allocate stdio buffers go to the held ones.  (The other rule, blocks of
 * the process's start, does not apply: they watch it from the middle.) */
void mt_process_stdio_held(struct mt_process *p);

#endif
