/*
 * guard.h - a recording's tables opened for SQL from anyone (the server's
 * query console and its "where" parameter): a connection of its own per
 * request, over a read-only copy of the tables (so that requests never
 * wait on each other's statements), where SQLite's authorizer lets only
 * reading through (no writes, ATTACH, PRAGMA, extensions), and its
 * progress handler stops a statement whose time runs out or whose request
 * is gone (analyse/recording.h's budget).
 */
#ifndef MEMTRACE_QUERY_GUARD_H
#define MEMTRACE_QUERY_GUARD_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

struct mt_qguard {
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: only the thread's budget */
	/* set when it stopped or refused a statement: */
	enum { MT_QGUARD_OK, MT_QGUARD_TIME, MT_QGUARD_CANCELLED, MT_QGUARD_DENIED } why;
	char denied[120]; /* what was refused */
};

/* Makes Q's image, the copy of its ordinary tables each guarded connection
 * reads (once, before connections are made).  0, or -1 with ERR. */
int mt_qdb_make_image(struct mt_qdb *q, char *err, size_t errlen);

/* A guarded connection to Q's tables, G its budget (it must outlive the
 * connection).  NULL with ERR when it cannot be made. */
sqlite3 *mt_qguard_connect(struct mt_qdb *q, struct mt_qguard *g, char *err, size_t errlen);

/* ERR rewritten to say why G stopped the statement, when it did. */
void mt_qguard_explain(const struct mt_qguard *g, char *err, size_t errlen);

#endif
