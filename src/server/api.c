/*
 * server_api.c - the REST API of `memtrace server`, after bytehound's
 * (seed 002): /list, and /data/<id>/ENDPOINT for each loaded recording,
 * every endpoint narrowed by bytehound's allocation filter.
 *
 * A request owns all its state.  Without a filter it reads the recording
 * loaded at start-up (and its sites symbolized then); with one, it loads the
 * file again through the filter.  Listings of single allocations and the
 * timeline replay the file: their memory is bounded by the live blocks and
 * what is asked for (skip + count allocations, N buckets), never by the
 * number of events.
 */
#include "export/export.h"
#include "base/ptrmap.h"
#include "report/report.h"
#include "server.h"
#include "base/util.h"
#include "export/web/web.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

#define ALLOC_COUNT_DEFAULT 100
#define ALLOC_WINDOW_MAX 1000000 /* skip + count: the entries a listing keeps */
#define BUCKETS_DEFAULT 200
#define BUCKETS_MAX 100000

struct req;

struct endpoint {
	const char *name;
	int heavy;      /* reads the file again or symbolizes: under st->heavy */
	const char *type;
	/* its own parameter KEY: 1 taken, 0 not its own, -1 after srv_error */
	int (*param)(struct req *x, const char *key, const char *value);
	/* writes the answer to x->out: 0, or -1 after srv_error */
	int (*run)(struct req *x);
};

struct req {
	struct srv_state *st;
	struct srv_file *file;
	size_t id;
	struct srv_reply *r;
	const struct endpoint *ep;
	struct mt_filter filt;
	long pid;                 /* -1: every process */
	struct mt_selection fsel; /* the file loaded through the filter */
	struct mt_selection *sel;
	FILE *out;
	/* the endpoints' own parameters; -1 / UINT64_MAX: the endpoint's default */
	int sort, desc;
	uint64_t skip, count;
	enum mt_view view;
	double threshold;
	enum mt_weight weight;
	int weight_set;
	uint64_t buckets;
};

/* ---- helpers ---- */

/* Time 0 of a process, as the filter's from/to see it. */
static uint64_t proc_start(const struct mt_process *p)
{
	uint64_t s = p->start_ts ? p->start_ts : p->col.t.first_ts;
	if (p->col.t.first_ts && p->col.t.first_ts < s)
		s = p->col.t.first_ts;
	return s;
}

static double rel_s(const struct mt_process *p, uint64_t ts)
{
	uint64_t s = proc_start(p);
	return ts > s ? (double)(ts - s) / 1e9 : 0.0;
}

static int wants(const struct req *x, const struct mt_process *p)
{
	return x->pid < 0 || p->pid == (uint32_t)x->pid;
}

static void json_argv(FILE *f, const struct mt_process *p)
{
	fputc('[', f);
	for (int i = 0; i < p->argc; i++) {
		if (i)
			fputs(", ", f);
		mt_json_str(f, p->argv[i]);
	}
	fputc(']', f);
}

static void json_start_time(FILE *f, const struct mt_process *p)
{
	if (p->unix_ns)
		fprintf(f, "%.3f", (double)p->unix_ns / 1e9);
	else
		fputs("null", f);
}

/* The frames of site SITE of process PROC, as symbolized at load time. */
static void json_backtrace(const struct req *x, size_t proc, uint32_t site)
{
	const struct srv_proc *sp = proc < x->file->sel.all.nprocs ? &x->file->procs[proc] : NULL;
	if (sp && site < sp->nsites)
		mt_json_frames(x->out, sp->frames + sp->site_off[site], (int)sp->site_len[site]);
	else
		fputs("[]", x->out);
}

static int sites_used(const struct mt_process *p)
{
	int n = 0;
	for (size_t s = 0; s < p->col.nsites; s++)
		n += p->col.sites[s].allocations != 0;
	return n;
}

static int param_u64(struct req *x, const char *key, const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!v || mt_parse_u64(v, out) || *out < min || *out > max) {
		srv_error(x->r, 400, "%s: '%s' is not a number from %llu to %llu", key, v ? v : "",
			  (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	return 1;
}

static int param_order(struct req *x, const char *v)
{
	if (v && (!strcmp(v, "asc") || !strcmp(v, "dsc"))) {
		x->desc = v[0] == 'd';
		return 1;
	}
	srv_error(x->r, 400, "order: '%s' is neither asc nor dsc", v ? v : "");
	return -1;
}

static int param_sort(struct req *x, const char *v, const char *const *names, int n)
{
	for (int i = 0; v && i < n; i++)
		if (!strcmp(v, names[i])) {
			x->sort = i;
			return 1;
		}
	char list[600] = "";
	for (int i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
	srv_error(x->r, 400, "sort_by: '%s' is none of %s", v ? v : "", list);
	return -1;
}

/* ---- live blocks during a replay ---- */

struct live_rec {
	uint64_t ts, size, seq;
	uint32_t tid, site, bucket, next_free;
};

struct live_tab {
	struct mt_ptrmap map; /* block -> record index + 1 */
	struct live_rec *recs;
	size_t n, cap;
	uint32_t free_head; /* index + 1 of a reusable record */
};

static void live_init(struct live_tab *t)
{
	memset(t, 0, sizeof *t);
	mt_ptrmap_xinit(&t->map, 1024);
}

static void live_put(struct live_tab *t, uint64_t ptr, const struct live_rec *r)
{
	uint32_t i;
	if (t->free_head) {
		i = t->free_head - 1;
		t->free_head = t->recs[i].next_free;
	} else {
		mt_grow(&t->recs, &t->cap, t->n, sizeof *t->recs);
		i = (uint32_t)t->n++;
	}
	t->recs[i] = *r;
	mt_ptrmap_xput(&t->map, ptr, (uint64_t)i + 1);
}

static int live_take(struct live_tab *t, uint64_t ptr, struct live_rec *out)
{
	uint64_t v;
	if (!ptr || !mt_ptrmap_take(&t->map, ptr, &v))
		return 0;
	*out = t->recs[v - 1];
	t->recs[v - 1].next_free = t->free_head;
	t->free_head = (uint32_t)v;
	return 1;
}

static void live_destroy(struct live_tab *t)
{
	mt_ptrmap_destroy(&t->map);
	free(t->recs);
}

static struct live_tab *live_tabs(size_t n)
{
	struct live_tab *t = xcalloc(n ? n : 1, sizeof *t);
	for (size_t i = 0; i < n; i++)
		live_init(&t[i]);
	return t;
}

static void live_tabs_free(struct live_tab *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		live_destroy(&t[i]);
	free(t);
}

/* ---- /list ---- */

/* The process the recording was started on: the one whose parent is not
 * in it (a child followed with --follow-forks may come first). */
static const struct mt_process *root_process(const struct mt_recording *rec)
{
	for (size_t i = 0; i < rec->nprocs; i++) {
		int parent_in = 0;
		for (size_t k = 0; k < rec->nprocs && !parent_in; k++)
			parent_in = k != i && rec->procs[k]->pid == rec->procs[i]->ppid;
		if (!parent_in)
			return rec->procs[i];
	}
	return rec->nprocs ? rec->procs[0] : NULL;
}

static void list_file(FILE *f, size_t id, const struct srv_file *file)
{
	const struct mt_recording *rec = &file->sel.all;
	const struct mt_process *first = root_process(rec);
	uint64_t allocs = 0, bytes = 0, frees = 0, lcount = 0, lbytes = 0, start = UINT64_MAX, end = 0;
	uint32_t depth = 0;
	int sites = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		const struct mt_totals *t = &p->col.t;
		allocs += t->allocations, bytes += t->allocated_bytes, frees += t->frees;
		lcount += t->live_count, lbytes += t->live_bytes;
		sites += sites_used(p);
		if (proc_start(p) < start)
			start = proc_start(p);
		if (p->end_ts > end)
			end = p->end_ts;
		if (file->procs[i].max_depth > depth)
			depth = file->procs[i].max_depth;
	}
	fprintf(f, "  {\"id\": %zu, \"file\": ", id);
	mt_json_str(f, file->path);
	fprintf(f, ", \"file_size\": %llu, \"truncated\": %s,\n   \"pid\": ", (unsigned long long)rec->file_size,
		rec->truncated ? "true" : "false");
	if (first)
		fprintf(f, "%u", first->pid);
	else
		fputs("null", f);
	fputs(", \"pids\": [", f);
	for (size_t i = 0; i < rec->nprocs; i++)
		fprintf(f, "%s%u", i ? ", " : "", rec->procs[i]->pid);
	fputs("], \"exe\": ", f);
	mt_json_str(f, first ? first->exe : NULL);
	fputs(", \"argv\": ", f);
	if (first)
		json_argv(f, first);
	else
		fputs("[]", f);
	fputs(", \"start_time\": ", f);
	if (first)
		json_start_time(f, first);
	else
		fputs("null", f);
	fprintf(f,
		",\n   \"duration_s\": %.6f, \"allocations\": %llu, \"allocated_bytes\": %llu, \"frees\": %llu,\n"
		"   \"leaked_allocations\": %llu, \"leaked_bytes\": %llu, \"sites\": %d, "
		"\"maximum_backtrace_depth\": %u,\n   \"processes\": [",
		end > start && start != UINT64_MAX ? (double)(end - start) / 1e9 : 0.0, (unsigned long long)allocs,
		(unsigned long long)bytes, (unsigned long long)frees, (unsigned long long)lcount,
		(unsigned long long)lbytes, sites, depth);
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		const struct mt_totals *t = &p->col.t;
		fprintf(f, "%s\n     {\"pid\": %u, \"ppid\": %u, \"exe\": ", i ? "," : "", p->pid, p->ppid);
		mt_json_str(f, p->exe);
		fputs(", \"argv\": ", f);
		json_argv(f, p);
		fputs(", \"backend\": ", f);
		mt_json_str(f, p->backend);
		fputs(", \"start_time\": ", f);
		json_start_time(f, p);
		fprintf(f,
			", \"duration_s\": %.6f,\n      \"allocations\": %llu, \"allocated_bytes\": %llu, "
			"\"peak_bytes\": %llu, \"leaked_bytes\": %llu, \"sites\": %d}",
			mt_process_duration(p), (unsigned long long)t->allocations,
			(unsigned long long)t->allocated_bytes, (unsigned long long)t->peak_bytes,
			(unsigned long long)t->live_bytes, sites_used(p));
	}
	fputs("]}", f);
}

static void api_list(struct srv_state *st, const struct srv_query *q, struct srv_reply *r)
{
	if (q->n) {
		srv_error(r, 400, "unknown parameter '%s': /list takes none", q->v[0].key);
		return;
	}
	FILE *f = open_memstream(&r->body, &r->len);
	if (!f) {
		srv_error(r, 500, "out of memory");
		return;
	}
	fputs("[\n", f);
	for (size_t i = 0; i < st->nfiles; i++) {
		list_file(f, i, &st->files[i]);
		fputs(i + 1 < st->nfiles ? ",\n" : "\n", f);
	}
	fputs("]\n", f);
	fclose(f);
	r->status = 200;
	r->type = "application/json";
}

/* ---- /data/<id>/summary ---- */

static int run_summary(struct req *x)
{
	FILE *f = x->out;
	const struct mt_recording *rec = &x->sel->matched;
	fprintf(f, "{\"id\": %zu, \"file\": ", x->id);
	mt_json_str(f, x->file->path);
	fprintf(f, ", \"filtered\": %s, \"truncated\": %s,\n \"processes\": [", x->sel->filtered ? "true" : "false",
		rec->truncated ? "true" : "false");
	int shown = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (!wants(x, p))
			continue;
		fprintf(f, "%s\n  {\"pid\": %u, \"ppid\": %u, \"exe\": ", shown++ ? "," : "", p->pid, p->ppid);
		mt_json_str(f, p->exe);
		fputs(", \"argv\": ", f);
		json_argv(f, p);
		fputs(", \"backend\": ", f);
		mt_json_str(f, p->backend);
		fputs(",\n   \"start_time\": ", f);
		json_start_time(f, p);
		fprintf(f, ", \"duration_s\": %.6f, ", mt_process_duration(p));
		if (p->exited)
			fprintf(f, "\"exit_status\": %lld, ", (long long)p->exit_status);
		/* the keys and figures of `memtrace report --json` */
		fprintf(f, "\"sites\": %d,\n   \"totals\": ", sites_used(p));
		mt_json_totals(f, p);
		fputs(",\n   ", f);
		mt_json_lost(f, p);
		fputs(",\n   \"markers\": ", f);
		mt_json_markers(f, p);
		fputc('}', f);
	}
	fputs("\n]}\n", f);
	return 0;
}

/* ---- /data/<id>/allocations ---- */

static const char *const alloc_sorts[] = {"timestamp", "address", "size"};

struct item {
	uint64_t seq, ts, ptr, size, free_ts;
	uint32_t tid, free_tid, site, proc;
	int freed;
};

struct listing {
	struct req *x;
	struct item *heap; /* the best `window` so far; the worst on top */
	size_t n, cap, window;
	uint64_t seq;      /* matched allocations seen */
	struct live_tab *live;
	const uint8_t *want;
};

static uint64_t item_key(const struct req *x, const struct item *it)
{
	return x->sort == 1 ? it->ptr : x->sort == 2 ? it->size : it->ts;
}

/* Does A come before B in the order asked for?  Ties go by stream order,
 * so that dsc is exactly asc reversed (timestamps have ties). */
static int before(const struct req *x, const struct item *a, const struct item *b)
{
	uint64_t ka = item_key(x, a), kb = item_key(x, b);
	if (ka != kb)
		return x->desc ? ka > kb : ka < kb;
	return x->desc ? a->seq > b->seq : a->seq < b->seq;
}

static int item_cmp(const void *a, const void *b, void *x)
{
	return before(x, a, b) ? -1 : before(x, b, a) ? 1 : 0;
}

static void heap_swap(struct item *h, size_t i, size_t j)
{
	struct item t = h[i];
	h[i] = h[j];
	h[j] = t;
}

/* Keeps IT if it is among the first `window` allocations of the order. */
static void offer(struct listing *l, const struct item *it)
{
	struct item *h = l->heap;
	if (!l->window)
		return;
	if (l->n < l->window) {
		mt_grow(&l->heap, &l->cap, l->n, sizeof *l->heap);
		h = l->heap;
		size_t i = l->n++;
		h[i] = *it;
		while (i && before(l->x, &h[(i - 1) / 2], &h[i])) {
			heap_swap(h, i, (i - 1) / 2);
			i = (i - 1) / 2;
		}
		return;
	}
	if (!before(l->x, it, &h[0]))
		return;
	h[0] = *it;
	for (size_t i = 0;;) {
		size_t c = 2 * i + 1, w = i;
		if (c < l->n && before(l->x, &h[w], &h[c]))
			w = c;
		if (c + 1 < l->n && before(l->x, &h[w], &h[c + 1]))
			w = c + 1;
		if (w == i)
			break;
		heap_swap(h, i, w);
		i = w;
	}
}

static void ended(struct listing *l, size_t proc, uint64_t ptr, const struct live_rec *r, int freed, uint64_t ts,
		  uint32_t tid)
{
	struct item it = {r->seq, r->ts, ptr, r->size, freed ? ts : 0, r->tid, tid, r->site, (uint32_t)proc, freed};
	offer(l, &it);
}

static void listing_free(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr)
{
	struct listing *l = ctx;
	struct live_rec r;
	if (l->want[proc] && live_take(&l->live[proc], ptr, &r))
		ended(l, proc, ptr, &r, 1, ts, tid);
}

static void listing_alloc(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr, uint64_t size,
			  uint32_t site)
{
	struct listing *l = ctx;
	if (!l->want[proc])
		return;
	struct live_rec r;
	/* allocated again without a free in the stream: the old one ends here */
	if (live_take(&l->live[proc], ptr, &r))
		ended(l, proc, ptr, &r, 1, ts, tid);
	r = (struct live_rec){ts, size, l->seq++, tid, site, 0, 0};
	live_put(&l->live[proc], ptr, &r);
}

static void write_item(struct req *x, const struct item *it, int first)
{
	FILE *f = x->out;
	const struct mt_process *p = x->sel->all.procs[it->proc];
	fprintf(f, "%s\n  {\"index\": %llu, \"pid\": %u, \"site\": %u, \"address\": \"0x%llx\", \"size\": %llu, "
		"\"timestamp_s\": %.6f, \"thread\": %u,\n   \"deallocation\": ",
		first ? "" : ",", (unsigned long long)it->seq, p->pid, it->site, (unsigned long long)it->ptr,
		(unsigned long long)it->size, rel_s(p, it->ts), it->tid);
	if (it->freed)
		fprintf(f, "{\"timestamp_s\": %.6f, \"thread\": %u, \"lifetime_s\": %.6f}", rel_s(p, it->free_ts),
			it->free_tid, it->free_ts > it->ts ? (double)(it->free_ts - it->ts) / 1e9 : 0.0);
	else
		fputs("null", f);
	fputs(",\n   \"backtrace\": ", f);
	json_backtrace(x, it->proc, it->site);
	fputc('}', f);
}

static int run_allocations(struct req *x)
{
	if (x->sort < 0)
		x->sort = 0;
	if (x->desc < 0)
		x->desc = 0;
	if (x->count == UINT64_MAX)
		x->count = ALLOC_COUNT_DEFAULT;
	if (x->skip + x->count > ALLOC_WINDOW_MAX) {
		srv_error(x->r, 400, "skip + count: %llu is more than %d (page with a filter or a sort)",
			  (unsigned long long)(x->skip + x->count), ALLOC_WINDOW_MAX);
		return -1;
	}
	size_t np = x->sel->all.nprocs;
	uint8_t *want = xcalloc(np ? np : 1, 1);
	for (size_t i = 0; i < np; i++)
		want[i] = (uint8_t)wants(x, x->sel->all.procs[i]);
	struct listing l = {x, NULL, 0, 0, (size_t)(x->skip + x->count), 0, live_tabs(np), want};
	struct mt_replay_ops ops = {listing_alloc, listing_free, &l};
	char err[512];
	int rc = mt_select_replay(x->sel, &ops, err, sizeof err);
	if (rc == 0) {
		/* what is still live at the end was never freed */
		for (size_t i = 0; i < np; i++) {
			struct mt_ptrmap *m = &l.live[i].map;
			for (size_t k = 0; m->keys && k <= m->mask; k++)
				if (m->keys[k])
					ended(&l, i, m->keys[k], &l.live[i].recs[m->vals[k] - 1], 0, 0, 0);
		}
		if (l.n)
			qsort_r(l.heap, l.n, sizeof *l.heap, item_cmp, x);
		fprintf(x->out, "{\"total_count\": %llu, \"skip\": %llu, \"count\": %llu, \"sort_by\": \"%s\", "
			"\"order\": \"%s\",\n \"allocations\": [",
			(unsigned long long)l.seq, (unsigned long long)x->skip, (unsigned long long)x->count,
			alloc_sorts[x->sort], x->desc ? "dsc" : "asc");
		for (size_t i = x->skip; i < l.n; i++)
			write_item(x, &l.heap[i], i == x->skip);
		fputs("\n]}\n", x->out);
	} else {
		srv_error(x->r, 500, "%s", err);
	}
	free(l.heap);
	free(want);
	live_tabs_free(l.live, np);
	return rc;
}

static int param_allocations(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "sort_by"))
		return param_sort(x, v, alloc_sorts, 3);
	if (!strcmp(key, "order"))
		return param_order(x, v);
	if (!strcmp(key, "skip"))
		return param_u64(x, key, v, 0, ALLOC_WINDOW_MAX, &x->skip);
	if (!strcmp(key, "count"))
		return param_u64(x, key, v, 0, ALLOC_WINDOW_MAX, &x->count);
	return 0;
}

/* ---- /data/<id>/allocation_groups ---- */

enum { G_MIN_TS, G_MAX_TS, G_INTERVAL, G_COUNT, G_LEAKED, G_SIZE, G_FIELDS };

static const char *const group_sorts[2 * G_FIELDS] = {
	"only_matched.min_timestamp", "only_matched.max_timestamp", "only_matched.interval",
	"only_matched.allocated_count", "only_matched.leaked_count", "only_matched.size",
	"all.min_timestamp", "all.max_timestamp", "all.interval",
	"all.allocated_count", "all.leaked_count", "all.size",
};

struct group {
	uint32_t proc, site;
	double v[2 * G_FIELDS];
};

static void group_figures(const struct mt_process *p, const struct mt_site_stats *s, double *v)
{
	v[G_MIN_TS] = s->first_ts ? rel_s(p, s->first_ts) : 0;
	v[G_MAX_TS] = s->last_ts ? rel_s(p, s->last_ts) : 0;
	v[G_INTERVAL] = s->last_ts > s->first_ts ? (double)(s->last_ts - s->first_ts) / 1e9 : 0;
	v[G_COUNT] = (double)s->allocations;
	v[G_LEAKED] = (double)s->live_count;
	v[G_SIZE] = (double)s->allocated_bytes;
}

static int group_cmp(const void *a, const void *b, void *ctx)
{
	const struct req *x = ctx;
	const struct group *ga = a, *gb = b;
	double va = ga->v[x->sort], vb = gb->v[x->sort];
	int c;
	if (va != vb)
		c = va < vb ? -1 : 1;
	else if (ga->proc != gb->proc)
		c = ga->proc < gb->proc ? -1 : 1;
	else
		c = ga->site < gb->site ? -1 : ga->site > gb->site;
	return x->desc ? -c : c;
}

static void write_aggregate(FILE *f, const struct mt_process *p, const struct mt_site_stats *s)
{
	fputs("{\"min_timestamp\": ", f);
	if (s->first_ts)
		fprintf(f, "%.6f, \"max_timestamp\": %.6f", rel_s(p, s->first_ts), rel_s(p, s->last_ts));
	else
		fputs("null, \"max_timestamp\": null", f);
	fprintf(f,
		", \"interval\": %.6f, \"allocated_count\": %llu, \"leaked_count\": %llu, \"size\": %llu,\n"
		"    \"leaked_size\": %llu, \"min_size\": %llu, \"max_size\": %llu, \"temporary_count\": %llu, "
		"\"peak_size\": %llu}",
		s->last_ts > s->first_ts ? (double)(s->last_ts - s->first_ts) / 1e9 : 0.0,
		(unsigned long long)s->allocations, (unsigned long long)s->live_count,
		(unsigned long long)s->allocated_bytes, (unsigned long long)s->live_bytes,
		(unsigned long long)s->min_size, (unsigned long long)s->max_size, (unsigned long long)s->temporary,
		(unsigned long long)s->peak_bytes);
}

static int run_groups(struct req *x)
{
	if (x->sort < 0)
		x->sort = G_SIZE;
	if (x->desc < 0)
		x->desc = 1;
	const struct mt_recording *m = &x->sel->matched, *all = &x->sel->all;
	struct group *g = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < m->nprocs && i < all->nprocs; i++) {
		const struct mt_process *pm = m->procs[i], *pa = all->procs[i];
		if (!wants(x, pa))
			continue;
		for (uint32_t s = 0; s < pm->col.nsites && s < pa->col.nsites; s++) {
			if (!pm->col.sites[s].allocations)
				continue;
			mt_grow(&g, &cap, n, sizeof *g);
			g[n] = (struct group){(uint32_t)i, s, {0}};
			group_figures(pa, &pm->col.sites[s], g[n].v);
			group_figures(pa, &pa->col.sites[s], g[n].v + G_FIELDS);
			n++;
		}
	}
	if (n)
		qsort_r(g, n, sizeof *g, group_cmp, x);
	FILE *f = x->out;
	fprintf(f, "{\"total_count\": %zu, \"sort_by\": \"%s\", \"order\": \"%s\",\n \"groups\": [", n,
		group_sorts[x->sort], x->desc ? "dsc" : "asc");
	uint64_t shown = 0;
	for (size_t k = x->skip; k < n && shown < x->count; k++, shown++) {
		const struct mt_process *pm = m->procs[g[k].proc], *pa = all->procs[g[k].proc];
		fprintf(f, "%s\n  {\"pid\": %u, \"site\": %u, \"allocator\": \"%s\", \"allocator_object\": ",
			shown ? "," : "", pa->pid, g[k].site, mt_fn_names[pa->col.sites[g[k].site].fn]);
		mt_json_str(f, pa->site_object ? pa->site_object[g[k].site] : NULL);
		fputs(",\n   \"backtrace\": ", f);
		json_backtrace(x, g[k].proc, g[k].site);
		fputs(",\n   \"only_matched\": ", f);
		write_aggregate(f, pa, &pm->col.sites[g[k].site]);
		fputs(",\n   \"all\": ", f);
		write_aggregate(f, pa, &pa->col.sites[g[k].site]);
		fputc('}', f);
	}
	fputs("\n]}\n", f);
	free(g);
	return 0;
}

static int param_groups(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "sort_by"))
		return param_sort(x, v, group_sorts, 2 * G_FIELDS);
	if (!strcmp(key, "order"))
		return param_order(x, v);
	if (!strcmp(key, "skip"))
		return param_u64(x, key, v, 0, UINT64_MAX - 1, &x->skip);
	if (!strcmp(key, "count"))
		return param_u64(x, key, v, 0, UINT64_MAX - 1, &x->count);
	return 0;
}

/* ---- /data/<id>/allocation_ascii_tree ---- */

static int run_tree(struct req *x)
{
	const struct mt_recording *rec = &x->sel->matched;
	int several = 0;
	for (size_t i = 0; i < rec->nprocs; i++)
		several += wants(x, rec->procs[i]);
	for (size_t i = 0; i < rec->nprocs && i < x->file->sel.all.nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (!wants(x, p))
			continue;
		if (several > 1)
			fprintf(x->out, "process %u: %s\n", p->pid, p->exe ? p->exe : "?");
		size_t n;
		uint32_t *sites = mt_rank_sites(p, x->view, 1, &n);
		mt_print_tree(x->out, p, x->file->procs[i].sym, sites, n, x->view, x->threshold);
		free(sites);
	}
	return 0;
}

static int param_tree(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "view")) {
		for (int i = 0; i <= MT_VIEW_FREQUENCY; i++)
			if (v && !strcmp(v, mt_view_names[i])) {
				x->view = (enum mt_view)i;
				return 1;
			}
		srv_error(x->r, 400, "view: '%s' is none of summary, leaks, peak, temporary, frequency", v ? v : "");
		return -1;
	}
	if (!strcmp(key, "threshold")) {
		if (!v || mt_parse_double(v, &x->threshold) || x->threshold < 0 || x->threshold > 100) {
			srv_error(x->r, 400, "threshold: '%s' is not a percentage from 0 to 100", v ? v : "");
			return -1;
		}
		return 1;
	}
	return 0;
}

/* ---- /data/<id>/timeline ---- */

struct tl_proc {
	uint64_t start, span, live;
	size_t cur; /* the bucket of the latest event */
	uint64_t *heap, *max, *allocs, *frees, *leaked;
};

struct timeline {
	struct tl_proc *p;
	struct live_tab *live;
	const uint8_t *want;
	size_t nb;
};

static size_t bucket_of(struct timeline *t, struct tl_proc *p, uint64_t ts)
{
	uint64_t d = ts > p->start ? ts - p->start : 0;
	size_t b = (size_t)((double)d / (double)p->span * (double)t->nb);
	if (b >= t->nb)
		b = t->nb - 1;
	return b;
}

/* Moves P on to bucket B: the buckets left behind end with what is live. */
static void tl_advance(struct tl_proc *p, size_t b)
{
	for (; p->cur < b; p->cur++) {
		p->heap[p->cur] = p->live;
		p->max[p->cur + 1] = p->live;
	}
}

static void tl_free(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr)
{
	(void)tid;
	struct timeline *t = ctx;
	struct tl_proc *p = &t->p[proc];
	struct live_rec r;
	if (!t->want[proc] || !live_take(&t->live[proc], ptr, &r))
		return;
	size_t b = bucket_of(t, p, ts);
	if (b > p->cur)
		tl_advance(p, b);
	p->live -= r.size;
	p->frees[p->cur]++;
}

static void tl_alloc(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr, uint64_t size,
		     uint32_t site)
{
	struct timeline *t = ctx;
	if (!t->want[proc])
		return;
	tl_free(ctx, proc, ts, tid, ptr); /* allocated again without a free we saw */
	struct tl_proc *p = &t->p[proc];
	size_t b = bucket_of(t, p, ts);
	if (b > p->cur)
		tl_advance(p, b);
	p->live += size;
	if (p->live > p->max[p->cur])
		p->max[p->cur] = p->live;
	p->allocs[p->cur]++;
	struct live_rec r = {ts, size, 0, tid, site, (uint32_t)p->cur, 0};
	live_put(&t->live[proc], ptr, &r);
}

static void write_series(FILE *f, const char *name, const uint64_t *v, size_t n)
{
	fprintf(f, ",\n   \"%s\": [", name);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	fputc(']', f);
}

static void tl_finish(struct timeline *t, size_t proc, const struct mt_process *pa, FILE *f, int first)
{
	struct tl_proc *p = &t->p[proc];
	size_t nb = t->nb;
	tl_advance(p, nb - 1);
	p->heap[nb - 1] = p->live;
	/* leaked: what is live at the end, by the bucket it was allocated in */
	struct mt_ptrmap *m = &t->live[proc].map;
	for (size_t k = 0; m->keys && k <= m->mask; k++)
		if (m->keys[k]) {
			const struct live_rec *r = &t->live[proc].recs[m->vals[k] - 1];
			p->leaked[r->bucket] += r->size;
		}
	for (size_t i = 1; i < nb; i++)
		p->leaked[i] += p->leaked[i - 1];
	fprintf(f, "%s\n  {\"pid\": %u, \"duration_s\": %.6f,\n   \"time_s\": [", first ? "" : ",", pa->pid,
		(double)p->span / 1e9);
	for (size_t i = 0; i < nb; i++)
		fprintf(f, "%s%.6f", i ? ", " : "", (double)p->span * (double)(i + 1) / (double)nb / 1e9);
	fputc(']', f);
	write_series(f, "heap_bytes", p->heap, nb);
	write_series(f, "max_heap_bytes", p->max, nb);
	write_series(f, "allocations", p->allocs, nb);
	write_series(f, "frees", p->frees, nb);
	write_series(f, "leaked_bytes", p->leaked, nb);
	fputc('}', f);
}

static int run_timeline(struct req *x)
{
	if (x->buckets == UINT64_MAX)
		x->buckets = BUCKETS_DEFAULT;
	size_t np = x->sel->all.nprocs, nb = (size_t)x->buckets;
	struct timeline t = {xcalloc(np ? np : 1, sizeof *t.p), live_tabs(np), NULL, nb};
	uint8_t *want = xcalloc(np ? np : 1, 1);
	t.want = want;
	for (size_t i = 0; i < np; i++) {
		const struct mt_process *pa = x->sel->all.procs[i];
		struct tl_proc *p = &t.p[i];
		want[i] = (uint8_t)wants(x, pa);
		p->start = proc_start(pa);
		p->span = pa->end_ts > p->start ? pa->end_ts - p->start : 1;
		uint64_t *mem = xcalloc(5 * nb, sizeof *mem);
		p->heap = mem, p->max = mem + nb, p->allocs = mem + 2 * nb, p->frees = mem + 3 * nb;
		p->leaked = mem + 4 * nb;
	}
	struct mt_replay_ops ops = {tl_alloc, tl_free, &t};
	char err[512];
	int rc = mt_select_replay(x->sel, &ops, err, sizeof err);
	if (rc == 0) {
		fprintf(x->out, "{\"buckets\": %zu, \"processes\": [", nb);
		int first = 1;
		for (size_t i = 0; i < np; i++)
			if (want[i]) {
				tl_finish(&t, i, x->sel->all.procs[i], x->out, first);
				first = 0;
			}
		fputs("\n]}\n", x->out);
	} else {
		srv_error(x->r, 500, "%s", err);
	}
	for (size_t i = 0; i < np; i++)
		free(t.p[i].heap);
	free(t.p);
	free(want);
	live_tabs_free(t.live, np);
	return rc;
}

static int param_timeline(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "buckets"))
		return param_u64(x, key, v, 1, BUCKETS_MAX, &x->buckets);
	return 0;
}

/* ---- /data/<id>/mmaps, /data/<id>/mallopts ---- */

static int run_mmaps(struct req *x)
{
	fputs("{\"mmaps\": [], \"note\": \"memtrace recordings hold no mmap calls\"}\n", x->out);
	return 0;
}

static int run_mallopts(struct req *x)
{
	fputs("{\"mallopts\": [], \"note\": \"memtrace recordings hold no mallopt calls\"}\n", x->out);
	return 0;
}

/* ---- /data/<id>/export/... ---- */

static int run_export(struct req *x, int (*fn)(struct mt_export_ctx *, char *, size_t))
{
	struct mt_export_ctx e = {.sel = x->sel, .pid = x->pid, .weight = x->weight,
				  .weight_set = x->weight_set, .out = x->out};
	char err[512] = "";
	if (fn(&e, err, sizeof err) < 0) {
		srv_error(x->r, 500, "%s", err[0] ? err : "the export failed");
		return -1;
	}
	return 0;
}

static int run_folded(struct req *x)
{
	return run_export(x, mt_export_folded);
}

static int run_svg(struct req *x)
{
	return run_export(x, mt_export_svg);
}

static int run_heaptrack(struct req *x)
{
	return run_export(x, mt_export_heaptrack);
}

/* The other formats of `memtrace export`, named by their endpoint. */
static int run_format(struct req *x)
{
	const char *fmt = strchr(x->ep->name, '/') + 1;
	for (const struct mt_exporter *e = mt_exporters; e->name; e++)
		if (!strcmp(e->name, fmt))
			return run_export(x, e->run);
	srv_error(x->r, 404, "no format %s", fmt);
	return -1;
}

/* The data of the GUI's page (report.js): the html export's, filtered. */
static int run_report(struct req *x)
{
	return run_export(x, mt_web_report_data);
}

static int param_weight(struct req *x, const char *key, const char *v)
{
	if (strcmp(key, "weight"))
		return 0;
	for (int w = 0; w <= MT_W_TEMPORARY; w++)
		if (v && !strcmp(v, mt_weight_names[w])) {
			x->weight = (enum mt_weight)w;
			x->weight_set = 1;
			return 1;
		}
	srv_error(x->r, 400, "weight: '%s' is none of bytes, allocations, leaked, peak, temporary", v ? v : "");
	return -1;
}

/* ---- routing ---- */

static const struct endpoint endpoints[] = {
	{"summary", 0, "application/json", NULL, run_summary},
	{"allocations", 1, "application/json", param_allocations, run_allocations},
	{"allocation_groups", 0, "application/json", param_groups, run_groups},
	{"allocation_ascii_tree", 1, "text/plain; charset=utf-8", param_tree, run_tree},
	{"timeline", 1, "application/json", param_timeline, run_timeline},
	{"mmaps", 0, "application/json", NULL, run_mmaps},
	{"mallopts", 0, "application/json", NULL, run_mallopts},
	{"export/flamegraph.pl", 1, "text/plain; charset=utf-8", param_weight, run_folded},
	{"export/flamegraph", 1, "image/svg+xml", param_weight, run_svg},
	{"export/heaptrack", 1, "application/octet-stream", NULL, run_heaptrack},
	{"export/pprof", 1, "application/octet-stream", NULL, run_format},
	{"export/massif", 1, "text/plain; charset=utf-8", NULL, run_format},
	{"export/speedscope", 1, "application/json", param_weight, run_format},
	{"export/gprof2dot", 1, "application/json", param_weight, run_format},
	{"export/json", 1, "application/json", NULL, run_format},
	{"export/html", 1, "text/html; charset=utf-8", param_weight, run_format},
	{"report", 1, "application/json", param_weight, run_report},
	{NULL, 0, NULL, NULL, NULL},
};

/* The recording named ID: its index, or `last`. */
static struct srv_file *find_file(struct srv_state *st, const char *id, size_t *index)
{
	size_t i;
	if (!strcmp(id, "last")) {
		i = st->nfiles - 1;
	} else {
		if (!*id || strlen(id) > 9 || strspn(id, "0123456789") != strlen(id))
			return NULL;
		i = (size_t)strtoul(id, NULL, 10);
	}
	if (i >= st->nfiles)
		return NULL;
	*index = i;
	return &st->files[i];
}

/* A download name given as the last path segment: plain characters only. */
static int good_filename(const char *s)
{
	return *s && *s != '.' && strlen(s) < 128 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(s);
}

static int parse_params(struct req *x, const struct srv_query *q)
{
	char err[400];
	for (size_t i = 0; i < q->n; i++) {
		const char *k = q->v[i].key, *v = q->v[i].value;
		int r = 0;
		if (!strcmp(k, "pid")) {
			uint64_t pid;
			if (param_u64(x, k, v, 0, 0x7fffffff, &pid) < 0)
				return -1;
			x->pid = (long)pid;
			continue;
		}
		if (x->ep->param && (r = x->ep->param(x, k, v)) != 0) {
			if (r < 0)
				return -1;
			continue;
		}
		r = mt_filter_set(&x->filt, k, v, err, sizeof err);
		if (r < 0) {
			srv_error(x->r, 400, "%s", err);
			return -1;
		}
		if (r > 0) {
			srv_error(x->r, 400, "unknown parameter '%s' of /data/<id>/%s", k, x->ep->name);
			return -1;
		}
	}
	return 0;
}

static int has_pid(const struct mt_recording *rec, long pid)
{
	for (size_t i = 0; i < rec->nprocs; i++)
		if (rec->procs[i]->pid == (uint32_t)pid)
			return 1;
	return pid < 0;
}

/* Runs X's endpoint on its selection; the answer goes to X->r. */
static void answer(struct req *x)
{
	struct srv_reply *r = x->r;
	int locked = x->ep->heavy || x->filt.active;
	char err[512];
	if (locked)
		pthread_mutex_lock(&x->st->heavy);
	x->sel = &x->file->sel;
	if (x->filt.active) {
		if (mt_select_load(&x->fsel, x->file->path, &x->filt, err, sizeof err) < 0) {
			if (locked)
				pthread_mutex_unlock(&x->st->heavy);
			srv_error(r, 500, "%s", err);
			return;
		}
		x->sel = &x->fsel;
	}
	char *body = NULL;
	size_t len = 0;
	int rc = -1;
	if ((x->out = open_memstream(&body, &len))) {
		rc = x->ep->run(x);
		if (fclose(x->out) != 0 && rc == 0) {
			srv_error(r, 500, "out of memory");
			rc = -1;
		}
	} else {
		srv_error(r, 500, "out of memory");
	}
	if (x->filt.active)
		mt_select_free(&x->fsel);
	if (locked)
		pthread_mutex_unlock(&x->st->heavy);
	if (rc == 0) {
		r->status = 200;
		r->type = x->ep->type;
		r->body = body;
		r->len = len;
	} else {
		free(body);
	}
}

static void api_data(struct srv_state *st, char *const *seg, int nseg, const struct srv_query *q,
		     struct srv_reply *r)
{
	struct req x = {.st = st, .r = r, .pid = -1, .sort = -1, .desc = -1, .count = UINT64_MAX,
			.view = MT_VIEW_SUMMARY, .threshold = 0.5, .weight = MT_W_BYTES, .buckets = UINT64_MAX};
	if (nseg < 3) {
		srv_error(r, 404, "no such path: /data/<id>/<endpoint>");
		return;
	}
	if (!(x.file = find_file(st, seg[1], &x.id))) {
		srv_error(r, 404, "no recording '%s': ids are 0 to %zu, or last", seg[1], st->nfiles - 1);
		return;
	}
	char name[64];
	int export = !strcmp(seg[2], "export") && nseg >= 4;
	snprintf(name, sizeof name, "%s%s%s", seg[2], export ? "/" : "", export ? seg[3] : "");
	for (const struct endpoint *e = endpoints; e->name && !x.ep; e++)
		if (!strcmp(e->name, name))
			x.ep = e;
	/* an export may end in a download name, as bytehound's do */
	if (!x.ep || nseg > (export ? 5 : 3) || (nseg == 5 && !good_filename(seg[4]))) {
		srv_error(r, 404, "no such endpoint");
		return;
	}
	if (nseg == 5)
		snprintf(r->filename, sizeof r->filename, "%s", seg[4]);
	else if (export && !strcmp(seg[3], "heaptrack"))
		snprintf(r->filename, sizeof r->filename, "heaptrack.memtrace.%zu", x.id);
	mt_filter_init(&x.filt);
	if (parse_params(&x, q) == 0) {
		if (!has_pid(&x.file->sel.all, x.pid))
			srv_error(r, 404, "recording %zu has no process %ld", x.id, x.pid);
		else
			answer(&x);
	}
	mt_filter_free(&x.filt);
}

void srv_api(struct srv_state *st, char *const *seg, int nseg, const struct srv_query *q, struct srv_reply *r)
{
	if (!strcmp(seg[0], "list") && nseg == 1)
		api_list(st, q, r);
	else if (!strcmp(seg[0], "data"))
		api_data(st, seg, nseg, q, r);
	else
		srv_error(r, 404, "no such path");
}
