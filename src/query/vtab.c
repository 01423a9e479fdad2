/*
 * vtab.c - the allocations table: a read-only SQLite virtual table over the
 * rows db.c keeps in arrays.  Copying ten million rows into SQLite's own
 * B-tree costs more than the recording takes to load (README's Speed
 * section has both), while a scan of arrays costs little more than the
 * query's own work; so the table is read where it lies, and only --save
 * copies it.  The rowid is the allocation's id, and a constraint on it
 * (id = ?, id < ?, ...) limits the scan to those rows.
 */
#include "db.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
	C_ID,
	C_PID,
	C_TID,
	C_SITE,
	C_SIZE,
	C_ADDR,
	C_ALLOC,
	C_FREE,
	C_TEMP,
	C_LIFE,
	C_PROCESS,
	C_KIND
};

struct tab {
	sqlite3_vtab base;
	struct mt_qdb *q;
};

struct cur {
	sqlite3_vtab_cursor base;
	size_t i, end; /* rows [i, end) */
};

static int x_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
		     char **err)
{
	(void)argc, (void)argv, (void)err;
	int rc = sqlite3_declare_vtab(
		db, "CREATE TABLE x(id INTEGER, pid INTEGER, tid INTEGER, site_id INTEGER,"
		    " size INTEGER, address INTEGER, alloc_s REAL, free_s REAL,"
		    " temporary INTEGER, lifetime_s REAL, process INTEGER, leak_kind TEXT)");
	if (rc != SQLITE_OK)
		return rc;
	struct tab *t = sqlite3_malloc(sizeof *t);
	if (!t)
		return SQLITE_NOMEM;
	memset(t, 0, sizeof *t);
	t->q = aux;
	*out = &t->base;
	return SQLITE_OK;
}

static int x_disconnect(sqlite3_vtab *v)
{
	sqlite3_free(v);
	return SQLITE_OK;
}

/* Plans: idxNum's bits say which bounds on the id xFilter gets, in this
 * order: 1 =, 2 > or >=, 4 < or <=. */
static int x_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
	struct tab *t = (struct tab *)v;
	int plan = 0, argi = 0;
	int which[3] = { -1, -1, -1 };
	for (int i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];
		if (!c->usable || (c->iColumn != C_ID && c->iColumn != -1))
			continue;
		if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && which[0] < 0)
			which[0] = i;
		else if ((c->op == SQLITE_INDEX_CONSTRAINT_GT ||
			  c->op == SQLITE_INDEX_CONSTRAINT_GE) &&
			 which[1] < 0)
			which[1] = i;
		else if ((c->op == SQLITE_INDEX_CONSTRAINT_LT ||
			  c->op == SQLITE_INDEX_CONSTRAINT_LE) &&
			 which[2] < 0)
			which[2] = i;
	}
	double rows = (double)t->q->rows.n + 1;
	if (which[0] >= 0) {
		plan = 1;
		info->aConstraintUsage[which[0]].argvIndex = ++argi;
		info->estimatedRows = 1;
		info->estimatedCost = 1;
		info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
	} else {
		for (int k = 1; k < 3; k++) {
			if (which[k] < 0)
				continue;
			plan |= k == 1 ? 2 : 4;
			info->aConstraintUsage[which[k]].argvIndex = ++argi;
			rows /= 4;
		}
		info->estimatedRows = (sqlite3_int64)rows;
		info->estimatedCost = rows;
	}
	/* rows come in id order */
	if (info->nOrderBy == 1 &&
	    (info->aOrderBy[0].iColumn == C_ID || info->aOrderBy[0].iColumn == -1) &&
	    !info->aOrderBy[0].desc)
		info->orderByConsumed = 1;
	info->idxNum = plan;
	return SQLITE_OK;
}

static int x_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
	struct cur *c = sqlite3_malloc(sizeof *c);
	(void)v;
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof *c);
	*out = &c->base;
	return SQLITE_OK;
}

static int x_close(sqlite3_vtab_cursor *c)
{
	sqlite3_free(c);
	return SQLITE_OK;
}

/* The rows whose ids may meet the bounds: a superset (SQLite checks each
 * row again, the constraints are not omitted), so that a bound of another
 * type (text, NULL, a fraction) needs no rules of its own here. */
static int x_filter(sqlite3_vtab_cursor *vc, int plan, const char *idx, int argc,
		    sqlite3_value **argv)
{
	struct cur *c = (struct cur *)vc;
	struct tab *t = (struct tab *)vc->pVtab;
	double lo = 1, hi = (double)t->q->rows.n; /* ids, inclusive */
	(void)idx;
	for (int a = 0, bit = 1; a < argc && bit <= 4; bit <<= 1) {
		if (!(plan & bit))
			continue;
		sqlite3_value *v = argv[a++];
		int ty = sqlite3_value_numeric_type(v);
		if (ty != SQLITE_INTEGER && ty != SQLITE_FLOAT)
			continue;
		double x = sqlite3_value_double(v);
		if (bit != 4 && floor(x) > lo)
			lo = floor(x);
		if (bit != 2 && ceil(x) < hi)
			hi = ceil(x);
	}
	c->i = c->end = 0;
	if (lo <= hi) {
		c->i = (size_t)lo - 1;
		c->end = (size_t)hi;
	}
	return SQLITE_OK;
}

static int x_next(sqlite3_vtab_cursor *vc)
{
	((struct cur *)vc)->i++;
	return SQLITE_OK;
}

static int x_eof(sqlite3_vtab_cursor *vc)
{
	struct cur *c = (struct cur *)vc;
	return c->i >= c->end;
}

static int x_column(sqlite3_vtab_cursor *vc, sqlite3_context *ctx, int col)
{
	struct cur *c = (struct cur *)vc;
	const struct mt_qdb *q = ((struct tab *)vc->pVtab)->q;
	const struct mt_qrows *r = &q->rows;
	size_t i = c->i;
	const struct mt_process *p = q->rec.procs[r->proc[i]];
	uint64_t start = p->start_ts;
	switch (col) {
	case C_ID:
		sqlite3_result_int64(ctx, (sqlite3_int64)i + 1);
		break;
	case C_PID:
		sqlite3_result_int64(ctx, p->pid);
		break;
	case C_PROCESS:
		sqlite3_result_int64(ctx, r->proc[i]);
		break;
	case C_TID:
		sqlite3_result_int64(ctx, r->tid[i]);
		break;
	case C_SITE:
		sqlite3_result_int64(ctx, (sqlite3_int64)(q->site_base[r->proc[i]] + r->site[i]));
		break;
	case C_SIZE:
		sqlite3_result_int64(ctx, (sqlite3_int64)r->size[i]);
		break;
	case C_ADDR:
		/* the recorder's compact records name a block by its serial */
		if (!r->addr || r->addr[i] >> 63)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_int64(ctx, (sqlite3_int64)r->addr[i]);
		break;
	case C_ALLOC:
		sqlite3_result_double(ctx,
				      r->ts[i] > start ? (double)(r->ts[i] - start) / 1e9 : 0.0);
		break;
	case C_FREE:
		if (r->free_ts[i] == MT_QDB_LIVE)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_double(ctx, r->free_ts[i] > start ?
							   (double)(r->free_ts[i] - start) / 1e9 :
							   0.0);
		break;
	case C_TEMP:
		sqlite3_result_int(ctx, r->temporary[i]);
		break;
	case C_KIND:
		if (r->kind[i] < MT_LEAK_KINDS)
			sqlite3_result_text(ctx, mt_leak_kind_names[r->kind[i]], -1, SQLITE_STATIC);
		else
			sqlite3_result_null(ctx);
		break;
	case C_LIFE:
		if (r->free_ts[i] == MT_QDB_LIVE)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_double(ctx,
					      r->free_ts[i] > r->ts[i] ?
						      (double)(r->free_ts[i] - r->ts[i]) / 1e9 :
						      0.0);
		break;
	}
	return SQLITE_OK;
}

static int x_rowid(sqlite3_vtab_cursor *vc, sqlite3_int64 *out)
{
	*out = (sqlite3_int64)((struct cur *)vc)->i + 1;
	return SQLITE_OK;
}

static const sqlite3_module allocations_module = {
	.iVersion = 0,
	.xCreate = x_connect,
	.xConnect = x_connect,
	.xBestIndex = x_best_index,
	.xDisconnect = x_disconnect,
	.xDestroy = x_disconnect,
	.xOpen = x_open,
	.xClose = x_close,
	.xFilter = x_filter,
	.xNext = x_next,
	.xEof = x_eof,
	.xColumn = x_column,
	.xRowid = x_rowid,
};

int mt_qdb_vtab_register(struct mt_qdb *q)
{
	return mt_qdb_vtab_register_on(q, q->db);
}

int mt_qdb_vtab_register_on(struct mt_qdb *q, sqlite3 *db)
{
	return sqlite3_create_module(db, "memtrace_allocations", &allocations_module, q) ==
			       SQLITE_OK ?
		       0 :
		       -1;
}
