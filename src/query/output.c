/*
 * output.c - see output.h.  The table format sizes its columns from the
 * first rows (TABLE_SAMPLE) and writes the rest as they come, so that a
 * query of millions of rows is never held whole.
 */
#include "output.h"
#include "base/json.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define TABLE_SAMPLE 1000
#define CELL_MAX 4096 /* a cell of the table format, escaped (longer ones are cut) */

/* The row budget of mt_query_print_max: a step that would give one row
 * too many ends the statement as an error. */
static __thread uint64_t rows_left;
static __thread int over_rows;

static int step(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && rows_left != UINT64_MAX && rows_left-- == 0) {
		over_rows = 1;
		return SQLITE_ABORT;
	}
	return rc;
}

int mt_qformat_parse(const char *s)
{
	return !strcmp(s, "table") ? MT_QFMT_TABLE :
	       !strcmp(s, "csv")   ? MT_QFMT_CSV :
	       !strcmp(s, "json")  ? MT_QFMT_JSON :
				     -1;
}

/* ---- CSV and JSON, a row at a time ---- */

static void csv_field(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void json_value(FILE *f, sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		fputs("null", f);
		break;
	case SQLITE_INTEGER:
		fprintf(f, "%lld", (long long)sqlite3_column_int64(st, i));
		break;
	case SQLITE_FLOAT: {
		/* SQLite's own rendering of a REAL, which JSON reads back */
		const char *t = (const char *)sqlite3_column_text(st, i);
		fputs(t && strpbrk(t, "0123456789") && !strpbrk(t, "IN") ? t : "null", f);
		break;
	}
	case SQLITE_BLOB: {
		const unsigned char *b = sqlite3_column_blob(st, i);
		int n = sqlite3_column_bytes(st, i);
		fputc('"', f);
		for (int k = 0; k < n; k++)
			fprintf(f, "%02x", b[k]);
		fputc('"', f);
		break;
	}
	default:
		mt_json_str(f, (const char *)sqlite3_column_text(st, i));
	}
}

/* ---- the table: cells escaped for a terminal ---- */

struct cell {
	char *s;
	int width, right; /* width in characters; numbers are aligned right */
};

static int text_width(const char *s)
{
	int w = 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		w += (*c & 0xc0) != 0x80; /* count characters, not bytes */
	return w;
}

static struct cell make_cell(sqlite3_stmt *st, int i)
{
	char buf[CELL_MAX];
	int ty = sqlite3_column_type(st, i);
	const char *t = ty == SQLITE_NULL ? "NULL" : (const char *)sqlite3_column_text(st, i);
	mt_text_safe(buf, sizeof buf, t ? t : "");
	struct cell c = { xstrdup(buf), text_width(buf),
			  ty == SQLITE_INTEGER || ty == SQLITE_FLOAT };
	return c;
}

static void put_cell(FILE *f, const struct cell *c, int width, int last)
{
	int pad = width > c->width ? width - c->width : 0;
	if (c->right)
		fprintf(f, "%*s", pad, "");
	fputs(c->s, f);
	if (!c->right && !last)
		fprintf(f, "%*s", pad, "");
}

static void put_row(FILE *f, const struct cell *row, const int *widths, int n)
{
	for (int i = 0; i < n; i++) {
		if (i)
			fputs("  ", f);
		put_cell(f, &row[i], widths[i], i == n - 1);
	}
	fputc('\n', f);
}

static int print_table(sqlite3_stmt *st, int ncol, FILE *f, int *rc)
{
	struct cell *sample = xcalloc((size_t)ncol * (TABLE_SAMPLE + 1), sizeof *sample);
	int *widths = xcalloc((size_t)ncol, sizeof *widths);
	size_t nrows = 0;
	for (int i = 0; i < ncol; i++) {
		char buf[CELL_MAX];
		mt_text_safe(buf, sizeof buf, sqlite3_column_name(st, i));
		sample[i] = (struct cell){ xstrdup(buf), text_width(buf), 0 };
		widths[i] = sample[i].width;
	}
	while (nrows < TABLE_SAMPLE && (*rc = step(st)) == SQLITE_ROW) {
		struct cell *row = sample + (nrows + 1) * (size_t)ncol;
		for (int i = 0; i < ncol; i++) {
			row[i] = make_cell(st, i);
			if (row[i].width > widths[i])
				widths[i] = row[i].width;
		}
		nrows++;
	}
	put_row(f, sample, widths, ncol);
	for (int i = 0; i < ncol; i++) {
		if (i)
			fputs("  ", f);
		for (int k = 0; k < widths[i]; k++)
			fputc('-', f);
	}
	fputc('\n', f);
	for (size_t r = 1; r <= nrows; r++)
		put_row(f, sample + r * (size_t)ncol, widths, ncol);
	for (size_t k = 0; k < (nrows + 1) * (size_t)ncol; k++)
		free(sample[k].s);
	if (nrows == TABLE_SAMPLE) {
		struct cell *row = sample;
		while ((*rc = step(st)) == SQLITE_ROW) {
			for (int i = 0; i < ncol; i++)
				row[i] = make_cell(st, i);
			put_row(f, row, widths, ncol);
			for (int i = 0; i < ncol; i++)
				free(row[i].s);
		}
	}
	free(sample);
	free(widths);
	return 0;
}

int mt_query_print(sqlite3 *db, sqlite3_stmt *st, enum mt_qformat fmt, FILE *f, char *err,
		   size_t errlen)
{
	return mt_query_print_max(db, st, fmt, f, 0, err, errlen);
}

int mt_query_print_max(sqlite3 *db, sqlite3_stmt *st, enum mt_qformat fmt, FILE *f,
		       uint64_t max_rows, char *err, size_t errlen)
{
	int ncol = sqlite3_column_count(st), rc = SQLITE_DONE;
	rows_left = max_rows ? max_rows : UINT64_MAX;
	over_rows = 0;
	if (ncol == 0 || fmt == MT_QFMT_TABLE) {
		if (ncol == 0)
			while ((rc = step(st)) == SQLITE_ROW)
				;
		else
			print_table(st, ncol, f, &rc);
	} else if (fmt == MT_QFMT_CSV) {
		for (int i = 0; i < ncol; i++) {
			if (i)
				fputc(',', f);
			csv_field(f, sqlite3_column_name(st, i));
		}
		fputs("\r\n", f);
		while ((rc = step(st)) == SQLITE_ROW) {
			for (int i = 0; i < ncol; i++) {
				if (i)
					fputc(',', f);
				if (sqlite3_column_type(st, i) == SQLITE_BLOB) {
					const unsigned char *b = sqlite3_column_blob(st, i);
					for (int k = 0; k < sqlite3_column_bytes(st, i); k++)
						fprintf(f, "%02x", b[k]);
				} else {
					csv_field(f, (const char *)sqlite3_column_text(st, i));
				}
			}
			fputs("\r\n", f);
		}
	} else if (fmt == MT_QFMT_JSON) {
		size_t n = 0;
		fputc('[', f);
		while ((rc = step(st)) == SQLITE_ROW) {
			fputs(n++ ? ",\n {" : "\n {", f);
			for (int i = 0; i < ncol; i++) {
				if (i)
					fputs(", ", f);
				mt_json_str(f, sqlite3_column_name(st, i));
				fputs(": ", f);
				json_value(f, st, i);
			}
			fputc('}', f);
		}
		fputs(n ? "\n]\n" : "]\n", f);
	} else {
		size_t n = 0;
		fputs("{\"columns\": [", f);
		for (int i = 0; i < ncol; i++) {
			if (i)
				fputs(", ", f);
			mt_json_str(f, sqlite3_column_name(st, i));
		}
		fputs("],\n \"rows\": [", f);
		while ((rc = step(st)) == SQLITE_ROW) {
			fputs(n++ ? ",\n  [" : "\n  [", f);
			for (int i = 0; i < ncol; i++) {
				if (i)
					fputs(", ", f);
				json_value(f, st, i);
			}
			fputc(']', f);
		}
		fputs("]}\n", f);
	}
	if (rc == SQLITE_DONE)
		return 0;
	if (over_rows)
		snprintf(err, errlen, "the answer has more than %llu rows: add a LIMIT",
			 (unsigned long long)max_rows);
	else
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
	return -1;
}

int mt_query_run(sqlite3 *db, const char *sql, enum mt_qformat fmt, FILE *out, char *err,
		 size_t errlen)
{
	const char *rest = sql;
	while (rest && *rest) {
		sqlite3_stmt *st = NULL;
		const char *tail = NULL;
		if (sqlite3_prepare_v2(db, rest, -1, &st, &tail) != SQLITE_OK) {
			snprintf(err, errlen, "%s", sqlite3_errmsg(db));
			return -1;
		}
		rest = tail;
		if (!st) /* only a comment or white space */
			continue;
		int r = mt_query_print(db, st, fmt, out, err, errlen);
		sqlite3_finalize(st);
		if (r < 0)
			return -1;
	}
	return 0;
}
