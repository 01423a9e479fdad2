/*
 * db.h - a recording seen as SQLite tables, for `memtrace query`, --where
 * and the server's query console.
 *
 * The figures are the report's: the recording is loaded once through
 * analyse/ (figures.h makes the per-site and per-process figures, the
 * same code as `memtrace report`), and the same pass, through the load's
 * hook, keeps one row per allocation in plain arrays.  The tables:
 *
 *   processes(pid, exe, argv, backend, duration_s, exit_status, signal,
 *             lost_events, ...)
 *   allocations(id, pid, tid, site_id, size, address, alloc_s, free_s,
 *               temporary, ...)    a virtual table over the arrays (vtab.c)
 *   sites(id, pid, site, allocations, allocated_bytes, leaked_allocations,
 *         leaked_bytes, peak_bytes, temporary_allocations, ...)
 *   frames(site_id, depth, function, file, line, module, address, inlined)
 *
 * man/memtrace-query.1 says what each column means.  Allocation ids count
 * the allocations of the file in the order the loader meets them (every
 * allocation and the new block of every realloc), from 1, which is also the
 * order analyse/select.c numbers them in for --where.  Site ids number the
 * sites of the first process from 0 (as the server's "site"), then those of
 * the next after them, and so on.
 */
#ifndef MEMTRACE_QUERY_DB_H
#define MEMTRACE_QUERY_DB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse/recording.h"

/* One row per allocation, column by column (the arrays of vtab.c). */
struct mt_qrows {
	size_t n, cap;
	uint32_t *proc, *tid, *site;   /* process index, thread, site in its process */
	uint64_t *size, *ts, *free_ts; /* free_ts: MT_QDB_LIVE when never freed */
	uint64_t *addr;		       /* NULL while every block is named by serial (bit 63) */
	uint8_t *temporary;
	uint8_t *kind; /* of a block live at the end: enum mt_leak_kind; MT_QDB_NO_KIND:
			* freed, or no leak scan ran */
};
#define MT_QDB_NO_KIND 255
#define MT_QDB_LIVE UINT64_MAX

struct mt_qdb {
	struct mt_recording rec; /* the whole recording's figures */
	struct mt_qrows rows;
	uint64_t *site_base; /* per process: the global id of its site 0 */
	sqlite3 *db;
	unsigned char *image; /* a copy of the ordinary tables (guard.h), or NULL */
	sqlite3_int64 image_size;
};

/* Loads PATH and makes its tables in a new in-memory database.  Returns 0,
 * or -1 with a one-line reason in ERR. */
int mt_qdb_open(struct mt_qdb *q, const char *path, char *err, size_t errlen);
void mt_qdb_close(struct mt_qdb *q);

/* What Q's rows and tables take, about. */
uint64_t mt_qdb_bytes(const struct mt_qdb *q);

/* Copies every table into a new SQLite file at PATH (a regular file there
 * is replaced once the new one is whole; anything else is refused), as
 * ordinary tables any SQLite reader opens.  0, or -1 with ERR. */
int mt_qdb_save(struct mt_qdb *q, const char *path, char *err, size_t errlen);

/* Registers the allocations table's module on Q's database, or on DB,
 * another connection that reads Q's rows (vtab.c). */
int mt_qdb_vtab_register(struct mt_qdb *q);
int mt_qdb_vtab_register_on(struct mt_qdb *q, sqlite3 *db);

#endif
