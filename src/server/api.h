/*
 * api.h - what the REST API's files share: a request and its endpoint, the
 * helpers every endpoint family uses, and the families' endpoints
 * (api_list.c: /list, summary; api_allocations.c:
 * allocations, allocation_groups; api_export.c: allocation_ascii_tree,
 * timeline, the exports and the GUI's report).  api.c routes /list and
 * /data/<id>/ENDPOINT to them.  Calls go one way: server.c -> api.c ->
 * the families -> api_shared.c -> reply.c.
 */
#ifndef MEMTRACE_API_H
#define MEMTRACE_API_H

#include <stdint.h>
#include <stdio.h>

#include "analyse/blockrecs.h"
#include "analyse/filter.h"
#include "analyse/select.h"
#include "analyse/sites.h"
#include "export/export.h"
#include "server.h"

struct req;

struct endpoint {
	const char *name;
	int heavy; /* reads the file again: takes one of st->slots */
	const char *type;
	/* its own parameter KEY: 1 taken, 0 not its own, -1 after srv_error */
	int (*param)(struct req *x, const char *key, const char *value);
	/* writes the answer to x->out: 0, or -1 after srv_error */
	int (*run)(struct req *x);
};

struct req {
	struct srv_state *st;
	struct srv_file *file;
	int held; /* the file is held (srv_file_acquire) */
	size_t id;
	struct srv_reply *r;
	const struct endpoint *ep;
	char path[64];		       /* the endpoint as asked: "summary", "export/json" */
	const struct mt_exporter *fmt; /* an export's format */
	struct mt_filter filt;
	long pid;		  /* -1: every process */
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
	char *sql;	  /* query's statement */
	int qformat;	  /* query's: an enum mt_qformat, 0 for its default (json) */
	const char *type; /* the answer's content type, when not the endpoint's */
};

/* ---- helpers (api_shared.c) ---- */

/* Time 0 of a process, as the filter's from/to see it; TS from it. */
uint64_t api_proc_start(const struct mt_process *p);
double api_rel_s(const struct mt_process *p, uint64_t ts);
/* Is P selected by the request's pid parameter? */
int api_wants(const struct req *x, const struct mt_process *p);
void api_json_start_time(FILE *f, const struct mt_process *p);
/* The frames of site SITE of process PROC, as symbolized at load time. */
void api_json_backtrace(const struct req *x, size_t proc, uint32_t site);
/* Sites with at least one (matched) allocation. */
int api_sites_used(const struct mt_process *p);

/* Parameter parsers: 1 taken, -1 after srv_error. */
int api_param_u64(struct req *x, const char *key, const char *v, uint64_t min, uint64_t max,
		  uint64_t *out);
int api_param_order(struct req *x, const char *v);
int api_param_sort(struct req *x, const char *v, const char *const *names, int n);

/* What a replay of the selection follows per process of sel->all: whether
 * the request wants it, and its live blocks. */
struct api_replay {
	size_t n;
	uint8_t *want;
	struct mt_blockrecs *live;
};

void api_replay_init(struct api_replay *rp, const struct req *x);
void api_replay_free(struct api_replay *rp);
/* Replays x->sel through OPS: 0, or -1 after srv_error. */
int api_replay_run(struct req *x, const struct mt_replay_ops *ops);

/* ---- the endpoint families ---- */

/* api_list.c */
void api_list(struct srv_state *st, const struct srv_query *q, struct srv_reply *r);
int api_run_summary(struct req *x);

/* api_allocations.c */
int api_run_allocations(struct req *x);
int api_run_mallopts(struct req *x); /* api_mallopts.c */
int api_param_allocations(struct req *x, const char *key, const char *v);
int api_run_groups(struct req *x);
int api_param_groups(struct req *x, const char *key, const char *v);

/* api_query.c */
int api_run_query(struct req *x);
/* api_mmaps.c */
int api_run_mmaps(struct req *x);
int api_param_query(struct req *x, const char *key, const char *v);
/* Evaluates the filter's "where" condition (a guarded connection to the
 * file's SQL tables): 0, or -1 after srv_error. */
int api_where(struct req *x);

/* api_export.c */
int api_run_tree(struct req *x);
int api_param_tree(struct req *x, const char *key, const char *v);
int api_run_timeline(struct req *x);
int api_param_timeline(struct req *x, const char *key, const char *v);
int api_run_export(struct req *x);
int api_run_report(struct req *x);
int api_param_weight(struct req *x, const char *key, const char *v);

#endif
