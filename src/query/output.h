/*
 * output.h - running SQL statements over a recording's tables and writing
 * their rows: an aligned table for people, CSV and JSON for programs.
 */
#ifndef MEMTRACE_QUERY_OUTPUT_H
#define MEMTRACE_QUERY_OUTPUT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum mt_qformat {
	MT_QFMT_TABLE,	   /* columns aligned, a header and a rule; NULL as "NULL" */
	MT_QFMT_CSV,	   /* RFC 4180: a header line, fields quoted when they need it */
	MT_QFMT_JSON,	   /* an array of objects, one per row, keys the column names */
	MT_QFMT_JSON_ROWS, /* {"columns": [...], "rows": [[...], ...]} (the server's) */
};

/* Parses a --format value; -1 when it is none of table, csv, json. */
int mt_qformat_parse(const char *s);

/* Steps ST to its end, writing its rows to OUT in FMT (nothing for a
 * statement that returns no columns).  Returns 0, or -1 with SQLite's
 * one-line message in ERR. */
int mt_query_print(sqlite3 *db, sqlite3_stmt *st, enum mt_qformat fmt, FILE *out, char *err,
		   size_t errlen);
/* The same, failing ("more than MAX_ROWS rows") at row MAX_ROWS + 1. */
int mt_query_print_max(sqlite3 *db, sqlite3_stmt *st, enum mt_qformat fmt, FILE *out,
		       uint64_t max_rows, char *err, size_t errlen);

/* Prepares and runs each statement of SQL in turn, as mt_query_print.
 * Returns 0, or -1 at the first statement that fails, with its message in
 * ERR. */
int mt_query_run(sqlite3 *db, const char *sql, enum mt_qformat fmt, FILE *out, char *err,
		 size_t errlen);

#endif
