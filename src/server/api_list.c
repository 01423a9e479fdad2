/*
 * api_list.c - the REST API's overviews: /list (every loaded recording,
 * bytehound's list plus memtrace's figures), /data/<id>/summary (the
 * figures of `memtrace report --json` per process).  A recording that did
 * not load is listed with its error.
 */
#include "api.h"
#include "report/report.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

/* ---- /list ---- */

/* A process's object up to its start time: who it is.  INDENT opens the
 * object's line, TIME_SEP goes before "start_time". */
static void process_identity(FILE *f, const struct mt_process *p, int first, const char *indent,
			     const char *time_sep)
{
	fprintf(f, "%s\n%s{", first ? "" : ",", indent);
	mt_json_identity(f, p, ", ", 0);
	fprintf(f, ",%s\"start_time\": ", time_sep);
	api_json_start_time(f, p);
}

/* A file whose first load is under way: how far it got. */
static void list_loading(FILE *f, size_t id, struct srv_file *file)
{
	unsigned gen;
	double progress;
	srv_file_status(file, &gen, &progress);
	fprintf(f, "  {\"id\": %zu, \"file\": ", id);
	mt_json_str(f, file->path);
	fprintf(f, ", \"state\": \"loading\", \"progress\": %.3f, \"generation\": %u}", progress,
		gen);
}

static void list_file(FILE *f, size_t id, struct srv_file *file, const struct srv_state *st)
{
	unsigned gen;
	double progress;
	enum srv_file_state state = srv_file_status(file, &gen, &progress);
	/* (a new reading of a grown file waits for the requests holding the
	 * old one: the list does not wait long for them, it says loading) */
	int held = state == SRV_LOADING ? 1 : srv_file_acquire(file, &st->stopping, 1);
	if (held > 0) {
		list_loading(f, id, file);
		return;
	}
	if (held < 0) {
		fprintf(f, "  {\"id\": %zu, \"file\": ", id);
		mt_json_str(f, file->path);
		fputs(", \"state\": \"failed\", \"error\": ", f);
		mt_json_str(f, file->error);
		fputs("}", f);
		return;
	}
	const struct mt_recording *rec = &file->sel.all;
	const struct mt_process *first = mt_recording_main(rec);
	uint64_t allocs = 0, bytes = 0, frees = 0, lcount = 0, lbytes = 0, start = UINT64_MAX,
		 end = 0;
	/* what the leak scans found lost (definitely or indirectly), the
	 * list's "leaked" when any process of the file was scanned */
	uint64_t lost = 0;
	int scanned = 0;
	uint32_t depth = 0;
	int sites = 0;
	/* still being written, as far as one can tell: a process has not
	 * ended (no EXIT record yet) or the last chunk is cut */
	int growing = rec->truncated || !rec->nprocs;
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		const struct mt_totals *t = &p->figures.t;
		allocs += t->allocations, bytes += t->allocated_bytes, frees += t->frees;
		lcount += t->live_count, lbytes += t->live_bytes;
		if (p->kinds.ran) {
			scanned = 1;
			lost += p->kinds.total.bytes[MT_LEAK_DEFINITE] +
				p->kinds.total.bytes[MT_LEAK_INDIRECT];
		}
		sites += api_sites_used(p);
		if (api_proc_start(p) < start)
			start = api_proc_start(p);
		if (p->end_ts > end)
			end = p->end_ts;
		if (file->procs[i].max_depth > depth)
			depth = file->procs[i].max_depth;
		growing |= !p->exited;
	}
	fprintf(f, "  {\"id\": %zu, \"file\": ", id);
	mt_json_str(f, file->path);
	/* (held: no load is swapped in meanwhile) */
	fprintf(f,
		", \"state\": \"ready\", \"generation\": %u, \"growing\": %s, \"file_size\": %llu, "
		"\"truncated\": %s,\n   \"pid\": ",
		file->generation, growing ? "true" : "false", (unsigned long long)rec->file_size,
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
		mt_json_argv(f, first, 0);
	else
		fputs("[]", f);
	fputs(", \"start_time\": ", f);
	if (first)
		api_json_start_time(f, first);
	else
		fputs("null", f);
	fprintf(f,
		",\n   \"duration_s\": %.6f, \"allocations\": %llu, \"allocated_bytes\": %llu, \"frees\": %llu,\n"
		"   \"leaked_allocations\": %llu, \"leaked_bytes\": %llu, \"lost_bytes\": ",
		end > start && start != UINT64_MAX ? (double)(end - start) / 1e9 : 0.0,
		(unsigned long long)allocs, (unsigned long long)bytes, (unsigned long long)frees,
		(unsigned long long)lcount, (unsigned long long)lbytes);
	if (scanned)
		fprintf(f, "%llu", (unsigned long long)lost);
	else
		fputs("null", f);
	fprintf(f, ", \"sites\": %d, \"maximum_backtrace_depth\": %u,\n   \"processes\": [", sites,
		depth);
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		const struct mt_totals *t = &p->figures.t;
		process_identity(f, p, i == 0, "     ", " ");
		fprintf(f,
			", \"duration_s\": %.6f,\n      \"allocations\": %llu, \"allocated_bytes\": %llu, "
			"\"peak_bytes\": %llu, \"leaked_bytes\": %llu, \"sites\": %d, \"sampled\": ",
			mt_process_duration(p), (unsigned long long)t->allocations,
			(unsigned long long)t->allocated_bytes, (unsigned long long)t->peak_bytes,
			(unsigned long long)t->live_bytes, api_sites_used(p));
		/* a sampled recording's figures are estimates (as report --json) */
		if (p->figures.sample_mean)
			fprintf(f, "{\"mean_bytes\": %llu}}",
				(unsigned long long)p->figures.sample_mean);
		else
			fputs("null}", f);
	}
	fputs("]}", f);
	srv_file_release(file);
}

void api_list(struct srv_state *st, const struct srv_query *q, struct srv_reply *r)
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
		list_file(f, i, &st->files[i], st);
		fputs(i + 1 < st->nfiles ? ",\n" : "\n", f);
	}
	fputs("]\n", f);
	fclose(f);
	r->status = 200;
	r->type = "application/json";
}

/* ---- /data/<id>/summary ---- */

int api_run_summary(struct req *x)
{
	FILE *f = x->out;
	const struct mt_recording *rec = &x->sel->matched;
	fprintf(f, "{\"id\": %zu, \"file\": ", x->id);
	mt_json_str(f, x->file->path);
	fprintf(f, ", \"filtered\": %s, \"truncated\": %s,\n \"processes\": [",
		x->sel->filtered ? "true" : "false", rec->truncated ? "true" : "false");
	int shown = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (!api_wants(x, p))
			continue;
		process_identity(f, p, !shown++, "  ", "\n   ");
		fprintf(f, ", \"duration_s\": %.6f, ", mt_process_duration(p));
		if (p->exited)
			fprintf(f, "\"exit_status\": %lld, ", (long long)p->exit_status);
		/* the keys and figures of `memtrace report --json` */
		fprintf(f, "\"sites\": %d,\n   \"totals\": ", api_sites_used(p));
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
