/*
 * folded.c - folded stacks, one line per call site: frames from the
 * outermost to the allocating function, separated by ';', then the weight
 * (flamegraph.pl, inferno-flamegraph and speedscope read it).  Sites of
 * weight 0 are left out; several processes are merged.
 */
#include "export.h"

#include <stdlib.h>

int mt_export_folded(struct mt_export_ctx *x, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct mt_recording *rec = &x->sel->matched;
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	char buf[300];
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (!mt_export_wants(x, p))
			continue;
		struct mt_symbolizer *sym = mt_process_symbolizer(p);
		for (uint32_t s = 0; s < p->figures.nsites; s++) {
			uint64_t w = mt_export_site_weight(x, p, s);
			if (!w)
				continue;
			int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
			for (int k = n - 1; k >= 0; k--) {
				const char *name = mt_frame_name(&fr[k], buf, sizeof buf);
				/* ';' separates frames and the last ' ' the weight */
				for (const char *c = name; *c; c++)
					fputc(*c == ';' ? ':' : *c == '\n' ? ' ' : *c, x->out);
				if (k)
					fputc(';', x->out);
			}
			fprintf(x->out, " %llu\n", (unsigned long long)w);
		}
		mt_sym_free(sym);
	}
	return 0;
}
