/*
 * export_gprof2dot.c - not written yet.
 */
#include "export.h"

int mt_export_gprof2dot(struct mt_export_ctx *x, char *err, size_t errlen)
{
	(void)x;
	snprintf(err, errlen, "the gprof2dot format is not implemented yet");
	return -1;
}
