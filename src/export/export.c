/*
 * export.c - what the export formats share: flamegraph weights, process
 * selection, frame names, a look-up in a pointer map.  (The table of the
 * formats is formats.c, so that calls between it and them go one way.)
 */
#include "export.h"
#include "analyse/images.h"
#include "base/ptrmap.h"
#include "base/util.h"

#include <string.h>

const char *const mt_weight_names[] = { "bytes", "allocations", "leaked", "peak", "temporary" };

enum mt_view mt_weight_view(enum mt_weight w)
{
	static const enum mt_view views[] = {
		[MT_W_BYTES] = MT_VIEW_SUMMARY,	      [MT_W_ALLOCATIONS] = MT_VIEW_FREQUENCY,
		[MT_W_LEAKED] = MT_VIEW_LEAKS,	      [MT_W_PEAK] = MT_VIEW_PEAK,
		[MT_W_TEMPORARY] = MT_VIEW_TEMPORARY,
	};
	return (unsigned)w < sizeof views / sizeof *views ? views[w] : MT_VIEW_SUMMARY;
}

const char *mt_weight_unit(enum mt_weight w)
{
	return w == MT_W_ALLOCATIONS || w == MT_W_TEMPORARY ? "allocations" : "bytes";
}

uint64_t mt_export_site_weight(const struct mt_export_ctx *x, const struct mt_process *p,
			       uint32_t s)
{
	return mt_site_measure(&p->figures.sites[s], mt_weight_view(x->weight));
}

int mt_export_wants(const struct mt_export_ctx *x, const struct mt_process *p)
{
	return (x->pid < 0 || p->pid == (uint32_t)x->pid) && mt_image_named(x->image, p);
}

static int wanted(const void *x, const struct mt_process *p)
{
	return mt_export_wants(x, p);
}

/* The processes --pid and --image select may be the images one exec
 * chain ran (env, a shell, the program): the main one when it is among
 * them, else the last, the program the chain led to (the first would be a
 * wrapper such as env, exported without a word). */
const struct mt_process *mt_export_one_process(const struct mt_export_ctx *x, const char *format,
					       size_t *idx)
{
	const struct mt_recording *rec = &x->sel->matched;
	const struct mt_process *p = mt_image_lead(rec, wanted, x);
	if (!p)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		if (rec->procs[i] == p)
			*idx = i;
		n += mt_export_wants(x, rec->procs[i]);
	}
	if (n > 1)
		mt_note("%s holds one process: exporting pid %u (%s, image %u), the %s of %zu "
			"(--image chooses another)",
			format, p->pid, mt_process_name(p), p->image,
			p == mt_recording_main(rec) ? "main one" : "last", n);
	return p;
}

const char *mt_frame_name(const struct mt_frame *f, char *buf, size_t len)
{
	return mt_frame_label(f, buf, len);
}
