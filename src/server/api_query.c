/*
 * api_query.c - /data/<id>/query?sql=STATEMENT[&format=json|csv]: SQL over
 * the recording's tables (query/db.h), for the GUI's query console, and
 * the "where" parameter of every endpoint.
 *
 * The tables are made by the first request that needs them and kept with
 * the file.  Each request then reads them through a connection of its own
 * (query/guard.h): read-only, only SELECT, and a time budget of half the
 * request's (so that it is the statement that stops, with a 408 naming the
 * budget, before the request as a whole runs out), plus a row budget.  A
 * runaway statement holds one worker slot until then; other requests go on.
 */
#include "api.h"
#include "query/guard.h"
#include "query/output.h"
#include "query/where.h"
#include "base/util.h"
#include "base/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The most rows an answer carries (the console shows them, the CSV
 * download holds them). */
#define QUERY_MAX_ROWS 100000

int api_param_query(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "sql")) {
		if (!v || !v[strspn(v, " \t\r\n")]) {
			srv_error(x->r, 400, "sql: no statement");
			return -1;
		}
		if (strlen(v) > 65536) {
			srv_error(x->r, 400, "sql: the statement is longer than 65536 bytes");
			return -1;
		}
		free(x->sql);
		x->sql = xstrdup(v);
		return 1;
	}
	if (!strcmp(key, "format")) {
		if (v && !strcmp(v, "csv")) {
			x->qformat = MT_QFMT_CSV;
			x->type = "text/csv; charset=utf-8";
		} else if (v && !strcmp(v, "json")) {
			x->qformat = MT_QFMT_JSON_ROWS;
		} else {
			srv_error(x->r, 400, "format: '%s' is neither json nor csv", v ? v : "");
			return -1;
		}
		return 1;
	}
	return 0;
}

/* The file's tables, made on first use: NULL after srv_error. */
static struct mt_qdb *file_qdb(struct req *x)
{
	char err[512];
	struct mt_qdb *q;
	int status = 500;
	const struct mt_budget *b = mt_budget_get();
	pthread_mutex_lock(&x->st->qlock);
	if (!(q = x->file->qdb)) {
		q = xmalloc(sizeof *q);
		if (mt_qdb_open(q, x->file->path, err, sizeof err) < 0) {
			free(q);
			q = NULL;
		} else if (b && b->max_bytes && mt_qdb_bytes(q) > b->max_bytes) {
			/* kept for the server's life: a request's share is the most */
			snprintf(
				err, sizeof err,
				"the tables need more memory than a request may take (%llu MiB; see "
				"memtrace server --request-memory)",
				(unsigned long long)(b->max_bytes >> 20));
			status = 503;
			mt_qdb_close(q);
			free(q);
			q = NULL;
		} else if (mt_budget_stopped() || mt_qdb_make_image(q, err, sizeof err) < 0) {
			/* stopped while symbolizing: its frames would be short */
			snprintf(err, sizeof err, "making the tables was stopped");
			mt_qdb_close(q);
			free(q);
			q = NULL;
		}
		x->file->qdb = q;
	}
	pthread_mutex_unlock(&x->st->qlock);
	if (!q)
		srv_error(x->r, status, "%s", err);
	return q;
}

static uint64_t deadline(const struct req *x)
{
	uint64_t ms = x->st->timeout_s * 500ull;
	return mt_now_ns() + ms * 1000000ull;
}

/* A statement's failure: SQLite's message, or what the guard did. */
static void query_error(struct req *x, const struct mt_qguard *g, const char *what, char *err)
{
	mt_qguard_explain(g, err, 512);
	int status = g->why == MT_QGUARD_TIME	   ? 408 :
		     g->why == MT_QGUARD_DENIED	   ? 403 :
		     g->why == MT_QGUARD_CANCELLED ? 503 :
						     400;
	if (g->why == MT_QGUARD_TIME)
		srv_error(x->r, status, "%s: %s (%u s)", what, err,
			  x->st->timeout_s / 2 ? x->st->timeout_s / 2 : 1);
	else
		srv_error(x->r, status, "%s: %s", what, err);
}

/* A connection of this request's own to the file's tables (*Q), watched by
 * G with the request's budget: NULL after srv_error. */
static sqlite3 *connect_guarded(struct req *x, struct mt_qdb **q, struct mt_qguard *g, char *err,
				size_t errlen)
{
	if (!(*q = file_qdb(x)))
		return NULL;
	*g = (struct mt_qguard){ .deadline_ns = deadline(x) };
	sqlite3 *db = mt_qguard_connect(*q, g, err, errlen);
	if (!db)
		srv_error(x->r, 500, "%s", err);
	return db;
}

int api_where(struct req *x)
{
	char err[512];
	struct mt_qdb *q;
	struct mt_qguard g;
	sqlite3 *db = connect_guarded(x, &q, &g, err, sizeof err);
	if (!db)
		return -1;
	int r = mt_where_filter_on(&x->filt, q, db, err, sizeof err);
	if (r < 0) {
		if (g.why != MT_QGUARD_OK)
			query_error(x, &g, "where", err);
		else
			srv_error(x->r, 400, "%s", err);
	}
	sqlite3_close(db);
	return r;
}

int api_run_query(struct req *x)
{
	char err[512];
	if (!x->sql) {
		srv_error(x->r, 400, "query: give the statement as sql=...");
		return -1;
	}
	struct mt_qdb *q;
	struct mt_qguard g;
	sqlite3 *db = connect_guarded(x, &q, &g, err, sizeof err);
	if (!db)
		return -1;
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	int r = -1;
	if (sqlite3_prepare_v2(db, x->sql, -1, &st, &tail) != SQLITE_OK) {
		snprintf(err, sizeof err, "%s", sqlite3_errmsg(db));
		query_error(x, &g, "sql", err);
	} else if (!st) {
		srv_error(x->r, 400, "sql: no statement");
	} else if (tail && tail[strspn(tail, " \t\r\n;")]) {
		srv_error(x->r, 400, "sql: one statement at a time");
	} else if (!sqlite3_stmt_readonly(st)) {
		srv_error(x->r, 403, "sql: not allowed here: writing (the tables are read-only)");
	} else if (!(mem = open_memstream(&buf, &len))) {
		srv_error(x->r, 500, "out of memory");
	} else if (mt_query_print_max(db, st,
				      x->qformat == MT_QFMT_CSV ? MT_QFMT_CSV : MT_QFMT_JSON_ROWS,
				      mem, QUERY_MAX_ROWS, err, sizeof err) < 0) {
		query_error(x, &g, "sql", err);
	} else {
		r = 0;
	}
	if (mem)
		fclose(mem);
	/* the answer goes out only whole: an error replaces it */
	if (r == 0 && len && fwrite(buf, 1, len, x->out) != len)
		r = -1;
	free(buf);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}
