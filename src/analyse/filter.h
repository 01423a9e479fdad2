/*
 * filter.h - bytehound's allocation filter, shared by `memtrace report`,
 * `memtrace export` and the server: which allocations count.
 *
 * A filter is set key by key with the names of bytehound's REST API
 * ("from", "lifetime", "size_min", "function_regex", ...), which the
 * command line spells as options (--from, --lifetime, --size-min, ...).  It
 * is then prepared for one process (site-level tests: backtrace depth,
 * regexes over the symbolized frames, group figures over every allocation
 * of the site) and asked about each allocation's whole life.
 */
#ifndef MEMTRACE_FILTER_H
#define MEMTRACE_FILTER_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "recording.h"
#include "symbols.h"

enum mt_lifetime {
	MT_LIFE_ALL,
	MT_LIFE_ONLY_LEAKED,
	MT_LIFE_ONLY_TEMPORARY,
	MT_LIFE_ONLY_NOT_DEALLOCATED_IN_RANGE,
	MT_LIFE_ONLY_DEALLOCATED_IN_RANGE,
	MT_LIFE_ONLY_WHOLE_GROUP_LEAKED,
};

/* A bound that is seconds from the start of the process, or a percentage
 * of its run (or of a site's allocations, for group_leaked_allocations). */
struct mt_fbound {
	int set, pct;
	double v;
};

struct mt_filter {
	int active; /* any key set */
	struct mt_fbound from, to;
	enum mt_lifetime lifetime;
	struct mt_fbound address_min, address_max, size_min, size_max;
	struct mt_fbound lifetime_min, lifetime_max;
	struct mt_fbound depth_min, depth_max;
	struct mt_fbound group_interval_min, group_interval_max;
	struct mt_fbound group_allocations_min, group_allocations_max;
	struct mt_fbound group_leaked_min, group_leaked_max;
	/* the thread (kernel tid) that made the allocation; its free may be
	 * another thread's */
	struct mt_fbound thread;
	pcre2_code *re[4]; /* function, source, negative function, negative source */
	int re_set[4];
	/* "where": an SQL condition over the allocations table of `memtrace
	 * query`.  analyse does not run SQL: whoever sets it evaluates it over
	 * the recording (query/where.h) and sets WHERE_BITS, bit id - 1 for each
	 * allocation it matches (ids: the allocations of the file in the order
	 * the loader meets them, from 1), before loading through the filter. */
	char *where;
	uint64_t *where_bits; /* owned */
	uint64_t where_n;
	/* The keys set, "key=value" a line each in the order last set (owned;
	 * NULL when none): how reports say they are filtered. */
	char *desc;
};

/* The longest "where" condition taken (bytes). */
#define MT_FILTER_WHERE_MAX 8192

/* The regexes are PCRE2's, compiled and matched with bounds, because a
 * pattern may come from anyone who reaches the server: no longer than
 * MT_FILTER_RE_MAX bytes, and a match that would take more than
 * MT_FILTER_RE_STEPS steps (or MT_FILTER_RE_HEAP bytes of backtracking
 * memory) counts as no match.  POSIX ERE patterns mean the same in PCRE2
 * but for back-references and a few escapes. */
#define MT_FILTER_RE_MAX 1024
#define MT_FILTER_RE_STEPS 100000
#define MT_FILTER_RE_HEAP (1u << 20)

/* One allocation, from its allocation to its free (or the end). */
struct mt_life {
	uint64_t ptr, size, ts, free_ts;
	uint32_t site;
	uint32_t tid; /* the thread that allocated it */
	int freed, temporary;
};

/* A filter made ready for one process. */
struct mt_filter_proc {
	const struct mt_filter *f;
	uint8_t *site_ok; /* site-level verdicts */
	size_t nsites;
	uint64_t from_ts, to_ts, end_ts;
	const char *too_costly; /* the regex key whose pattern ran into PCRE2's
				 * limits on some frame, or NULL */
};

void mt_filter_init(struct mt_filter *f);
void mt_filter_free(struct mt_filter *f);

/* Sets KEY (bytehound's name) to VALUE.  Returns 0, or -1 with a message
 * naming the key in ERR; 1 when KEY is no filter key. */
int mt_filter_set(struct mt_filter *f, const char *key, const char *value, char *err,
		  size_t errlen);

/* Command-line form: if argv[*i] is a filter option (--size-min N or
 * --size-min=N, ...), sets it and returns 1 (moving *i past a separate
 * value); 0 when it is not one; -1 after printing a usage error of CMD. */
int mt_filter_arg(struct mt_filter *f, const char *cmd, int argc, char **argv, int *i);

/* The filter options, for --help texts. */
extern const char mt_filter_help[];

/* Prepares F for process P (its figures over every allocation), with SYM
 * its symbolizer when the filter has regexes (NULL otherwise is fine). */
void mt_filter_prepare(struct mt_filter_proc *fp, const struct mt_filter *f,
		       const struct mt_process *p, struct mt_symbolizer *sym);
void mt_filter_proc_free(struct mt_filter_proc *fp);

/* The span of P's run that F's from and to keep, in seconds (the whole run
 * when neither is set or F is NULL): what rates divide by.  *FROM_S (may
 * be NULL) gets where it starts, from the start of the process. */
double mt_filter_span_s(const struct mt_filter *f, const struct mt_process *p, double *from_s);

/* Does the allocation L match? */
int mt_filter_match(const struct mt_filter_proc *fp, const struct mt_life *l);

#endif
