/*
 * api_mallopts.c - /data/<id>/mallopts: the calls that tuned the allocator
 * (mallopt, malloc_trim), in the shape of bytehound's answer: one array of
 * {timestamp {secs, fract_nsecs}, thread, backtrace_id, backtrace,
 * raw_param, param, value, result}, plus keys of ours (pid, function,
 * time_s).  bytehound lists mallopt alone; a malloc_trim(PAD) comes with
 * function "malloc_trim", param null, raw_param 0 and value PAD.
 */
#include "api.h"
#include "report/report.h"
#include "base/json.h"
#include "base/util.h"

#include <pthread.h>
#include <stdlib.h>

static void write_call(FILE *f, const struct mt_process *p, const struct mt_tune_call *t,
		       size_t idx, struct mt_symbolizer *sym, int first)
{
	uint64_t s = api_proc_start(p), rel = t->ts > s ? t->ts - s : 0;
	fprintf(f,
		"%s\n {\"timestamp\": {\"secs\": %llu, \"fract_nsecs\": %llu}, \"time_s\": %.6f, "
		"\"pid\": %u, \"thread\": %u, \"function\": \"%s\",\n  \"raw_param\": %lld, "
		"\"param\": ",
		first ? "" : ",", (unsigned long long)(rel / 1000000000u),
		(unsigned long long)(rel % 1000000000u), api_rel_s(p, t->ts), p->pid, t->tid,
		mt_tune_function(t), (long long)t->m.param);
	mt_json_str(f, t->m.call == MT_TUNE_MALLOPT ? mt_tune_param_name(t->m.param) : NULL);
	/* a call's stack is its own (no site): its id is the call's index */
	fprintf(f, ", \"value\": %lld, \"result\": %lld,\n  \"backtrace_id\": %zu, \"backtrace\": ",
		(long long)t->m.value, (long long)t->m.result, idx);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	int k = mt_stack_frames(sym, t->frames, t->nframes, fr, MT_SYM_MAX_FRAMES);
	mt_json_frames(f, fr, k);
	fputc('}', f);
}

int api_run_mallopts(struct req *x)
{
	const struct mt_recording *rec = &x->sel->all;
	/* written to memory under the file's symbolizer lock, then sent: the
	 * lock is never held while a slow client reads */
	char *body = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&body, &len);
	if (!m)
		mt_oom(4096);
	int first = 1;
	fputc('[', m);
	for (size_t i = 0; i < rec->nprocs && i < x->file->sel.all.nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (!api_wants(x, p) || !p->ntunes)
			continue;
		pthread_mutex_lock(&x->st->symlock);
		for (size_t k = 0; k < p->ntunes; k++, first = 0)
			write_call(m, p, &p->tunes[k], k, x->file->procs[i].sym, first);
		pthread_mutex_unlock(&x->st->symlock);
	}
	fputs(first ? "]\n" : "\n]\n", m);
	fclose(m);
	fwrite(body, 1, len, x->out);
	free(body);
	return 0;
}
