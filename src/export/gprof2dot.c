/*
 * gprof2dot.c - memtrail's JSON for gprof2dot (`gprof2dot -f json`),
 * which draws it as a call graph:
 *   {"version": 0, "costs": [{"description", "unit"}],
 *    "functions": [{"name", "module", "process"}],
 *    "events": [{"callchain": [callee, ..., outermost caller], "cost": [N]}]}
 * One event per call site, its cost the --weight figure (allocated bytes by
 * default, where memtrail's own files hold the bytes at the peak or the
 * leaked bytes: --weight peak and --weight leaked give those).  A function
 * is a (name, module) pair; an export of several processes keeps each
 * process's functions apart, labelled by "process" (name and pid).  Sites of
 * weight 0 are left out.
 */
#include "export.h"
#include "intern.h"
#include "base/util.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

static const char *const descriptions[] = {
	[MT_W_BYTES] = "Allocated memory",
	[MT_W_ALLOCATIONS] = "Allocations",
	[MT_W_LEAKED] = "Leaked memory",
	[MT_W_PEAK] = "Memory live at the peak",
	[MT_W_TEMPORARY] = "Temporary allocations",
};

/* ---- output ---- */

/* The events of process P (its functions numbered into T as they come);
 * returns the number written so far. */
static size_t events(FILE *f, struct mt_pairs *t, const struct mt_process *p, enum mt_weight w,
		     uint32_t proc, size_t written)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	char buf[300];
	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		uint64_t cost = mt_site_measure(&p->figures.sites[s], mt_weight_view(w));
		if (!cost)
			continue;
		int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		if (!n)
			fr[n++] = (struct mt_frame){
				0
			}; /* "[unknown]": a callchain needs a function */
		fputs(written++ ? ",\n    {\"callchain\": [" : "\n    {\"callchain\": [", f);
		for (int k = 0; k < n; k++) {
			const char *name = mt_frame_name(&fr[k], buf, sizeof buf);
			const char *mod = fr[k].module ? strrchr(fr[k].module, '/') : NULL;
			uint32_t id =
				mt_pairs_index(t, name, mod ? mod + 1 : fr[k].module, proc, NULL);
			fprintf(f, k ? ", %u" : "%u", id);
		}
		fprintf(f, "], \"cost\": [%llu]}", (unsigned long long)cost);
	}
	mt_sym_free(sym);
	return written;
}

/* A process as gprof2dot labels its functions: "name (pid N)", its name
 * the report's (argv[0]: a program run through a link goes by that). */
static void process_label(FILE *f, const struct mt_process *p)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s (pid %u)", mt_process_name(p), p->pid);
	mt_json_str(f, buf);
}

static void write_functions(FILE *f, const struct mt_pairs *t, const struct mt_recording *rec)
{
	fputs("  \"functions\": [", f);
	for (size_t k = 0; k < t->n; k++) {
		fputs(k ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
		mt_json_str(f, t->v[k].a);
		if (t->v[k].b) {
			fputs(", \"module\": ", f);
			mt_json_str(f, t->v[k].b);
		}
		if (t->v[k].tag) {
			fputs(", \"process\": ", f);
			process_label(f, rec->procs[t->v[k].tag - 1]);
		}
		fputc('}', f);
	}
	fputs("\n  ]\n", f);
}

int mt_export_gprof2dot(struct mt_export_ctx *x, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	const struct mt_recording *rec = &x->sel->matched;
	size_t nprocs = 0;
	for (size_t i = 0; i < rec->nprocs; i++)
		nprocs += mt_export_wants(x, rec->procs[i]);
	fprintf(x->out,
		"{\n  \"version\": 0,\n  \"costs\": [{\"description\": \"%s\", \"unit\": \"%s\"}],\n",
		descriptions[x->weight], mt_weight_unit(x->weight));
	/* functions are numbered while the events are written: they go last */
	fputs("  \"events\": [", x->out);
	struct mt_pairs t = { 0 };
	size_t written = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (mt_export_wants(x, p))
			written = events(x->out, &t, p, x->weight, nprocs > 1 ? (uint32_t)i + 1 : 0,
					 written);
	}
	fputs(written ? "\n  ],\n" : "],\n", x->out);
	write_functions(x->out, &t, rec);
	fputs("}\n", x->out);
	mt_pairs_free(&t);
	return 0;
}
