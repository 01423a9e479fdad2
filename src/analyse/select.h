/*
 * select.h - a recording seen through a filter.
 *
 * Loads a recording once as it is (`all`: every allocation, for the group
 * figures of the filter and the server's all.* keys; or takes the server's
 * load of it), then, when the filter
 * is active, twice more: once to follow each allocation through its life and
 * mark the ones the filter matches (a bit per allocation), once to build
 * `matched`, the same recording whose figures took only those.  Every
 * report view and export then works on `matched` unchanged.  Memory: the
 * live blocks, the sites and one bit per allocation; events are not kept.
 *
 * Exports that need the events themselves in time order (heaptrack, massif,
 * the timeline) replay the file through the same selection.
 */
#ifndef MEMTRACE_SELECT_H
#define MEMTRACE_SELECT_H

#include "filter.h"
#include "recording.h"

struct mt_selection {
	const char *path;
	struct mt_recording all, matched; /* matched is all when the filter is inactive */
	int borrowed; /* all belongs to another selection (mt_select_load_over) */
	int filtered;
	const struct mt_filter *filter; /* the filter when filtered (not owned), else NULL */
	struct mt_sel_proc *procs;	/* per process of `all`, same order */
	uint64_t where_next;		/* id - 1 of the next allocation (the filter's "where") */
};

/* Loads PATH through F (may be NULL).  Returns 0, or a negative value with a
 * reason in ERR: MT_SELECT_BAD_FILTER when the filter is at fault (a regex
 * too costly to match: the server answers 400), -1 for the file. */
#define MT_SELECT_BAD_FILTER (-2)
int mt_select_load(struct mt_selection *s, const char *path, const struct mt_filter *f, char *err,
		   size_t errlen);
/* The same over ALL, a load of PATH already made (the server's), which is
 * borrowed rather than read again: two reads instead of three, and one copy
 * of its figures.  ALL must stay unchanged until mt_select_free; the passes
 * read the file as far as its load did. */
int mt_select_load_over(struct mt_selection *s, const struct mt_recording *all, const char *path,
			const struct mt_filter *f, char *err, size_t errlen);
void mt_select_free(struct mt_selection *s);

/* Matched allocation events of the recording in stream order, per process
 * (PROC: its index in s->matched.procs); a realloc comes as a free and an
 * allocation.  FREE is called only for blocks whose allocation matched
 * (when filtered) or any block (when not: unknown blocks included). */
struct mt_replay_ops {
	void (*alloc)(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr,
		      uint64_t size, uint32_t site);
	void (*free)(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr);
	void *ctx;
	/* An event the filter left out (may be NULL): what is temporary
	 * depends on every event of the thread, not only the matched ones. */
	void (*touch)(void *ctx, size_t proc, uint64_t ts, uint32_t tid);
};
int mt_select_replay(struct mt_selection *s, const struct mt_replay_ops *ops, char *err,
		     size_t errlen);

#endif
