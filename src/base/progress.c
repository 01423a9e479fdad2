/*
 * progress.c - see progress.h: the steps' calls, passed to the reporter
 * the command line installed, if any.
 */
#include "progress.h"

#include <stddef.h>

static const struct mt_progress_reporter *reporter;

void mt_progress_install(const struct mt_progress_reporter *r)
{
	reporter = r;
}

void mt_progress_start(struct mt_progress *p, const char *verb, const char *what)
{
	*p = (struct mt_progress){ .verb = verb, .what = what };
	if (reporter)
		reporter->start(p);
}

void mt_progress_at(struct mt_progress *p, uint64_t done, uint64_t total)
{
	if (reporter)
		reporter->at(p, done, total);
}

void mt_progress_clear(struct mt_progress *p)
{
	if (reporter)
		reporter->clear(p);
}
