/*
 * where.c - see where.h.
 */
#include "where.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sqlite3_stmt *mt_where_prepare(sqlite3 *db, const char *columns, const char *cond, char *err,
			       size_t errlen)
{
	if (strlen(cond) > MT_WHERE_MAX) {
		snprintf(err, errlen, "the condition is longer than %d bytes", MT_WHERE_MAX);
		return NULL;
	}
	size_t n = strlen(columns) + strlen(cond) + 80;
	char *sql = xmalloc(n);
	/* the newline ends a "--" comment at the condition's end */
	snprintf(sql, n, "SELECT %s FROM allocations WHERE (%s\n) ORDER BY id", columns, cond);
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, &tail) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		st = NULL;
	} else if (tail && tail[strspn(tail, " \t\r\n;")]) {
		snprintf(err, errlen, "'%s' is not one SQL expression", cond);
		sqlite3_finalize(st);
		st = NULL;
	} else if (!st) {
		snprintf(err, errlen, "the condition is empty");
	}
	free(sql);
	return st;
}

int mt_where_bits(struct mt_qdb *q, sqlite3 *db, const char *cond, uint64_t **bits, uint64_t *nbits,
		  char *err, size_t errlen)
{
	sqlite3_stmt *st = mt_where_prepare(db, "id", cond, err, errlen);
	if (!st)
		return -1;
	uint64_t n = q->rows.n;
	uint64_t *b = xcalloc(n / 64 + 1, sizeof *b);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		sqlite3_int64 id = sqlite3_column_int64(st, 0);
		if (sqlite3_column_type(st, 0) == SQLITE_INTEGER && id >= 1 && (uint64_t)id <= n)
			b[(uint64_t)(id - 1) / 64] |= 1ull << ((uint64_t)(id - 1) % 64);
	}
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		sqlite3_finalize(st);
		free(b);
		return -1;
	}
	sqlite3_finalize(st);
	*bits = b;
	*nbits = n;
	return 0;
}

int mt_where_filter(struct mt_filter *f, struct mt_qdb *q, char *err, size_t errlen)
{
	return mt_where_filter_on(f, q, q->db, err, errlen);
}

int mt_where_filter_on(struct mt_filter *f, struct mt_qdb *q, sqlite3 *db, char *err, size_t errlen)
{
	char why[400];
	if (!f->where)
		return 0;
	free(f->where_bits);
	f->where_bits = NULL;
	if (mt_where_bits(q, db, f->where, &f->where_bits, &f->where_n, why, sizeof why) < 0) {
		snprintf(err, errlen, "where: %s", why);
		return -1;
	}
	return 0;
}

int mt_where_filter_file(struct mt_filter *f, const char *path, char *err, size_t errlen)
{
	struct mt_qdb q;
	if (!f->where)
		return 0;
	if (mt_qdb_open(&q, path, err, errlen) < 0)
		return -1;
	int r = mt_where_filter(f, &q, err, errlen);
	mt_qdb_close(&q);
	return r;
}
