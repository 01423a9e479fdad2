/*
 * functions.h - a process's figures per function, as heaptrack shows them:
 * self (the allocations a function asked for itself: it is the first frame
 * of the site's stack) and inclusive (every allocation made while it was
 * on the stack), for every weight; and for one function, its callers and
 * callees with the figures that went through each.
 *
 * A function is named as every output names a frame (mt_frame_label): its
 * name, or module+0xoffset when unsymbolized.  Recursion counts a site once
 * per function.  The most useful frame of a stack (what a call-site table
 * names a site by) is here too.
 */
#ifndef MEMTRACE_FUNCTIONS_H
#define MEMTRACE_FUNCTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "recording.h"
#include "sites.h"
#include "symbols.h"

/* The weights of a function, in the order of mt_fn_weight_names. */
enum {
	MT_FW_ALLOCATIONS,
	MT_FW_ALLOCATED_BYTES,
	MT_FW_LEAKED_ALLOCATIONS,
	MT_FW_LEAKED_BYTES,
	MT_FW_PEAK_ALLOCATIONS,
	MT_FW_PEAK_BYTES,
	MT_FW_TEMPORARY,
	MT_FW_COUNT
};
/* Their JSON names (those of a site's figures). */
extern const char *const mt_fn_weight_names[MT_FW_COUNT];

struct mt_func {
	char *name;	    /* owned */
	const char *file;   /* of its first frame seen; the symbolizer's */
	const char *module; /* likewise */
	uint64_t self[MT_FW_COUNT], incl[MT_FW_COUNT];
	uint32_t sites;	    /* sites whose stack holds it */
	uint32_t last_site; /* internal: the last site counted + 1 */
};

struct mt_functions {
	struct mt_func *v;
	size_t n, cap;
	uint32_t *slot; /* hash of names: index + 1 */
	size_t mask;
};

/* Figures of every function of P's stacks (SYM: P's symbolizer). */
void mt_functions_build(struct mt_functions *fs, const struct mt_process *p,
			struct mt_symbolizer *sym);
void mt_functions_free(struct mt_functions *fs);
/* The function named NAME, or NULL. */
const struct mt_func *mt_functions_find(const struct mt_functions *fs, const char *name);
/* Indices of FS's functions, best first by weight W inclusive (ties: by
 * name); *n is set. */
size_t *mt_functions_rank(const struct mt_functions *fs, int w, size_t *n);

/* The weights of site S, in the order above. */
void mt_site_weights(const struct mt_site_stats *s, uint64_t out[MT_FW_COUNT]);
/* The weight a view ranks by (allocated bytes for summary and frequency'
 * bytes, leaked bytes, peak bytes, temporary count, allocations). */
int mt_view_weight(enum mt_view view);

/* The neighbours of function NAME in P's stacks: with CALLERS, the
 * functions that called it (the frame above its innermost occurrence;
 * "[root]" when none); else those it called (the frame below its outermost
 * occurrence, or the allocator function when it asked itself).  Each with
 * the figures of the sites that go through that edge, in FS (built
 * afresh; self figures are 0).  Returns the number of sites through NAME. */
size_t mt_functions_neighbours(struct mt_functions *fs, const struct mt_process *p,
			       struct mt_symbolizer *sym, const char *name, int callers);

/* The index of the most useful frame of FR[0..N): the first one outside
 * the allocator and the C/C++ runtime (libc, libstdc++, libgcc, the
 * dynamic loader, memtrace's own), as heaptrack shows a site by; 0 when
 * every frame is.  When that frame and one or two after it are of one
 * module and the last of them is named as an allocation function (its
 * name ends with "alloc": sqlite3Malloc over its unsymbolized helper), the
 * frame after it: a library's own allocator names no site. */
int mt_useful_frame(const struct mt_frame *fr, int n);

#endif
