/*
 * db.c - see db.h.  One pass over the file: the load's hook sees each
 * allocation event before the figures do and keeps its row, following
 * the figures' rules (figures.h) so that the rows add up to its figures:
 * realloc frees the old block and allocates the new one, a block allocated
 * again without a free ends there, a free is temporary when it frees the
 * block its thread allocated last, address 0 is no block.
 */
#include "db.h"
#include "analyse/mapped.h"
#include "analyse/sites.h"
#include "base/ptrmap.h"
#include "base/util.h"
#include "format/format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- rows, from the load's hook ---- */

struct proc_state {
	struct mt_ptrmap live; /* block -> its row + 1 */
	struct mt_ptrmap last; /* tid + 1 -> the block its last event allocated */
	struct mt_process *p;  /* whose: the load lists processes in stream order,
				* the recording (once loaded) in start order */
};

struct load {
	struct mt_qdb *q;
	struct mt_process *cur; /* the process of the previous event, */
	size_t cur_idx;		/* and its index in q->rec.procs */
	struct proc_state *ps;
	size_t nps;
};

static struct proc_state *state_of(struct load *l, struct mt_process *p, size_t *idx)
{
	if (p != l->cur) {
		size_t i = 0;
		while (i < l->q->rec.nprocs && l->q->rec.procs[i] != p)
			i++;
		l->cur = p;
		l->cur_idx = i;
		if (i >= l->nps) {
			size_t n = l->nps;
			l->nps = i + 8;
			l->ps = xrealloc(l->ps, l->nps * sizeof *l->ps);
			memset(l->ps + n, 0, (l->nps - n) * sizeof *l->ps);
		}
		l->ps[i].p = p;
		if (!l->ps[i].live.keys) {
			mt_ptrmap_xinit(&l->ps[i].live, 1024);
			mt_ptrmap_xinit(&l->ps[i].last, 16);
		}
	}
	*idx = l->cur_idx;
	return &l->ps[l->cur_idx];
}

/* The rows count in the thread's memory budget (the server's requests):
 * past it, the load stops at its next look at the budget. */
static void rows_budget(size_t cap)
{
	struct mt_budget *b = mt_budget_get();
	uint64_t need = (uint64_t)cap * (3 * sizeof(uint32_t) + 4 * sizeof(uint64_t) + 2);
	if (b && b->max_bytes && b->spent + need > b->max_bytes && b->exceeded == MT_BUDGET_OK)
		b->exceeded = MT_BUDGET_MEMORY;
}

static size_t row_add(struct mt_qrows *r)
{
	if (r->n == r->cap) {
		size_t c = r->cap ? r->cap * 2 : 4096;
		rows_budget(c);
		r->proc = xrealloc(r->proc, c * sizeof *r->proc);
		r->tid = xrealloc(r->tid, c * sizeof *r->tid);
		r->site = xrealloc(r->site, c * sizeof *r->site);
		r->size = xrealloc(r->size, c * sizeof *r->size);
		if (r->addr)
			r->addr = xrealloc(r->addr, c * sizeof *r->addr);
		r->ts = xrealloc(r->ts, c * sizeof *r->ts);
		r->free_ts = xrealloc(r->free_ts, c * sizeof *r->free_ts);
		r->temporary = xrealloc(r->temporary, c * sizeof *r->temporary);
		r->kind = xrealloc(r->kind, c * sizeof *r->kind);
		r->cap = c;
	}
	return r->n++;
}

static void on_free(struct mt_qrows *r, struct proc_state *ps, uint32_t tid, uint64_t ts,
		    uint64_t ptr)
{
	uint64_t last = 0, row;
	if (!ptr)
		return; /* free(NULL): no event for the figures either */
	mt_ptrmap_take(&ps->last, (uint64_t)tid + 1, &last);
	if (mt_ptrmap_take(&ps->live, ptr, &row)) {
		r->free_ts[row - 1] = ts;
		r->temporary[row - 1] = last == ptr;
	}
}

static void on_alloc(struct mt_qrows *r, struct proc_state *ps, size_t proc,
		     const struct mt_event *ev, uint32_t site)
{
	uint64_t old;
	if (!ev->ptr)
		return;
	size_t i = row_add(r);
	r->proc[i] = (uint32_t)proc;
	r->tid[i] = ev->tid;
	r->site[i] = site;
	r->size[i] = ev->size;
	/* the recorder's compact records name blocks by serial, not address:
	 * the addresses' array is made only for a file that has some */
	if (!r->addr && !(ev->ptr >> 63)) {
		r->addr = xmalloc(r->cap * sizeof *r->addr);
		for (size_t k = 0; k < i; k++)
			r->addr[k] = 1ull << 63;
	}
	if (r->addr)
		r->addr[i] = ev->ptr;
	r->ts[i] = ev->ts;
	r->free_ts[i] = MT_QDB_LIVE;
	r->temporary[i] = 0;
	r->kind[i] = MT_QDB_NO_KIND;
	/* allocated again without a free we saw: the old block ends here */
	if (mt_ptrmap_take(&ps->live, ev->ptr, &old))
		r->free_ts[old - 1] = ev->ts;
	mt_ptrmap_xput(&ps->live, ev->ptr, i + 1);
	mt_ptrmap_xput(&ps->last, (uint64_t)ev->tid + 1, ev->ptr);
}

static enum mt_gate on_event(void *ctx, struct mt_process *p, const struct mt_event *ev,
			     uint32_t site)
{
	struct load *l = ctx;
	size_t idx;
	struct proc_state *ps = state_of(l, p, &idx);
	if (ev->type == MT_REC_FREE)
		on_free(&l->q->rows, ps, ev->tid, ev->ts, ev->ptr);
	if (ev->type == MT_REC_REALLOC)
		on_free(&l->q->rows, ps, ev->tid, ev->ts, ev->old_ptr);
	if (ev->type != MT_REC_FREE)
		on_alloc(&l->q->rows, ps, idx, ev, site);
	return MT_GATE_PASS;
}

/* The leak scan's kind of every block of PS's process still live at the
 * end (its rows stay MT_QDB_NO_KIND without a scan). */
static void kinds_of_live(struct mt_qrows *r, const struct proc_state *ps)
{
	const struct mt_ptrmap *m = &ps->live;
	if (!ps->p || !ps->p->kinds.ran || !m->keys)
		return;
	for (size_t slot = 0; slot <= m->mask; slot++) {
		if (!m->keys[slot] || !m->vals[slot] || m->vals[slot] > r->n)
			continue;
		int k = mt_leak_kind_of(ps->p, m->keys[slot]);
		if (k >= 0 && k < MT_LEAK_KINDS)
			r->kind[m->vals[slot] - 1] = (uint8_t)k;
	}
}

/* ---- the tables ---- */

/* The ordinary tables, with %s the schema ("main", or the saved file's). */
static const char *const ddl[] = {
	"CREATE TABLE %s.processes(pid INTEGER, ppid INTEGER, exe TEXT, argv TEXT, backend TEXT,"
	" duration_s REAL, exit_status INTEGER, signal INTEGER, lost_events INTEGER,"
	" allocations INTEGER, frees INTEGER, allocated_bytes INTEGER, peak_bytes INTEGER,"
	" peak_allocations INTEGER, peak_s REAL, leaked_allocations INTEGER, leaked_bytes INTEGER,"
	" temporary_allocations INTEGER, unmatched_frees INTEGER, culled_allocations INTEGER,"
	" runtime_held_allocations INTEGER, runtime_held_bytes INTEGER, process INTEGER)",
	"CREATE TABLE %s.sites(id INTEGER PRIMARY KEY, pid INTEGER, site INTEGER,"
	" allocations INTEGER, allocated_bytes INTEGER, frees INTEGER,"
	" leaked_allocations INTEGER, leaked_bytes INTEGER, peak_bytes INTEGER,"
	" peak_allocations INTEGER, temporary_allocations INTEGER, culled_allocations INTEGER,"
	" min_size INTEGER, max_size INTEGER, allocator TEXT, allocator_object TEXT,"
	" runtime_held_allocations INTEGER, runtime_held_bytes INTEGER, process INTEGER)",
	"CREATE TABLE %s.frames(site_id INTEGER, depth INTEGER, function TEXT, file TEXT,"
	" line INTEGER, module TEXT, address INTEGER, inlined INTEGER,"
	" PRIMARY KEY (site_id, depth)) WITHOUT ROWID",
	"CREATE TABLE %s.memory(pid INTEGER, s REAL, rss INTEGER, rss_anon INTEGER,"
	" rss_file INTEGER, rss_shmem INTEGER, vm_size INTEGER, vm_data INTEGER, heap INTEGER,"
	" process INTEGER)",
	"CREATE TABLE %s.mmaps(pid INTEGER, s REAL, kind TEXT, by_allocator INTEGER,"
	" address INTEGER, length INTEGER, old_address INTEGER, old_length INTEGER, prot INTEGER,"
	" flags INTEGER, fd INTEGER, offset INTEGER, error INTEGER, path TEXT, mapped INTEGER,"
	" function TEXT, file TEXT, line INTEGER, stack TEXT, process INTEGER)",
};
/* The allocations table as an ordinary one (in a saved file). */
static const char allocations_ddl[] =
	"CREATE TABLE %s.allocations(id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER,"
	" site_id INTEGER, size INTEGER, address INTEGER, alloc_s REAL, free_s REAL,"
	" temporary INTEGER, lifetime_s REAL, process INTEGER, leak_kind TEXT)";

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	return -1;
}

static int make_tables(sqlite3 *db, const char *schema, int with_allocations, char *err,
		       size_t errlen)
{
	char sql[1024];
	for (size_t i = 0; i < sizeof ddl / sizeof *ddl; i++) {
		snprintf(sql, sizeof sql, ddl[i], schema);
		if (exec(db, sql, err, errlen) < 0)
			return -1;
	}
	if (!with_allocations)
		return 0;
	snprintf(sql, sizeof sql, allocations_ddl, schema);
	return exec(db, sql, err, errlen);
}

static void bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
	sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

static double secs(const struct mt_process *p, uint64_t ts)
{
	return ts > p->start_ts ? (double)(ts - p->start_ts) / 1e9 : 0.0;
}

/* argv as a JSON array of strings (SQLite's json_each reads it). */
static char *argv_json(const struct mt_process *p)
{
	size_t n = 3;
	for (int i = 0; i < p->argc; i++)
		n += strlen(p->argv[i]) * 6 + 4;
	char *s = xmalloc(n), *o = s;
	*o++ = '[';
	for (int i = 0; i < p->argc; i++) {
		if (i)
			*o++ = ',';
		*o++ = '"';
		for (const unsigned char *c = (const unsigned char *)p->argv[i]; *c; c++) {
			if (*c == '"' || *c == '\\') {
				*o++ = '\\';
				*o++ = (char)*c;
			} else if (*c < 0x20) {
				o += sprintf(o, "\\u%04x", *c);
			} else {
				*o++ = (char)*c;
			}
		}
		*o++ = '"';
	}
	*o++ = ']';
	*o = 0;
	return s;
}

static int step_done(sqlite3 *db, sqlite3_stmt *st, char *err, size_t errlen)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_DONE)
		return 0;
	snprintf(err, errlen, "%s", sqlite3_errmsg(db));
	return -1;
}

static int fill_process(struct mt_qdb *q, sqlite3_stmt *st, size_t pi, char *err, size_t errlen)
{
	const struct mt_process *p = q->rec.procs[pi];
	const struct mt_totals *t = &p->figures.t;
	char *argv = argv_json(p);
	int i = 1;
	bind_u64(st, i++, p->pid);
	bind_u64(st, i++, p->ppid);
	bind_text(st, i++, p->exe);
	bind_text(st, i++, argv);
	bind_text(st, i++, p->backend);
	sqlite3_bind_double(st, i++, mt_process_duration(p));
	if (p->exited && p->exit_status >= 0)
		bind_u64(st, i, (uint64_t)p->exit_status);
	i++;
	if (p->exited && p->exit_status < 0)
		bind_u64(st, i, mt_process_signal(p));
	i++;
	bind_u64(st, i++, mt_process_lost(p));
	bind_u64(st, i++, t->allocations);
	bind_u64(st, i++, t->frees);
	bind_u64(st, i++, t->allocated_bytes);
	bind_u64(st, i++, t->peak_bytes);
	bind_u64(st, i++, t->peak_count);
	sqlite3_bind_double(st, i++, secs(p, t->peak_ts));
	bind_u64(st, i++, t->live_count);
	bind_u64(st, i++, t->live_bytes);
	bind_u64(st, i++, t->temporary);
	bind_u64(st, i++, t->unmatched_frees);
	bind_u64(st, i++, t->culled);
	bind_u64(st, i++, t->held_count);
	bind_u64(st, i++, t->held_bytes);
	bind_u64(st, i++, pi);
	int r = step_done(q->db, st, err, errlen);
	free(argv);
	return r;
}

static int fill_sites(struct mt_qdb *q, sqlite3_stmt *site_st, sqlite3_stmt *frame_st, size_t pi,
		      char *err, size_t errlen)
{
	const struct mt_process *p = q->rec.procs[pi];
	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	struct mt_frame *fr = xmalloc(MT_SYM_MAX_FRAMES * sizeof *fr);
	int r = 0;
	for (uint32_t s = 0; s < p->figures.nsites && r == 0; s++) {
		const struct mt_site_stats *x = &p->figures.sites[s];
		uint64_t id = q->site_base[pi] + s;
		int i = 1;
		bind_u64(site_st, i++, id);
		bind_u64(site_st, i++, p->pid);
		bind_u64(site_st, i++, s);
		bind_u64(site_st, i++, x->allocations);
		bind_u64(site_st, i++, x->allocated_bytes);
		bind_u64(site_st, i++, x->frees);
		bind_u64(site_st, i++, x->live_count);
		bind_u64(site_st, i++, x->live_bytes);
		bind_u64(site_st, i++, x->peak_bytes);
		bind_u64(site_st, i++, x->peak_count);
		bind_u64(site_st, i++, x->temporary);
		bind_u64(site_st, i++, x->culled);
		bind_u64(site_st, i++, x->min_size);
		bind_u64(site_st, i++, x->max_size);
		bind_text(site_st, i++, mt_fn_names[x->fn]);
		bind_text(site_st, i++, p->site_object ? p->site_object[s] : NULL);
		bind_u64(site_st, i++, x->held_count);
		bind_u64(site_st, i++, x->held_bytes);
		bind_u64(site_st, i++, pi);
		r = step_done(q->db, site_st, err, errlen);
		int k = r ? 0 : mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		for (int d = 0; d < k && r == 0; d++) {
			bind_u64(frame_st, 1, id);
			bind_u64(frame_st, 2, (uint64_t)d);
			bind_text(frame_st, 3, fr[d].function);
			bind_text(frame_st, 4, fr[d].file);
			if (fr[d].line)
				bind_u64(frame_st, 5, (uint64_t)fr[d].line);
			bind_text(frame_st, 6, fr[d].module);
			bind_u64(frame_st, 7, fr[d].address);
			bind_u64(frame_st, 8, fr[d].inlined ? 1 : 0);
			r = step_done(q->db, frame_st, err, errlen);
		}
	}
	free(fr);
	mt_sym_free(sym);
	return r;
}

/* The process's memory samples (record --rss-interval). */
static int fill_memory(struct mt_qdb *q, sqlite3_stmt *st, size_t pi, char *err, size_t errlen)
{
	const struct mt_process *p = q->rec.procs[pi];
	int r = 0;
	for (size_t k = 0; k < p->nrss && r == 0; k++) {
		const struct mt_rss_sample *m = &p->rss[k];
		int i = 1;
		bind_u64(st, i++, p->pid);
		sqlite3_bind_double(st, i++, secs(p, m->ts));
		bind_u64(st, i++, m->m.rss);
		bind_u64(st, i++, m->m.anon);
		bind_u64(st, i++, m->m.file);
		bind_u64(st, i++, m->m.shmem);
		bind_u64(st, i++, m->m.vm_size);
		bind_u64(st, i++, m->m.vm_data);
		bind_u64(st, i++, m->heap);
		bind_u64(st, i++, pi);
		r = step_done(q->db, st, err, errlen);
	}
	return r;
}

/* The process's mapping calls, with the mapped memory after each (the
 * series of analyse/mapped.h), the call's caller and its whole stack
 * (functions, leaf first, separated by ';'). */
struct map_rows {
	struct mt_qdb *q;
	sqlite3_stmt *st;
	const struct mt_process *p;
	struct mt_symbolizer *sym;
	struct mt_frame *fr;
	size_t pi;
	int r;
	char *err;
	size_t errlen;
	uint64_t brk_at; /* the last program break seen, for mt_brk_move */
};

static void map_row(void *ctx, const struct mt_mapev *e, uint64_t bytes)
{
	struct map_rows *m = ctx;
	if (m->r || e->m.kind >= MT_MAP_KIND_COUNT)
		return;
	sqlite3_stmt *st = m->st;
	int i = 1;
	bind_u64(st, i++, m->p->pid);
	sqlite3_bind_double(st, i++, secs(m->p, e->ts));
	bind_text(st, i++, mt_map_kind_names[e->m.kind]);
	bind_u64(st, i++, e->m.by == MT_MAP_BY_ALLOCATOR);
	bind_u64(st, i++, e->m.addr);
	if (e->m.kind == MT_MAP_BRK) /* the break's move, not the raw request */
		sqlite3_bind_int64(st, i++, mt_brk_move(&e->m, &m->brk_at));
	else
		bind_u64(st, i++, e->m.len);
	bind_u64(st, i++, e->m.old_addr);
	bind_u64(st, i++, e->m.old_len);
	sqlite3_bind_int64(st, i++, e->m.prot);
	sqlite3_bind_int64(st, i++, e->m.flags);
	sqlite3_bind_int64(st, i++, e->m.fd);
	bind_u64(st, i++, e->m.offset);
	sqlite3_bind_int64(st, i++, e->m.error);
	bind_text(st, i++, e->path);
	bind_u64(st, i++, bytes);
	int k = mt_mapev_frames(m->p, m->sym, e, m->fr, MT_SYM_MAX_FRAMES);
	bind_text(st, i++, k ? m->fr[0].function : NULL);
	bind_text(st, i++, k ? m->fr[0].file : NULL);
	if (k && m->fr[0].line)
		bind_u64(st, i++, (uint64_t)m->fr[0].line);
	else
		sqlite3_bind_null(st, i++);
	char stack[8192];
	size_t o = 0;
	stack[0] = 0;
	for (int d = 0; d < k && o < sizeof stack; d++) {
		int w = snprintf(stack + o, sizeof stack - o, "%s%s", d ? ";" : "",
				 m->fr[d].function ? m->fr[d].function : "?");
		o += w > 0 ? (size_t)w : 0;
	}
	bind_text(st, i++, stack);
	bind_u64(st, i++, m->pi);
	m->r = step_done(m->q->db, st, m->err, m->errlen);
}

static int fill_mmaps(struct mt_qdb *q, sqlite3_stmt *st, size_t pi, char *err, size_t errlen)
{
	const struct mt_process *p = q->rec.procs[pi];
	if (!p->nmaps)
		return 0;
	struct map_rows m = { q, st, p, mt_process_symbolizer(p), NULL, pi, 0, err, errlen, 0 };
	m.fr = xmalloc(MT_SYM_MAX_FRAMES * sizeof *m.fr);
	mt_mapped_walk(p, map_row, &m);
	free(m.fr);
	mt_sym_free(m.sym);
	return m.r;
}

static int fill(struct mt_qdb *q, char *err, size_t errlen)
{
	sqlite3_stmt *proc_st = NULL, *site_st = NULL, *frame_st = NULL, *mem_st = NULL,
		     *map_st = NULL;
	int r = -1;
	if (exec(q->db, "BEGIN", err, errlen) < 0)
		return -1;
	if (sqlite3_prepare_v2(
		    q->db,
		    "INSERT INTO processes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		    -1, &proc_st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(q->db,
			       "INSERT INTO sites VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &site_st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(q->db, "INSERT INTO frames VALUES (?,?,?,?,?,?,?,?)", -1, &frame_st,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(q->db, "INSERT INTO memory VALUES (?,?,?,?,?,?,?,?,?,?)", -1,
			       &mem_st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(q->db,
			       "INSERT INTO mmaps VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &map_st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(q->db));
		goto out;
	}
	for (size_t i = 0; i < q->rec.nprocs; i++)
		if (fill_process(q, proc_st, i, err, errlen) < 0 ||
		    fill_sites(q, site_st, frame_st, i, err, errlen) < 0 ||
		    fill_memory(q, mem_st, i, err, errlen) < 0 ||
		    fill_mmaps(q, map_st, i, err, errlen) < 0)
			goto out;
	r = exec(q->db, "COMMIT", err, errlen);
out:
	sqlite3_finalize(proc_st);
	sqlite3_finalize(site_st);
	sqlite3_finalize(frame_st);
	sqlite3_finalize(mem_st);
	sqlite3_finalize(map_st);
	return r;
}

int mt_qdb_open(struct mt_qdb *q, const char *path, char *err, size_t errlen)
{
	memset(q, 0, sizeof *q);
	struct load l = { .q = q };
	struct mt_load_hook hook = { .event = on_event, .ctx = &l };
	int r = mt_recording_load_hooked(&q->rec, path, &hook, err, errlen);
	/* rows name their process by its index during the load; the loaded
	 * recording lists processes in start order */
	uint32_t *to = xcalloc(l.nps + 1, sizeof *to);
	for (size_t i = 0; r == 0 && i < l.nps; i++)
		for (size_t k = 0; k < q->rec.nprocs; k++)
			if (q->rec.procs[k] == l.ps[i].p)
				to[i] = (uint32_t)k;
	for (size_t i = 0; r == 0 && i < q->rows.n; i++)
		q->rows.proc[i] = to[q->rows.proc[i]];
	free(to);
	for (size_t i = 0; r == 0 && i < l.nps; i++)
		kinds_of_live(&q->rows, &l.ps[i]);
	for (size_t i = 0; i < l.nps; i++) {
		mt_ptrmap_destroy(&l.ps[i].live);
		mt_ptrmap_destroy(&l.ps[i].last);
	}
	free(l.ps);
	if (r < 0) {
		mt_qdb_close(q);
		return -1;
	}
	q->site_base = xcalloc(q->rec.nprocs + 1, sizeof *q->site_base);
	for (size_t i = 0; i < q->rec.nprocs; i++)
		q->site_base[i + 1] = q->site_base[i] + q->rec.procs[i]->figures.nsites;
	char why[400];
	if (sqlite3_open_v2(":memory:", &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "cannot make a database: %s",
			 q->db ? sqlite3_errmsg(q->db) : "out of memory");
		mt_qdb_close(q);
		return -1;
	}
	if (make_tables(q->db, "main", 0, why, sizeof why) < 0 || mt_qdb_vtab_register(q) < 0 ||
	    exec(q->db, "CREATE VIRTUAL TABLE allocations USING memtrace_allocations", why,
		 sizeof why) < 0 ||
	    fill(q, why, sizeof why) < 0) {
		if (!why[0])
			snprintf(why, sizeof why, "%s", sqlite3_errmsg(q->db));
		snprintf(err, errlen, "%s: cannot make its tables: %s", path, why);
		mt_qdb_close(q);
		return -1;
	}
	return 0;
}

void mt_qdb_close(struct mt_qdb *q)
{
	if (q->db)
		sqlite3_close(q->db);
	struct mt_qrows *r = &q->rows;
	free(r->proc);
	free(r->tid);
	free(r->site);
	free(r->size);
	free(r->addr);
	free(r->ts);
	free(r->free_ts);
	free(r->temporary);
	free(r->kind);
	free(q->site_base);
	sqlite3_free(q->image);
	mt_recording_free(&q->rec);
	memset(q, 0, sizeof *q);
}

uint64_t mt_qdb_bytes(const struct mt_qdb *q)
{
	uint64_t per_row = 3 * sizeof(uint32_t) + 3 * sizeof(uint64_t) + 2 +
			   (q->rows.addr ? sizeof(uint64_t) : 0);
	int cache = 0, hi = 0;
	if (q->db)
		sqlite3_db_status(q->db, SQLITE_DBSTATUS_CACHE_USED, &cache, &hi, 0);
	return (uint64_t)q->rows.cap * per_row + mt_recording_bytes(&q->rec) + (uint64_t)cache +
	       (uint64_t)q->image_size;
}

/* Where a save is built: a new file beside PATH, mode 0600 (it holds what
 * the recording holds: paths, arguments, addresses), made with O_EXCL and
 * O_NOFOLLOW so that nothing planted there is followed.  PATH itself must
 * be a regular file or nothing: a directory, link, FIFO or socket is
 * refused, not removed.  Returns the temporary name (to free), or NULL
 * with ERR. */
static char *save_target(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is %s: not written", path,
			 S_ISDIR(st.st_mode)  ? "a directory" :
			 S_ISLNK(st.st_mode)  ? "a symbolic link" :
			 S_ISFIFO(st.st_mode) ? "a FIFO" :
			 S_ISSOCK(st.st_mode) ? "a socket" :
						"not a regular file");
		return NULL;
	}
	size_t n = strlen(path) + 24;
	char *tmp = xmalloc(n);
	snprintf(tmp, n, "%s.tmp%d", path, (int)getpid());
	int fd = mt_create_output(tmp, O_WRONLY, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		free(tmp);
		return NULL;
	}
	close(fd);
	return tmp;
}

int mt_qdb_save(struct mt_qdb *q, const char *path, char *err, size_t errlen)
{
	char why[400] = "";
	char *tmp = save_target(path, err, errlen);
	if (!tmp)
		return -1;
	sqlite3_stmt *st = NULL;
	int r = -1;
	if (sqlite3_prepare_v2(q->db, "ATTACH ?1 AS saved", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(st, 1, tmp, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	/* one transaction, no journal: a file made from scratch */
	if (exec(q->db, "PRAGMA saved.journal_mode=OFF; PRAGMA saved.synchronous=OFF; BEGIN", why,
		 sizeof why) < 0 ||
	    make_tables(q->db, "saved", 1, why, sizeof why) < 0 ||
	    exec(q->db,
		 "INSERT INTO saved.processes SELECT * FROM main.processes;"
		 "INSERT INTO saved.sites SELECT * FROM main.sites;"
		 "INSERT INTO saved.frames SELECT * FROM main.frames;"
		 "INSERT INTO saved.memory SELECT * FROM main.memory;"
		 "INSERT INTO saved.mmaps SELECT * FROM main.mmaps;"
		 "INSERT INTO saved.allocations SELECT * FROM main.allocations;"
		 "CREATE INDEX saved.allocations_site ON allocations(site_id);"
		 "COMMIT",
		 why, sizeof why) < 0)
		goto fail;
	r = 0;
fail:
	if (r < 0) {
		if (!why[0])
			snprintf(why, sizeof why, "%s", sqlite3_errmsg(q->db));
		snprintf(err, errlen, "%s: cannot save the database: %s", path, why);
		sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
	}
	sqlite3_finalize(st);
	sqlite3_exec(q->db, "DETACH saved", NULL, NULL, NULL);
	/* whole: in place of what was there; else what was there stays */
	if (r == 0 && rename(tmp, path) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		r = -1;
	}
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}
