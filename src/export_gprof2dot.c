/*
 * export_gprof2dot.c - memtrail's JSON for gprof2dot (`gprof2dot -f json`),
 * which draws it as a call graph:
 *   {"version": 0, "costs": [{"description", "unit"}],
 *    "functions": [{"name", "module", "process"}],
 *    "events": [{"callchain": [callee, ..., outermost caller], "cost": [N]}]}
 * One event per call site, its cost the --weight figure (allocated bytes by
 * default, where memtrail's own files hold the bytes at the peak or the
 * leaked bytes: --weight peak and --weight leaked give those).  A function
 * is a (name, module) pair; an export of several processes keeps each
 * process's functions apart, labelled by "process" (exe and pid).  Sites of
 * weight 0 are left out.
 */
#include "export.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 256

static const char *const descriptions[] = {
	[MT_W_BYTES] = "Allocated memory",
	[MT_W_ALLOCATIONS] = "Allocations",
	[MT_W_LEAKED] = "Leaked memory",
	[MT_W_PEAK] = "Memory live at the peak",
	[MT_W_TEMPORARY] = "Temporary allocations",
};

/* ---- distinct functions: (name, module, process), numbered as first seen ---- */

struct fn_key {
	char *name, *module;
	uint32_t proc; /* index + 1 of its process in the recording; 0: one process exported */
	uint64_t hash;
};

struct functions {
	struct fn_key *v;
	size_t n, cap;
	uint32_t *slot; /* index + 1, 0: empty */
	size_t mask;
};

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ (s ? 0xff : 0xfe)) * 1099511628211ull;
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void functions_grow(struct functions *t)
{
	size_t n = t->mask ? (t->mask + 1) * 2 : 1024;
	free(t->slot);
	t->slot = xcalloc(n, sizeof *t->slot);
	t->mask = n - 1;
	for (size_t k = 0; k < t->n; k++) {
		size_t i = t->v[k].hash & t->mask;
		while (t->slot[i])
			i = (i + 1) & t->mask;
		t->slot[i] = (uint32_t)k + 1;
	}
}

static uint32_t function_index(struct functions *t, const char *name, const char *module, uint32_t proc)
{
	uint64_t h = hash_str(hash_str(1469598103934665603ull, name), module) ^ proc * 0x9e3779b97f4a7c15ull;
	if ((t->n + 1) * 2 > t->mask + 1)
		functions_grow(t);
	size_t i = h & t->mask;
	for (; t->slot[i]; i = (i + 1) & t->mask) {
		const struct fn_key *k = &t->v[t->slot[i] - 1];
		if (k->hash == h && k->proc == proc && same(k->name, name) && same(k->module, module))
			return t->slot[i] - 1;
	}
	mt_grow(&t->v, &t->cap, t->n, sizeof *t->v);
	t->v[t->n] = (struct fn_key){xstrdup(name), module ? xstrdup(module) : NULL, proc, h};
	t->slot[i] = (uint32_t)++t->n;
	return (uint32_t)(t->n - 1);
}

static void functions_free(struct functions *t)
{
	for (size_t k = 0; k < t->n; k++) {
		free(t->v[k].name);
		free(t->v[k].module);
	}
	free(t->v);
	free(t->slot);
}

/* ---- output ---- */

/* The events of process P (its functions numbered into T as they come);
 * returns the number written so far. */
static size_t events(FILE *f, struct functions *t, const struct mt_process *p, enum mt_weight w, uint32_t proc,
		     size_t written)
{
	static struct mt_frame fr[MAX_FRAMES];
	char buf[300];
	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	for (uint32_t s = 0; s < p->col.nsites; s++) {
		uint64_t cost = mt_weight_site(&p->col.sites[s], w);
		if (!cost)
			continue;
		int n = mt_site_frames(p, sym, s, fr, MAX_FRAMES);
		if (!n)
			fr[n++] = (struct mt_frame){0}; /* "[unknown]": a callchain needs a function */
		fputs(written++ ? ",\n    {\"callchain\": [" : "\n    {\"callchain\": [", f);
		for (int k = 0; k < n; k++) {
			const char *name = mt_frame_name(&fr[k], buf, sizeof buf);
			const char *mod = fr[k].module ? strrchr(fr[k].module, '/') : NULL;
			uint32_t id = function_index(t, name, mod ? mod + 1 : fr[k].module, proc);
			fprintf(f, k ? ", %u" : "%u", id);
		}
		fprintf(f, "], \"cost\": [%llu]}", (unsigned long long)cost);
	}
	mt_sym_free(sym);
	return written;
}

/* A process as gprof2dot labels its functions: "exe (pid N)". */
static void process_label(FILE *f, const struct mt_process *p)
{
	const char *base = p->exe ? strrchr(p->exe, '/') : NULL;
	char buf[512];
	snprintf(buf, sizeof buf, "%s (pid %u)", base ? base + 1 : p->exe ? p->exe : "?", p->pid);
	mt_json_str(f, buf);
}

static void write_functions(FILE *f, const struct functions *t, const struct mt_recording *rec)
{
	fputs("  \"functions\": [", f);
	for (size_t k = 0; k < t->n; k++) {
		fputs(k ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
		mt_json_str(f, t->v[k].name);
		if (t->v[k].module) {
			fputs(", \"module\": ", f);
			mt_json_str(f, t->v[k].module);
		}
		if (t->v[k].proc) {
			fputs(", \"process\": ", f);
			process_label(f, rec->procs[t->v[k].proc - 1]);
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
	fprintf(x->out, "{\n  \"version\": 0,\n  \"costs\": [{\"description\": \"%s\", \"unit\": \"%s\"}],\n",
		descriptions[x->weight], mt_weight_unit(x->weight));
	/* functions are numbered while the events are written: they go last */
	fputs("  \"events\": [", x->out);
	struct functions t = {0};
	size_t written = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (mt_export_wants(x, p))
			written = events(x->out, &t, p, x->weight, nprocs > 1 ? (uint32_t)i + 1 : 0, written);
	}
	fputs(written ? "\n  ],\n" : "],\n", x->out);
	write_functions(x->out, &t, rec);
	fputs("}\n", x->out);
	functions_free(&t);
	return 0;
}
