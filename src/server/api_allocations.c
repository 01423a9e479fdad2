/*
 * api_allocations.c - the REST API's listings: /data/<id>/allocations
 * (single allocations, sorted and paged: the replay keeps the best
 * skip + count of them in a heap, never every allocation) and
 * /data/<id>/allocation_groups (call sites with their matched and whole
 * figures).
 */
#include "api.h"
#include "base/util.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

#define ALLOC_COUNT_DEFAULT 100
#define ALLOC_WINDOW_MAX 1000000 /* skip + count: the entries a listing keeps */

/* ---- /data/<id>/allocations ---- */

static const char *const alloc_sorts[] = { "timestamp", "address", "size" };

struct item {
	uint64_t seq, ts, ptr, size, free_ts;
	uint32_t tid, free_tid, site, proc;
	int freed;
};

struct listing {
	struct req *x;
	struct item *heap; /* the best `window` so far; the worst on top */
	size_t n, cap, window;
	uint64_t seq; /* matched allocations seen */
	struct api_replay rp;
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

/* Block B ended: freed at TS by thread TID (FREED), or leaked. */
static void ended(struct listing *l, size_t proc, const struct mt_block *b, int freed, uint64_t ts,
		  uint32_t tid)
{
	struct item it = { .seq = b->seq,
			   .ts = b->ts,
			   .ptr = b->ptr,
			   .size = b->size,
			   .free_ts = freed ? ts : 0,
			   .tid = b->tid,
			   .free_tid = tid,
			   .site = b->site,
			   .proc = (uint32_t)proc,
			   .freed = freed };
	offer(l, &it);
}

static void listing_free(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr)
{
	struct listing *l = ctx;
	struct mt_block b;
	if (l->rp.want[proc] && mt_blockrecs_take(&l->rp.live[proc], ptr, &b))
		ended(l, proc, &b, 1, ts, tid);
}

static void listing_alloc(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr,
			  uint64_t size, uint32_t site)
{
	struct listing *l = ctx;
	if (!l->rp.want[proc])
		return;
	struct mt_block b;
	/* allocated again without a free in the stream: the old one ends here */
	if (mt_blockrecs_take(&l->rp.live[proc], ptr, &b))
		ended(l, proc, &b, 1, ts, tid);
	b = (struct mt_block){
		.ptr = ptr, .ts = ts, .size = size, .seq = l->seq++, .site = site, .tid = tid
	};
	mt_blockrecs_put(&l->rp.live[proc], &b);
}

static void write_item(struct req *x, const struct item *it, int first)
{
	FILE *f = x->out;
	const struct mt_process *p = x->sel->all.procs[it->proc];
	fprintf(f,
		"%s\n  {\"index\": %llu, \"pid\": %u, \"site\": %u, \"address\": \"0x%llx\", \"size\": %llu, "
		"\"timestamp_s\": %.6f, \"thread\": %u,\n   \"deallocation\": ",
		first ? "" : ",", (unsigned long long)it->seq, p->pid, it->site,
		(unsigned long long)it->ptr, (unsigned long long)it->size, api_rel_s(p, it->ts),
		it->tid);
	if (it->freed)
		fprintf(f, "{\"timestamp_s\": %.6f, \"thread\": %u, \"lifetime_s\": %.6f}",
			api_rel_s(p, it->free_ts), it->free_tid,
			it->free_ts > it->ts ? (double)(it->free_ts - it->ts) / 1e9 : 0.0);
	else
		fputs("null", f);
	fputs(",\n   \"backtrace\": ", f);
	api_json_backtrace(x, it->proc, it->site);
	fputc('}', f);
}

int api_run_allocations(struct req *x)
{
	if (x->sort < 0)
		x->sort = 0;
	if (x->desc < 0)
		x->desc = 0;
	if (x->count == UINT64_MAX)
		x->count = ALLOC_COUNT_DEFAULT;
	if (x->skip + x->count > ALLOC_WINDOW_MAX) {
		srv_error(x->r, 400,
			  "skip + count: %llu is more than %d (page with a filter or a sort)",
			  (unsigned long long)(x->skip + x->count), ALLOC_WINDOW_MAX);
		return -1;
	}
	struct listing l = { .x = x, .window = (size_t)(x->skip + x->count) };
	api_replay_init(&l.rp, x);
	struct mt_replay_ops ops = { listing_alloc, listing_free, &l };
	int rc = api_replay_run(x, &ops);
	if (rc == 0) {
		/* what is still live at the end was never freed */
		for (size_t i = 0; i < l.rp.n; i++) {
			size_t pos = 0;
			for (const struct mt_block *b;
			     (b = mt_blockrecs_next(&l.rp.live[i], &pos));)
				ended(&l, i, b, 0, 0, 0);
		}
		if (l.n)
			qsort_r(l.heap, l.n, sizeof *l.heap, item_cmp, x);
		fprintf(x->out,
			"{\"total_count\": %llu, \"skip\": %llu, \"count\": %llu, \"sort_by\": \"%s\", "
			"\"order\": \"%s\",\n \"allocations\": [",
			(unsigned long long)l.seq, (unsigned long long)x->skip,
			(unsigned long long)x->count, alloc_sorts[x->sort],
			x->desc ? "dsc" : "asc");
		for (size_t i = x->skip; i < l.n; i++)
			write_item(x, &l.heap[i], i == x->skip);
		fputs("\n]}\n", x->out);
	}
	free(l.heap);
	api_replay_free(&l.rp);
	return rc;
}

int api_param_allocations(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "sort_by"))
		return api_param_sort(x, v, alloc_sorts, 3);
	if (!strcmp(key, "order"))
		return api_param_order(x, v);
	if (!strcmp(key, "skip"))
		return api_param_u64(x, key, v, 0, ALLOC_WINDOW_MAX, &x->skip);
	if (!strcmp(key, "count"))
		return api_param_u64(x, key, v, 0, ALLOC_WINDOW_MAX, &x->count);
	return 0;
}

/* ---- /data/<id>/allocation_groups ---- */

enum { G_MIN_TS, G_MAX_TS, G_INTERVAL, G_COUNT, G_LEAKED, G_SIZE, G_FIELDS };

static const char *const group_sorts[2 * G_FIELDS] = {
	"only_matched.min_timestamp",
	"only_matched.max_timestamp",
	"only_matched.interval",
	"only_matched.allocated_count",
	"only_matched.leaked_count",
	"only_matched.size",
	"all.min_timestamp",
	"all.max_timestamp",
	"all.interval",
	"all.allocated_count",
	"all.leaked_count",
	"all.size",
};

struct group {
	uint32_t proc, site;
	double v[2 * G_FIELDS];
};

static void group_figures(const struct mt_process *p, const struct mt_process *of, uint32_t site,
			  double *v)
{
	const struct mt_site_stats *s = &of->figures.sites[site];
	const struct mt_site_span *tm = &of->figures.times[site];
	v[G_MIN_TS] = tm->first_ts ? api_rel_s(p, tm->first_ts) : 0;
	v[G_MAX_TS] = tm->last_ts ? api_rel_s(p, tm->last_ts) : 0;
	v[G_INTERVAL] = tm->last_ts > tm->first_ts ? (double)(tm->last_ts - tm->first_ts) / 1e9 : 0;
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

static void write_aggregate(FILE *f, const struct mt_process *p, const struct mt_process *of,
			    uint32_t site)
{
	const struct mt_site_stats *s = &of->figures.sites[site];
	const struct mt_site_span *tm = &of->figures.times[site];
	fputs("{\"min_timestamp\": ", f);
	if (tm->first_ts)
		fprintf(f, "%.6f, \"max_timestamp\": %.6f", api_rel_s(p, tm->first_ts),
			api_rel_s(p, tm->last_ts));
	else
		fputs("null, \"max_timestamp\": null", f);
	fprintf(f,
		", \"interval\": %.6f, \"allocated_count\": %llu, \"leaked_count\": %llu, \"size\": %llu,\n"
		"    \"leaked_size\": %llu, \"min_size\": %llu, \"max_size\": %llu, \"temporary_count\": %llu, "
		"\"peak_size\": %llu}",
		tm->last_ts > tm->first_ts ? (double)(tm->last_ts - tm->first_ts) / 1e9 : 0.0,
		(unsigned long long)s->allocations, (unsigned long long)s->live_count,
		(unsigned long long)s->allocated_bytes, (unsigned long long)s->live_bytes,
		(unsigned long long)s->min_size, (unsigned long long)s->max_size,
		(unsigned long long)s->temporary, (unsigned long long)s->peak_bytes);
}

int api_run_groups(struct req *x)
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
		if (!api_wants(x, pa))
			continue;
		for (uint32_t s = 0; s < pm->figures.nsites && s < pa->figures.nsites; s++) {
			if (!pm->figures.sites[s].allocations)
				continue;
			mt_grow(&g, &cap, n, sizeof *g);
			g[n] = (struct group){ (uint32_t)i, s, { 0 } };
			group_figures(pa, pm, s, g[n].v);
			group_figures(pa, pa, s, g[n].v + G_FIELDS);
			n++;
		}
	}
	if (n)
		qsort_r(g, n, sizeof *g, group_cmp, x);
	FILE *f = x->out;
	fprintf(f, "{\"total_count\": %zu, \"sort_by\": \"%s\", \"order\": \"%s\",\n \"groups\": [",
		n, group_sorts[x->sort], x->desc ? "dsc" : "asc");
	uint64_t shown = 0;
	for (size_t k = x->skip; k < n && shown < x->count; k++, shown++) {
		const struct mt_process *pm = m->procs[g[k].proc], *pa = all->procs[g[k].proc];
		fprintf(f,
			"%s\n  {\"pid\": %u, \"site\": %u, \"allocator\": \"%s\", \"allocator_object\": ",
			shown ? "," : "", pa->pid, g[k].site,
			mt_fn_names[pa->figures.sites[g[k].site].fn]);
		mt_json_str(f, pa->site_object ? pa->site_object[g[k].site] : NULL);
		fputs(",\n   \"backtrace\": ", f);
		api_json_backtrace(x, g[k].proc, g[k].site);
		fputs(",\n   \"only_matched\": ", f);
		write_aggregate(f, pa, pm, g[k].site);
		fputs(",\n   \"all\": ", f);
		write_aggregate(f, pa, pa, g[k].site);
		fputc('}', f);
	}
	fputs("\n]}\n", f);
	free(g);
	return 0;
}

int api_param_groups(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "sort_by"))
		return api_param_sort(x, v, group_sorts, 2 * G_FIELDS);
	if (!strcmp(key, "order"))
		return api_param_order(x, v);
	if (!strcmp(key, "skip"))
		return api_param_u64(x, key, v, 0, UINT64_MAX - 1, &x->skip);
	if (!strcmp(key, "count"))
		return api_param_u64(x, key, v, 0, UINT64_MAX - 1, &x->count);
	return 0;
}
