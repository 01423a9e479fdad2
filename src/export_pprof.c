/*
 * export_pprof.c - not written yet.
 */
#include "export.h"

int mt_export_pprof(struct mt_export_ctx *x, char *err, size_t errlen)
{
	(void)x;
	snprintf(err, errlen, "the pprof format is not implemented yet");
	return -1;
}
