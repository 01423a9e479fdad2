/*
 * api.c - the REST API of `memtrace server`, after bytehound's
 * (seed 002): /list, and /data/<id>/ENDPOINT for each loaded recording,
 * every endpoint narrowed by bytehound's allocation filter.
 *
 * A request owns all its state.  Without a filter it reads the recording
 * loaded at start-up (and its sites symbolized then); with one, it loads the
 * file again through the filter.  Listings of single allocations and the
 * timeline replay the file: their memory is bounded by the live blocks and
 * what is asked for (skip + count allocations, N buckets), never by the
 * number of events.
 *
 * This file holds the routing and the parameters every endpoint takes; the
 * endpoint families have a file each, and what they share is api_shared.c.
 */
#include "api.h"
#include "report/report.h"
#include "base/util.h"
#include "base/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- routing ---- */

static const struct endpoint endpoints[] = {
	{ .name = "summary", .heavy = 0, .type = "application/json", .run = api_run_summary },
	{ .name = "mallopts", .heavy = 0, .type = "application/json", .run = api_run_mallopts },
	/* the loaded mapping calls, symbolized under st->symlock */
	{ .name = "mmaps", .heavy = 0, .type = "application/json", .run = api_run_mmaps },
	{ .name = "allocations",
	  .heavy = 1,
	  .type = "application/json",
	  .param = api_param_allocations,
	  .run = api_run_allocations },
	{ .name = "allocation_groups",
	  .heavy = 0,
	  .type = "application/json",
	  .param = api_param_groups,
	  .run = api_run_groups },
	/* the loaded figures, symbolized under st->symlock: no reading */
	{ .name = "allocation_ascii_tree",
	  .heavy = 0,
	  .type = "text/plain; charset=utf-8",
	  .param = api_param_tree,
	  .run = api_run_tree },
	{ .name = "timeline",
	  .heavy = 1,
	  .type = "application/json",
	  .param = api_param_timeline,
	  .run = api_run_timeline },
	{ .name = "report",
	  .heavy = 1,
	  .type = "application/json",
	  .param = api_param_weight,
	  .run = api_run_report },
	{ .name = "query",
	  .heavy = 1,
	  .type = "application/json",
	  .param = api_param_query,
	  .run = api_run_query },
	{ .name = NULL },
};

/* /data/<id>/export/ENDPOINT: the formats of export/formats.c's table,
 * which gives each its content type and download name; weight applies to
 * those that draw by --weight. */
static const struct endpoint export_weighted = { .name = "export",
						 .heavy = 1,
						 .param = api_param_weight,
						 .run = api_run_export };
static const struct endpoint export_plain = { .name = "export", .heavy = 1, .run = api_run_export };

/* The endpoint named by SEG[2] (and SEG[3], an export's format), into
 * x->ep, x->fmt and x->path; 0 if there is none. */
static int find_endpoint(struct req *x, char *const *seg, int nseg)
{
	if (!strcmp(seg[2], "export") && nseg >= 4) {
		if (!(x->fmt = mt_exporter_at(seg[3])))
			return 0;
		x->ep = x->fmt->weight ? &export_weighted : &export_plain;
		x->type = x->fmt->type;
		snprintf(x->path, sizeof x->path, "export/%s", seg[3]);
		return 1;
	}
	for (const struct endpoint *e = endpoints; e->name; e++)
		if (!strcmp(e->name, seg[2])) {
			x->ep = e;
			snprintf(x->path, sizeof x->path, "%s", seg[2]);
			return 1;
		}
	return 0;
}

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
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
		       strlen(s);
}

static int parse_params(struct req *x, const struct srv_query *q)
{
	char err[400];
	for (size_t i = 0; i < q->n; i++) {
		const char *k = q->v[i].key, *v = q->v[i].value;
		int r = 0;
		if (!strcmp(k, "pid")) {
			uint64_t pid;
			if (api_param_u64(x, k, v, 0, 0x7fffffff, &pid) < 0)
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
			srv_error(x->r, 400, "unknown parameter '%s' of /data/<id>/%s", k, x->path);
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

/* Waits for a slot among the workers that read recordings again, until
 * the request's time budget runs out: 0, or -1 after srv_error. */
static int take_slot(struct req *x)
{
	/* in steps of 250 ms: a client that leaves stops waiting too */
	const struct mt_budget *b = mt_budget_get();
	for (unsigned waited_ms = 0;; waited_ms += 250) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (sem_timedwait(&x->st->slots, &until) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (x->st->stopping || (b && b->cancel && *b->cancel)) {
			srv_error(x->r, 503, "the request was cancelled");
			return -1;
		}
		if (waited_ms >= x->st->timeout_s * 1000u) {
			srv_error(x->r, 503, "the server is busy: no worker was free within %u s",
				  x->st->timeout_s);
			return -1;
		}
	}
}

/* A reading or a loop that stopped on the request's budget is the server's refusal
 * (503, saying which budget), not a fault of the file (500). */
static int over_budget(struct req *x, int rc)
{
	const struct mt_budget *b = mt_budget_get();
	if (!b || b->exceeded == MT_BUDGET_OK)
		return rc;
	if (b->exceeded == MT_BUDGET_MEMORY)
		srv_error(x->r, 503,
			  "the answer needs more memory than a request may take (%llu MiB; see "
			  "memtrace server --request-memory)",
			  (unsigned long long)(b->max_bytes >> 20));
	else if (b->exceeded == MT_BUDGET_TIME)
		srv_error(x->r, 503, "the answer takes longer than the time budget of a request");
	else
		srv_error(x->r, 503, "the request was cancelled");
	/* loops stopped by the budget may have finished with less than the
	 * answer: it is an error even when they returned 0 */
	return -1;
}

int srv_api_run(struct req *x, FILE *out)
{
	int heavy = x->ep->heavy || x->filt.active;
	char err[512];
	if (heavy && take_slot(x) < 0)
		return -1;
	x->sel = &x->file->sel;
	x->out = out;
	int rc = -1;
	if (x->filt.where && api_where(x) < 0)
		goto cleanup;
	if (x->filt.active) {
		/* over the figures the server holds: the file is read twice
		 * rather than three times */
		int lr = mt_select_load_over(&x->fsel, &x->file->sel.all, x->file->path, &x->filt,
					     err, sizeof err);
		if (lr < 0) {
			srv_error(x->r, lr == MT_SELECT_BAD_FILTER ? 400 : 500, "%s", err);
			goto cleanup;
		}
		x->sel = &x->fsel;
	}
	rc = x->ep->run(x);
	if (x->filt.active)
		mt_select_free(&x->fsel);
cleanup:
	rc = over_budget(x, rc);
	if (heavy)
		sem_post(&x->st->slots);
	return rc;
}

void srv_api_set_reply(struct req *x, struct srv_reply *r)
{
	x->r = r;
}

void srv_api_free(struct req *x)
{
	if (x) {
		if (x->held)
			srv_file_release(x->file);
		mt_filter_free(&x->filt);
		free(x->sql);
		free(x);
	}
}

static struct req *api_data(struct srv_state *st, char *const *seg, int nseg,
			    const struct srv_query *q, struct srv_reply *r)
{
	struct req *x = xmalloc(sizeof *x);
	*x = (struct req){ .st = st,
			   .r = r,
			   .pid = -1,
			   .sort = -1,
			   .desc = -1,
			   .count = UINT64_MAX,
			   .view = MT_VIEW_SUMMARY,
			   .threshold = 0.5,
			   .weight = MT_W_BYTES,
			   .buckets = UINT64_MAX };
	mt_filter_init(&x->filt);
	if (nseg < 3) {
		srv_error(r, 404, "no such path: /data/<id>/<endpoint>");
		goto fail;
	}
	if (!(x->file = find_file(st, seg[1], &x->id))) {
		srv_error(r, 404, "no recording '%s': ids are 0 to %zu, or last", seg[1],
			  st->nfiles - 1);
		goto fail;
	}
	/* a file still loading: the answer waits for it (the GUI shows how
	 * far it got from /list meanwhile) */
	int held = srv_file_acquire(x->file, &st->stopping, st->timeout_s);
	if (held < 0) {
		srv_error(r, 404, "recording %zu did not load: %s", x->id, x->file->error);
		goto fail;
	}
	if (held > 0) {
		srv_error(r, 503, "recording %zu is still loading", x->id);
		goto fail;
	}
	x->held = 1;
	/* an export may end in a download name, as bytehound's do */
	int export = !strcmp(seg[2], "export");
	if (!find_endpoint(x, seg, nseg) || nseg > (export ? 5 : 3) ||
	    (nseg == 5 && !good_filename(seg[4]))) {
		srv_error(r, 404, "no such endpoint");
		goto fail;
	}
	if (nseg == 5)
		snprintf(r->filename, sizeof r->filename, "%s", seg[4]);
	else if (x->fmt && x->fmt->file)
		snprintf(r->filename, sizeof r->filename, "%s%zu", x->fmt->file, x->id);
	if (parse_params(x, q) < 0)
		goto fail;
	if (!has_pid(&x->file->sel.all, x->pid)) {
		srv_error(r, 404, "recording %zu has no process %ld", x->id, x->pid);
		goto fail;
	}
	r->status = 200;
	r->type = x->type ? x->type : x->ep->type;
	return x;
fail:
	srv_api_free(x);
	return NULL;
}

struct req *srv_api(struct srv_state *st, char *const *seg, int nseg, const struct srv_query *q,
		    struct srv_reply *r)
{
	if (!strcmp(seg[0], "list") && nseg == 1)
		api_list(st, q, r);
	else if (!strcmp(seg[0], "data"))
		return api_data(st, seg, nseg, q, r);
	else
		srv_error(r, 404, "no such path");
	return NULL;
}
