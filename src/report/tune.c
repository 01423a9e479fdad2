/*
 * tune.c - the calls that tuned the allocator (mallopt, malloc_trim:
 * MT_EXT_MALLOPT) in the reports: a short text section, the JSON report's
 * "mallopts" array, and the names of glibc's mallopt parameters, which the
 * server's /mallopts answer uses too.
 */
#include "report.h"
#include "analyse/functions.h"
#include "base/json.h"

#include <stdlib.h>

const char *mt_tune_param_name(int64_t param)
{
	/* glibc's <malloc.h> numbers (M_NLBLKS, M_GRAIN, M_KEEP: unused there) */
	switch (param) {
	case 1:
		return "M_MXFAST";
	case 2:
		return "M_NLBLKS";
	case 3:
		return "M_GRAIN";
	case 4:
		return "M_KEEP";
	case -1:
		return "M_TRIM_THRESHOLD";
	case -2:
		return "M_TOP_PAD";
	case -3:
		return "M_MMAP_THRESHOLD";
	case -4:
		return "M_MMAP_MAX";
	case -5:
		return "M_CHECK_ACTION";
	case -6:
		return "M_PERTURB";
	case -7:
		return "M_ARENA_TEST";
	case -8:
		return "M_ARENA_MAX";
	default:
		return NULL;
	}
}

const char *mt_tune_function(const struct mt_tune_call *t)
{
	return t->m.call == MT_TUNE_MALLOC_TRIM ? "malloc_trim" : "mallopt";
}

static double rel_s(const struct mt_process *p, uint64_t ts)
{
	return ts > p->start_ts ? (double)(ts - p->start_ts) / 1e9 : 0.0;
}

void mt_print_tunes(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym)
{
	if (!p->ntunes)
		return;
	fputs("\nMALLOPT CALLS\n", f);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < p->ntunes; i++) {
		const struct mt_tune_call *t = &p->tunes[i];
		fprintf(f, "  %.3f s: %s(", rel_s(p, t->ts), mt_tune_function(t));
		if (t->m.call == MT_TUNE_MALLOC_TRIM) {
			fprintf(f, "%lld)", (long long)t->m.value);
		} else {
			const char *name = mt_tune_param_name(t->m.param);
			if (name)
				fputs(name, f);
			else
				fprintf(f, "%lld", (long long)t->m.param);
			fprintf(f, ", %lld)", (long long)t->m.value);
		}
		fprintf(f, " = %lld from:\n", (long long)t->m.result);
		int k = mt_stack_frames(sym, t->frames, t->nframes, fr, MT_SYM_MAX_FRAMES);
		mt_print_frames(f, fr, k, 4, "    ");
	}
}

void mt_json_tunes(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym)
{
	fputc('[', f);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < p->ntunes; i++) {
		const struct mt_tune_call *t = &p->tunes[i];
		fprintf(f, "%s\n        {\"time_s\": %.6f, \"thread\": %u, \"function\": \"%s\", ",
			i ? "," : "", rel_s(p, t->ts), t->tid, mt_tune_function(t));
		fputs("\"param\": ", f);
		mt_json_str(f,
			    t->m.call == MT_TUNE_MALLOPT ? mt_tune_param_name(t->m.param) : NULL);
		fprintf(f, ", \"raw_param\": %lld, \"value\": %lld, \"result\": %lld,\n         ",
			(long long)t->m.param, (long long)t->m.value, (long long)t->m.result);
		int k = mt_stack_frames(sym, t->frames, t->nframes, fr, MT_SYM_MAX_FRAMES);
		char name[512];
		fputs("\"site\": ", f);
		mt_json_str(f, k ? mt_frame_label(&fr[mt_useful_frame(fr, k)], name, sizeof name) :
				   NULL);
		fputs(", \"frames\": ", f);
		mt_json_frames(f, fr, k);
		fputc('}', f);
	}
	fputs(p->ntunes ? "\n      ]" : "]", f);
}
