/*
 * images.c - which process images of a recording a reader shows (images.h).
 */
#include "images.h"

#include <stdlib.h>
#include <string.h>

int mt_image_is_number(const char *sel)
{
	if (!sel || !*sel)
		return 0;
	for (const char *c = sel; *c; c++)
		if (*c < '0' || *c > '9')
			return 0;
	return 1;
}

static const char *file_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

int mt_image_named(const char *sel, const struct mt_process *p)
{
	if (!sel)
		return 1;
	if (mt_image_is_number(sel)) {
		/* (a number past any image's, however long, names none) */
		return strtoull(sel, NULL, 10) == p->image;
	}
	if (!strcmp(sel, mt_process_name(p)))
		return 1;
	if (p->exe && (!strcmp(sel, p->exe) || !strcmp(sel, file_name(p->exe))))
		return 1;
	return p->argc && !strcmp(sel, p->argv[0]);
}

const struct mt_process *mt_image_lead(const struct mt_recording *rec,
				       int (*wants)(const void *ctx, const struct mt_process *p),
				       const void *ctx)
{
	const struct mt_process *m = mt_recording_main(rec), *last = NULL;
	for (size_t i = 0; i < rec->nprocs; i++)
		if (wants(ctx, rec->procs[i])) {
			if (rec->procs[i] == m)
				return m;
			last = rec->procs[i];
		}
	return last;
}
