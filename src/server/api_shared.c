/*
 * api_shared.c - what the REST API's endpoint families share (api.h): a
 * process's times and identity in JSON, a site's frames, the parameter
 * parsers, and the replays that follow live blocks.  Below both the routing
 * (api.c) and the families, so that calls between them go one way.
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
	uint64_t s = p->start_ts ? p->start_ts : p->figures.t.first_ts;
	if (p->figures.t.first_ts && p->figures.t.first_ts < s)
		s = p->figures.t.first_ts;
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
	if (sp && site < sp->nsites) {
		struct mt_frame fr[MT_SYM_MAX_FRAMES];
		int n = (int)sp->site_len[site];
		for (int i = 0; i < n; i++)
			fr[i] = sp->frames[sp->frame_ids[sp->site_off[site] + (uint32_t)i]];
		mt_json_frames(x->out, fr, n);
	} else
		fputs("[]", x->out);
}

int api_sites_used(const struct mt_process *p)
{
	int n = 0;
	for (size_t s = 0; s < p->figures.nsites; s++)
		n += p->figures.sites[s].allocations != 0;
	return n;
}

int api_param_u64(struct req *x, const char *key, const char *v, uint64_t min, uint64_t max,
		  uint64_t *out)
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
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
			 names[i]);
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
		mt_blockrecs_init(&rp->live[i]);
	}
}

void api_replay_free(struct api_replay *rp)
{
	for (size_t i = 0; i < rp->n; i++)
		mt_blockrecs_destroy(&rp->live[i]);
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
