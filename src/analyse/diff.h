/*
 * diff.h - two recordings side by side: call sites matched by what their
 * frames say, not by where the code was loaded.
 *
 * `memtrace diff BASE NEW` asks what grew between two runs, which may be two
 * builds, with the code at other addresses (ASLR, a changed binary) and
 * under other names (app, app2).  A site is keyed by its allocator function
 * and, frame by frame out to main, the function's name (lines, addresses
 * and module paths left out: they move between builds and copies); a frame
 * with no symbol is keyed by its offset in its module, named by build ID
 * when it has one.  The sites of every process of a recording that read
 * the same are one diff site, their figures summed; so are the totals.
 */
#ifndef MEMTRACE_DIFF_H
#define MEMTRACE_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "recording.h"
#include "sites.h"

struct mt_diff_site {
	struct mt_site_stats base, new; /* summed; all 0 where the side has none */
	int fn;				/* allocator function */
	struct mt_frame *frames;	/* leaf first, strings owned by the diff */
	int nframes;
};

struct mt_diff {
	struct mt_totals base, new; /* summed over processes */
	int sampled;		    /* either side's figures are (in part) estimates */
	struct mt_diff_site *sites;
	size_t n, cap;
	/* key -> site index + 1 (open addressing) */
	struct {
		uint64_t hash;
		uint32_t site;
		char *key;
	} * index;
	size_t mask;
	char **strings; /* owned copies of frame strings */
	size_t nstrings, strings_cap;
	/* a module's name in keys, by build id: the first recording's, so that
	 * one object under two paths (the loader's /lib/libfoo.so.1 in a
	 * preload recording, /proc's /usr/lib/libfoo.so.1.2.3 in a BPF one)
	 * keys its frames alike (while mt_diff_build runs) */
	struct mt_diff_alias {
		const uint8_t *id;
		size_t len;
		const char *name;
	} * aliases;
	size_t naliases, aliases_cap;
};

/* Matches the sites of BASE and NEW.  Returns 0 (it cannot fail but for
 * memory, which exits). */
int mt_diff_build(struct mt_diff *d, const struct mt_recording *base,
		  const struct mt_recording *new);
void mt_diff_free(struct mt_diff *d);

/* NEW's amount and measure minus BASE's in VIEW (sites.h), signed. */
int64_t mt_diff_measure(const struct mt_diff_site *s, enum mt_view view);
int64_t mt_diff_total_measure(const struct mt_diff *d, enum mt_view view);

/* Whether any figure of S that VIEW shows moved: its measure, its amount's
 * bytes or count (sites.h). */
int mt_diff_changed(const struct mt_diff_site *s, enum mt_view view);

/* Indices of the sites, by growth in VIEW's measure, the largest first and
 * the largest shrinkage last; with CHANGED only those mt_diff_changed says
 * moved.  *n is set. */
uint32_t *mt_diff_rank(const struct mt_diff *d, enum mt_view view, int changed, size_t *n);

#endif
