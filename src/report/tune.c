/*
 * tune.c - how the reports name the calls that tuned the allocator
 * (mallopt, malloc_trim: MT_EXT_MALLOPT): glibc's names of mallopt's
 * parameters, and a call written as C.  The text report's section
 * (report.c), the JSON report's "mallopts" (json.c), the static page's
 * timeline (export/html.c) and the server's /mallopts use them.
 */
#include "report.h"

#include <stdio.h>

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

char *mt_tune_text(const struct mt_tune_call *t, char *buf, size_t len)
{
	const char *name = mt_tune_param_name(t->m.param);
	if (t->m.call == MT_TUNE_MALLOC_TRIM)
		snprintf(buf, len, "malloc_trim(%lld) = %lld", (long long)t->m.value,
			 (long long)t->m.result);
	else if (name)
		snprintf(buf, len, "mallopt(%s, %lld) = %lld", name, (long long)t->m.value,
			 (long long)t->m.result);
	else
		snprintf(buf, len, "mallopt(%lld, %lld) = %lld", (long long)t->m.param,
			 (long long)t->m.value, (long long)t->m.result);
	return buf;
}
