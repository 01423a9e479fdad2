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
 * This file holds the routing, the parameters every endpoint takes and what
 * the endpoint families share (api.h); the families have a file each.
 */
#include "api.h"
#include "report/report.h"
#include "base/util.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* Time 0 of a process, as the filter's from/to see it. */
uint64_t api_proc_start(const struct mt_process *p)
{
	uint64_t s = p->start_ts ? p->start_ts : p->col.t.first_ts;
	if (p->col.t.first_ts && p->col.t.first_ts < s)
		s = p->col.t.first_ts;
	return s;
}

double api_rel_s(const struct mt_process *p, uint64_t ts)
{
	uint64_t s = api_proc_start(p);
	return ts > s ? (double)(ts - s) / 1e9 : 0.0;
}

int api_wants(const struct req *x, const struct mt_process *p)
{
	return x->pid < 0 || p->pid == (uint32_t)x->pid;
}

void api_json_argv(FILE *f, const struct mt_process *p)
{
	fputc('[', f);
	for (int i = 0; i < p->argc; i++) {
		if (i)
			fputs(", ", f);
		mt_json_str(f, p->argv[i]);
	}
	fputc(']', f);
}

void api_json_start_time(FILE *f, const struct mt_process *p)
{
	if (p->unix_ns)
		fprintf(f, "%.3f", (double)p->unix_ns / 1e9);
	else
		fputs("null", f);
}

/* The frames of site SITE of process PROC, as symbolized at load time. */
void api_json_backtrace(const struct req *x, size_t proc, uint32_t site)
{
	const struct srv_proc *sp = proc < x->file->sel.all.nprocs ? &x->file->procs[proc] : NULL;
	if (sp && site < sp->nsites)
		mt_json_frames(x->out, sp->frames + sp->site_off[site], (int)sp->site_len[site]);
	else
		fputs("[]", x->out);
}

int api_sites_used(const struct mt_process *p)
{
	int n = 0;
	for (size_t s = 0; s < p->col.nsites; s++)
		n += p->col.sites[s].allocations != 0;
	return n;
}

int api_param_u64(struct req *x, const char *key, const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!v || mt_parse_u64(v, out) || *out < min || *out > max) {
		srv_error(x->r, 400, "%s: '%s' is not a number from %llu to %llu", key, v ? v : "",
			  (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	return 1;
}

int api_param_order(struct req *x, const char *v)
{
	if (v && (!strcmp(v, "asc") || !strcmp(v, "dsc"))) {
		x->desc = v[0] == 'd';
		return 1;
	}
	srv_error(x->r, 400, "order: '%s' is neither asc nor dsc", v ? v : "");
	return -1;
}

int api_param_sort(struct req *x, const char *v, const char *const *names, int n)
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

/* ---- replays ---- */

void api_replay_init(struct api_replay *rp, const struct req *x)
{
	rp->n = x->sel->all.nprocs;
	rp->want = xcalloc(rp->n ? rp->n : 1, 1);
	rp->live = xcalloc(rp->n ? rp->n : 1, sizeof *rp->live);
	for (size_t i = 0; i < rp->n; i++) {
		rp->want[i] = (uint8_t)api_wants(x, x->sel->all.procs[i]);
		mt_blocks_init(&rp->live[i]);
	}
}

void api_replay_free(struct api_replay *rp)
{
	for (size_t i = 0; i < rp->n; i++)
		mt_blocks_destroy(&rp->live[i]);
	free(rp->live);
	free(rp->want);
	memset(rp, 0, sizeof *rp);
}

int api_replay_run(struct req *x, const struct mt_replay_ops *ops)
{
	char err[512];
	if (mt_select_replay(x->sel, ops, err, sizeof err) < 0) {
		srv_error(x->r, 500, "%s", err);
		return -1;
	}
	return 0;
}

/* ---- routing ---- */

static const struct endpoint endpoints[] = {
	{"summary", 0, "application/json", NULL, api_run_summary},
	{"allocations", 1, "application/json", api_param_allocations, api_run_allocations},
	{"allocation_groups", 0, "application/json", api_param_groups, api_run_groups},
	{"allocation_ascii_tree", 1, "text/plain; charset=utf-8", api_param_tree, api_run_tree},
	{"timeline", 1, "application/json", api_param_timeline, api_run_timeline},
	{"mmaps", 0, "application/json", NULL, api_run_mmaps},
	{"mallopts", 0, "application/json", NULL, api_run_mallopts},
	{"export/flamegraph.pl", 1, "text/plain; charset=utf-8", api_param_weight, api_run_folded},
	{"export/flamegraph", 1, "image/svg+xml", api_param_weight, api_run_svg},
	{"export/heaptrack", 1, "application/octet-stream", NULL, api_run_heaptrack},
	{"export/pprof", 1, "application/octet-stream", NULL, api_run_format},
	{"export/massif", 1, "text/plain; charset=utf-8", NULL, api_run_format},
	{"export/speedscope", 1, "application/json", api_param_weight, api_run_format},
	{"export/gprof2dot", 1, "application/json", api_param_weight, api_run_format},
	{"export/json", 1, "application/json", NULL, api_run_format},
	{"export/html", 1, "text/html; charset=utf-8", api_param_weight, api_run_format},
	{"report", 1, "application/json", api_param_weight, api_run_report},
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
