/*
 * api_export.c - the REST API's endpoints that draw or export a recording:
 * /data/<id>/allocation_ascii_tree (report's tree), /data/<id>/timeline
 * (memory over time in N buckets, from one replay), the formats of
 * `memtrace export` under /data/<id>/export/, and /data/<id>/report, the
 * data of the GUI's page.
 */
#include "api.h"
#include "report/report.h"
#include "base/json.h"
#include "base/util.h"
#include "export/web/web.h"

#include <stdlib.h>
#include <string.h>

#define BUCKETS_DEFAULT 200
#define BUCKETS_MAX 100000

/* ---- /data/<id>/allocation_ascii_tree ---- */

int api_run_tree(struct req *x)
{
	const struct mt_recording *rec = &x->sel->matched;
	int several = 0;
	for (size_t i = 0; i < rec->nprocs; i++)
		several += api_wants(x, rec->procs[i]);
	for (size_t i = 0; i < rec->nprocs && i < x->file->sel.all.nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (!api_wants(x, p))
			continue;
		if (several > 1) {
			fprintf(x->out, "process %u: ", p->pid);
			mt_text_str(x->out, p->exe ? p->exe : "?");
			fputc('\n', x->out);
		}
		size_t n;
		uint32_t *sites = mt_rank_sites(p, x->view, 1, &n);
		/* the file's symbolizer: one request at a time (server.h), and
		 * never held while a slow client reads (a tree is one line a site
		 * at most) */
		char *tree = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&tree, &len);
		if (!m)
			mt_oom(4096);
		pthread_mutex_lock(&x->st->symlock);
		mt_print_tree(m, p, x->file->procs[i].sym, sites, n, x->view, x->threshold, NULL);
		pthread_mutex_unlock(&x->st->symlock);
		fclose(m);
		fwrite(tree, 1, len, x->out);
		free(tree);
		free(sites);
	}
	return 0;
}

int api_param_tree(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "view")) {
		for (int i = 0; i <= MT_VIEW_FREQUENCY; i++)
			if (v && !strcmp(v, mt_view_names[i])) {
				x->view = (enum mt_view)i;
				return 1;
			}
		srv_error(x->r, 400,
			  "view: '%s' is none of summary, leaks, peak, temporary, frequency",
			  v ? v : "");
		return -1;
	}
	if (!strcmp(key, "threshold")) {
		if (!v || mt_parse_double(v, &x->threshold) || x->threshold < 0 ||
		    x->threshold > 100) {
			srv_error(x->r, 400, "threshold: '%s' is not a percentage from 0 to 100",
				  v ? v : "");
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
	struct api_replay rp; /* a block's aux: the bucket it was allocated in */
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
	struct mt_block r;
	if (!t->rp.want[proc] || !mt_blockrecs_take(&t->rp.live[proc], ptr, &r))
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
	if (!t->rp.want[proc])
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
	struct mt_block r = {
		.ptr = ptr, .ts = ts, .size = size, .site = site, .tid = tid, .aux = (uint32_t)p->cur
	};
	mt_blockrecs_put(&t->rp.live[proc], &r);
}

static void write_series(FILE *f, const char *name, const uint64_t *v, size_t n)
{
	fprintf(f, ",\n   \"%s\": [", name);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	fputc(']', f);
}

static void tl_finish(struct timeline *t, size_t proc, const struct mt_process *pa, FILE *f,
		      int first)
{
	struct tl_proc *p = &t->p[proc];
	size_t nb = t->nb;
	tl_advance(p, nb - 1);
	p->heap[nb - 1] = p->live;
	/* leaked: what is live at the end, by the bucket it was allocated in */
	size_t pos = 0;
	for (const struct mt_block *r; (r = mt_blockrecs_next(&t->rp.live[proc], &pos));)
		p->leaked[r->aux] += r->size;
	for (size_t i = 1; i < nb; i++)
		p->leaked[i] += p->leaked[i - 1];
	fprintf(f, "%s\n  {\"pid\": %u, \"duration_s\": %.6f,\n   \"time_s\": [", first ? "" : ",",
		pa->pid, (double)p->span / 1e9);
	for (size_t i = 0; i < nb; i++)
		fprintf(f, "%s%.6f", i ? ", " : "",
			(double)p->span * (double)(i + 1) / (double)nb / 1e9);
	fputc(']', f);
	write_series(f, "heap_bytes", p->heap, nb);
	write_series(f, "max_heap_bytes", p->max, nb);
	write_series(f, "allocations", p->allocs, nb);
	write_series(f, "frees", p->frees, nb);
	write_series(f, "leaked_bytes", p->leaked, nb);
	fputc('}', f);
}

int api_run_timeline(struct req *x)
{
	if (x->buckets == UINT64_MAX)
		x->buckets = BUCKETS_DEFAULT;
	size_t np = x->sel->all.nprocs, nb = (size_t)x->buckets;
	struct timeline t = { .p = xcalloc(np ? np : 1, sizeof *t.p), .nb = nb };
	api_replay_init(&t.rp, x);
	for (size_t i = 0; i < np; i++) {
		const struct mt_process *pa = x->sel->all.procs[i];
		struct tl_proc *p = &t.p[i];
		p->start = api_proc_start(pa);
		p->span = pa->end_ts > p->start ? pa->end_ts - p->start : 1;
		uint64_t *mem = xcalloc(5 * nb, sizeof *mem);
		p->heap = mem, p->max = mem + nb, p->allocs = mem + 2 * nb, p->frees = mem + 3 * nb;
		p->leaked = mem + 4 * nb;
	}
	struct mt_replay_ops ops = { tl_alloc, tl_free, &t };
	int rc = api_replay_run(x, &ops);
	if (rc == 0) {
		fprintf(x->out, "{\"buckets\": %zu, \"processes\": [", nb);
		int first = 1;
		for (size_t i = 0; i < np; i++)
			if (t.rp.want[i]) {
				tl_finish(&t, i, x->sel->all.procs[i], x->out, first);
				first = 0;
			}
		fputs("\n]}\n", x->out);
	}
	for (size_t i = 0; i < np; i++)
		free(t.p[i].heap);
	free(t.p);
	api_replay_free(&t.rp);
	return rc;
}

int api_param_timeline(struct req *x, const char *key, const char *v)
{
	if (!strcmp(key, "buckets"))
		return api_param_u64(x, key, v, 1, BUCKETS_MAX, &x->buckets);
	return 0;
}

/* ---- /data/<id>/export/... ---- */

static int run_export(struct req *x, int (*fn)(struct mt_export_ctx *, char *, size_t))
{
	struct mt_export_ctx e = { .sel = x->sel,
				   .pid = x->pid,
				   .weight = x->weight,
				   .weight_set = x->weight_set,
				   .out = x->out };
	char err[512] = "";
	if (fn(&e, err, sizeof err) < 0) {
		srv_error(x->r, 500, "%s", err[0] ? err : "the export failed");
		return -1;
	}
	return 0;
}

/* The format of x->fmt, as `memtrace export` writes it. */
int api_run_export(struct req *x)
{
	return run_export(x, x->fmt->run);
}

/* The data of the GUI's page (report.js): the html export's, filtered. */
int api_run_report(struct req *x)
{
	return run_export(x, mt_web_report_data);
}

int api_param_weight(struct req *x, const char *key, const char *v)
{
	if (strcmp(key, "weight"))
		return 0;
	for (int w = 0; w <= MT_W_TEMPORARY; w++)
		if (v && !strcmp(v, mt_weight_names[w])) {
			x->weight = (enum mt_weight)w;
			x->weight_set = 1;
			return 1;
		}
	srv_error(x->r, 400, "weight: '%s' is none of bytes, allocations, leaked, peak, temporary",
		  v ? v : "");
	return -1;
}
