/*
 * where.h - --where: an SQL condition over the allocations table (and,
 * through subqueries, the sites and frames tables) as a set of allocations,
 * which analyse/filter.h combines with bytehound's filters.
 */
#ifndef MEMTRACE_QUERY_WHERE_H
#define MEMTRACE_QUERY_WHERE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "analyse/filter.h"

/* The longest condition taken (bytes). */
#define MT_WHERE_MAX 8192

/* "SELECT COLUMNS FROM allocations WHERE (COND) ORDER BY id" prepared on DB,
 * or NULL with a one-line reason in ERR (COND is no single expression, or
 * SQLite's message). */
sqlite3_stmt *mt_where_prepare(sqlite3 *db, const char *columns, const char *cond, char *err,
			       size_t errlen);

/* The allocations of Q that COND matches, as bits indexed by id - 1, in
 * *BITS (xmalloc'd, *NBITS of them: every allocation of Q).  Returns 0, or
 * -1 with ERR. */
int mt_where_bits(struct mt_qdb *q, sqlite3 *db, const char *cond, uint64_t **bits, uint64_t *nbits,
		  char *err, size_t errlen);

/* For a filter with a "where" condition: evaluates it over Q's tables into
 * F's where_bits, so that loads through F (analyse/select.h) count only
 * the allocations it matches.  Returns 0 (also when F has none), or -1
 * with a one-line reason naming --where in ERR. */
int mt_where_filter(struct mt_filter *f, struct mt_qdb *q, char *err, size_t errlen);
/* The same on DB, a connection to Q's tables (guard.h). */
int mt_where_filter_on(struct mt_filter *f, struct mt_qdb *q, sqlite3 *db, char *err,
		       size_t errlen);
/* The same, making the tables of the recording PATH for it. */
int mt_where_filter_file(struct mt_filter *f, const char *path, char *err, size_t errlen);

#endif
