/*
 * guard.c - see guard.h.
 */
#include "guard.h"
#include "analyse/recording.h"
#include "base/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int mt_qdb_make_image(struct mt_qdb *q, char *err, size_t errlen)
{
	if (q->image)
		return 0;
	sqlite3_int64 n = 0;
	q->image = sqlite3_serialize(q->db, "main", &n, 0);
	if (!q->image) {
		snprintf(err, errlen, "cannot copy the tables: out of memory");
		return -1;
	}
	q->image_size = n;
	return 0;
}

/* What a statement may do: read.  Every other action is refused before the
 * statement runs, and its name kept for the message. */
static int authorize(void *ctx, int action, const char *a, const char *b, const char *db,
		     const char *trigger)
{
	struct mt_qguard *g = ctx;
	(void)trigger;
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_READ:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_UPDATE:
		/* SQLite's own, when it connects the allocations table named in
		 * the read-only schema; the schema cannot be written */
		if (a && !strcmp(a, "sqlite_master") && db && !strcmp(db, "main"))
			return SQLITE_OK;
		break;
	case SQLITE_FUNCTION:
		/* B is the function's name */
		if (b && (!strcmp(b, "load_extension") || !strncmp(b, "fts3_tokenizer", 14)))
			break;
		return SQLITE_OK;
	default:
		break;
	}
	g->why = MT_QGUARD_DENIED;
	snprintf(g->denied, sizeof g->denied, "%s",
		 action == SQLITE_ATTACH || action == SQLITE_DETACH	    ? "ATTACH and DETACH" :
		 action == SQLITE_PRAGMA				    ? "PRAGMA" :
		 action == SQLITE_FUNCTION				    ? "loading extensions" :
		 action == SQLITE_TRANSACTION || action == SQLITE_SAVEPOINT ? "transactions" :
									      "writing");
	return SQLITE_DENY;
}

/* Every few thousand steps of the statement: non-zero stops it. */
static int progress(void *ctx)
{
	struct mt_qguard *g = ctx;
	if (g->deadline_ns && mt_now_ns() >= g->deadline_ns) {
		g->why = MT_QGUARD_TIME;
		return 1;
	}
	if (mt_budget_stopped()) {
		const struct mt_budget *b = mt_budget_get();
		g->why = b && b->deadline_ns && mt_now_ns() >= b->deadline_ns ? MT_QGUARD_TIME :
										MT_QGUARD_CANCELLED;
		return 1;
	}
	return 0;
}

sqlite3 *mt_qguard_connect(struct mt_qdb *q, struct mt_qguard *g, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	g->why = MT_QGUARD_OK;
	if (!q->image) {
		snprintf(err, errlen, "the tables have no image");
		return NULL;
	}
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
		    SQLITE_OK ||
	    mt_qdb_vtab_register_on(q, db) < 0 ||
	    sqlite3_deserialize(db, "main", q->image, q->image_size, q->image_size,
				SQLITE_DESERIALIZE_READONLY) != SQLITE_OK) {
		snprintf(err, errlen, "cannot open the tables: %s",
			 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 24);
	sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 1 << 16);
	sqlite3_set_authorizer(db, authorize, g);
	sqlite3_progress_handler(db, 10000, progress, g);
	return db;
}

void mt_qguard_explain(const struct mt_qguard *g, char *err, size_t errlen)
{
	if (g->why == MT_QGUARD_TIME)
		snprintf(err, errlen, "the statement ran out of its time budget and was stopped");
	else if (g->why == MT_QGUARD_CANCELLED)
		snprintf(err, errlen, "the statement was cancelled");
	else if (g->why == MT_QGUARD_DENIED)
		snprintf(err, errlen, "not allowed here: %s (the tables are read-only)", g->denied);
}
