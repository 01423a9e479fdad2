/*
 * speedscope.c - speedscope's file format (a JSON document that
 * speedscope.app and the `speedscope` command open): the distinct frames of
 * every call site once in shared.frames, then per process two "sampled"
 * profiles, one sample per call site (its stack, outermost frame first)
 * weighted by a figure of that site: the --weight chosen, then its
 * companion count or byte figure (allocated bytes and allocations, leaked
 * bytes and leaked allocations, bytes and blocks live at the peak; the
 * temporary allocations alone).  Sites of weight 0 are left out of a
 * profile.
 */
#include "config.h"
#include "export.h"
#include "intern.h"
#include "base/util.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

/* The figures a profile can weigh sites by. */
enum figure { F_BYTES, F_ALLOCS, F_LEAKED, F_LEAKED_N, F_PEAK, F_PEAK_N, F_TEMPORARY };

/* Each a view's amount (analyse/sites.h): its bytes or its count. */
static const struct {
	const char *name, *unit;
	enum mt_view view;
	int count;
} figures[] = {
	[F_BYTES] = { "allocated bytes", "bytes", MT_VIEW_SUMMARY, 0 },
	[F_ALLOCS] = { "allocations", "none", MT_VIEW_SUMMARY, 1 },
	[F_LEAKED] = { "leaked bytes", "bytes", MT_VIEW_LEAKS, 0 },
	[F_LEAKED_N] = { "leaked allocations", "none", MT_VIEW_LEAKS, 1 },
	[F_PEAK] = { "bytes live at the peak", "bytes", MT_VIEW_PEAK, 0 },
	[F_PEAK_N] = { "allocations live at the peak", "none", MT_VIEW_PEAK, 1 },
	[F_TEMPORARY] = { "temporary allocations", "none", MT_VIEW_TEMPORARY, 1 },
};

static uint64_t figure_of(const struct mt_site_stats *s, enum figure f)
{
	struct mt_amount a = mt_site_amount(s, figures[f].view);
	return figures[f].count ? a.count : a.bytes;
}

/* The profiles of a process for weight W; returns how many (1 or 2). */
static int profiles_for(enum mt_weight w, enum figure out[2])
{
	switch (w) {
	case MT_W_ALLOCATIONS:
		out[0] = F_ALLOCS, out[1] = F_BYTES;
		return 2;
	case MT_W_LEAKED:
		out[0] = F_LEAKED, out[1] = F_LEAKED_N;
		return 2;
	case MT_W_PEAK:
		out[0] = F_PEAK, out[1] = F_PEAK_N;
		return 2;
	case MT_W_TEMPORARY:
		/* no byte figure of temporaries is kept per site */
		out[0] = F_TEMPORARY;
		return 1;
	default:
		out[0] = F_BYTES, out[1] = F_ALLOCS;
		return 2;
	}
}

/* ---- distinct frames: (name, file), numbered as first seen ----
 *
 * A frame is a function, as in a flamegraph: calls from different lines of
 * main are one "main".  Its line is kept when every stack passes it at the
 * same line (an allocating function's allocation, mostly), else left out. */

/* ---- the stacks of a process's sites, as frame indices root first ---- */

struct stacks {
	const struct mt_process *p;
	uint32_t *ids;
	size_t n, cap;
	size_t *off;   /* per site */
	uint32_t *len; /* per site; 0: left out */
};

static void collect(struct stacks *st, struct mt_pairs *t, const struct mt_process *p,
		    const enum figure *figs, int nfigs)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	char buf[300];
	st->p = p;
	st->off = xcalloc(p->figures.nsites + 1, sizeof *st->off);
	st->len = xcalloc(p->figures.nsites + 1, sizeof *st->len);
	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		int used = 0;
		for (int f = 0; f < nfigs; f++)
			used |= figure_of(&p->figures.sites[s], figs[f]) != 0;
		if (!used)
			continue;
		int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		if (!n)
			fr[n++] = (struct mt_frame){ 0 }; /* "[unknown]": a sample needs a frame */
		st->off[s] = st->n;
		st->len[s] = (uint32_t)n;
		for (int k = n - 1; k >= 0; k--) {
			const char *name = mt_frame_name(&fr[k], buf, sizeof buf);
			mt_grow(&st->ids, &st->cap, st->n, sizeof *st->ids);
			int added;
			uint32_t id = mt_pairs_index(t, name, fr[k].file, 0, &added);
			/* a frame's line is given only when every stack passes it there */
			if (added)
				t->v[id].aux = fr[k].line;
			else if (t->v[id].aux != fr[k].line)
				t->v[id].aux = 0;
			st->ids[st->n++] = id;
		}
	}
	mt_sym_free(sym);
}

static void stacks_free(struct stacks *st)
{
	free(st->ids);
	free(st->off);
	free(st->len);
}

/* ---- output ---- */

static void write_frames(FILE *f, const struct mt_pairs *t)
{
	fputs("  \"shared\": {\"frames\": [", f);
	for (size_t k = 0; k < t->n; k++) {
		fputs(k ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
		mt_json_str(f, t->v[k].a);
		if (t->v[k].b) {
			fputs(", \"file\": ", f);
			mt_json_str(f, t->v[k].b);
		}
		if (t->v[k].aux > 0)
			fprintf(f, ", \"line\": %d", (int)t->v[k].aux);
		fputc('}', f);
	}
	fputs("\n  ]},\n", f);
}

static void write_profile(FILE *f, const struct stacks *st, enum figure fig, int first)
{
	const struct mt_process *p = st->p;
	uint64_t total = 0;
	for (uint32_t s = 0; s < p->figures.nsites; s++)
		if (st->len[s])
			total += figure_of(&p->figures.sites[s], fig);
	char name[512];
	/* the process's name as the report gives it: its argv[0], so that a
	 * program run through a link (Debian's redis-server) goes by that */
	snprintf(name, sizeof name, "%s (pid %u): %s", mt_process_name(p), p->pid,
		 figures[fig].name);
	fputs(first ? "\n    {\"type\": \"sampled\", \"name\": " :
		      ",\n    {\"type\": \"sampled\", \"name\": ",
	      f);
	mt_json_str(f, name);
	fprintf(f,
		", \"unit\": \"%s\", \"startValue\": 0, \"endValue\": %llu,\n     \"samples\": [",
		figures[fig].unit, (unsigned long long)total);
	int n = 0;
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		if (!st->len[s] || !figure_of(&p->figures.sites[s], fig))
			continue;
		fputs(n++ ? ",\n       [" : "\n       [", f);
		for (uint32_t k = 0; k < st->len[s]; k++)
			fprintf(f, k ? ",%u" : "%u", st->ids[st->off[s] + k]);
		fputc(']', f);
	}
	fputs("],\n     \"weights\": [", f);
	n = 0;
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		uint64_t w = st->len[s] ? figure_of(&p->figures.sites[s], fig) : 0;
		if (!w)
			continue;
		if (n)
			fputs(n % 16 ? ", " : ",\n       ", f);
		fprintf(f, "%llu", (unsigned long long)w);
		n++;
	}
	fputs("]}", f);
}

int mt_export_speedscope(struct mt_export_ctx *x, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	const struct mt_recording *rec = &x->sel->matched;
	enum figure figs[2];
	int nfigs = profiles_for(x->weight, figs);
	struct mt_pairs t = { 0 };
	struct stacks *st = xcalloc(rec->nprocs + 1, sizeof *st);
	size_t nst = 0;
	/* the frames go first, so every stack is resolved before writing */
	for (size_t i = 0; i < rec->nprocs; i++)
		if (mt_export_wants(x, rec->procs[i]))
			collect(&st[nst++], &t, rec->procs[i], figs, nfigs);

	const char *base = strrchr(x->sel->path, '/');
	fprintf(x->out,
		"{\n  \"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
		"  \"exporter\": \"memtrace %s\",\n  \"name\": ",
		MEMTRACE_VERSION);
	mt_json_str(x->out, base ? base + 1 : x->sel->path);
	fputs(",\n  \"activeProfileIndex\": 0,\n", x->out);
	write_frames(x->out, &t);
	fputs("  \"profiles\": [", x->out);
	for (size_t i = 0; i < nst; i++)
		for (int f = 0; f < nfigs; f++)
			write_profile(x->out, &st[i], figs[f], i == 0 && f == 0);
	fputs("\n  ]\n}\n", x->out);

	for (size_t i = 0; i < nst; i++)
		stacks_free(&st[i]);
	free(st);
	mt_pairs_free(&t);
	return 0;
}
