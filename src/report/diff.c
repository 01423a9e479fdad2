/*
 * diff.c - `memtrace diff`: what changed between two recordings, as a text
 * tree with signed figures or as JSON in the report's schema.
 *
 * The JSON is a report (memtrace-report(1)) of one process standing for
 * every process of NEW, whose figures are NEW minus BASE (signed), and
 * where the totals and every site carry "diff": {"base": {...}, "new":
 * {...}}: the figures of each side as a report gives them.
 */
#include "report.h"
#include "analyse/diff.h"
#include "base/json.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* ---- text ---- */

static void totals_text(FILE *f, const struct mt_totals *b, const struct mt_totals *n)
{
	char x[32], y[32], z[32], w[32];
	fprintf(f, "  %-16s %s (%s) -> %s (%s)\n", "allocations:", mt_fmt_count(b->allocations, x),
		mt_fmt_bytes(b->allocated_bytes, y), mt_fmt_count(n->allocations, z),
		mt_fmt_bytes(n->allocated_bytes, w));
	fprintf(f, "  %-16s %s in %s blocks -> %s in %s blocks\n",
		"peak:", mt_fmt_bytes(b->peak_bytes, x), mt_fmt_count(b->peak_count, y),
		mt_fmt_bytes(n->peak_bytes, z), mt_fmt_count(n->peak_count, w));
	fprintf(f, "  %-16s %s in %s allocations -> %s in %s allocations\n",
		"leaked:", mt_fmt_bytes(b->live_bytes, x), mt_fmt_count(b->live_count, y),
		mt_fmt_bytes(n->live_bytes, z), mt_fmt_count(n->live_count, w));
	fprintf(f, "  %-16s %s -> %s\n", "temporary:", mt_fmt_count(b->temporary, x),
		mt_fmt_count(n->temporary, y));
}

int mt_report_diff_text(FILE *f, const struct mt_diff *d, const char *base, const char *new,
			const struct mt_report_opts *o)
{
	fputs("base: ", f);
	mt_text_str(f, base);
	fputs("\nnew:  ", f);
	mt_text_str(f, new);
	fputc('\n', f);
	if (d->sampled)
		fputs("(sampled: every figure of a sampled recording is an estimate)\n", f);
	totals_text(f, &d->base, &d->new);
	enum mt_view v = o->view;
	int64_t tot = mt_diff_total_measure(d, v);
	int bytes = v != MT_VIEW_TEMPORARY && v != MT_VIEW_FREQUENCY;
	fprintf(f, "\n%s, new minus base: ", v == MT_VIEW_SUMMARY ? "allocated" : mt_view_names[v]);
	char a[32];
	uint64_t m = tot < 0 ? (uint64_t)0 - (uint64_t)tot : (uint64_t)tot;
	fprintf(f, "%s%s\n",
		tot > 0 ? "+" :
		tot < 0 ? "-" :
			  "",
		bytes ? mt_fmt_bytes(m, a) : mt_fmt_count(m, a));
	size_t n;
	uint32_t *sites = mt_diff_rank(d, v, !o->unchanged, &n);
	size_t same = d->n - n; /* the sites of which no figure moved */
	if (o->limit > 0 && (size_t)o->limit < n)
		n = (size_t)o->limit;
	size_t left_out = n ? mt_print_diff_tree(f, d, sites, n, v, o->threshold, o->unchanged) : 0;
	if (left_out == n)
		fputs("  no call site changed\n", f);
	same += left_out;
	if (same)
		fprintf(f, "  (%zu unchanged call site%s not shown: --unchanged shows them)\n",
			same, mt_s(same));
	free(sites);
	return 0;
}

/* ---- JSON ---- */

int mt_report_diff_json(FILE *f, const struct mt_diff *d, const struct mt_recording *base,
			const struct mt_recording *new, const struct mt_report_opts *o)
{
	enum mt_view v = o->view;
	const struct mt_process *p = new->nprocs ? new->procs[0] : NULL;
	fprintf(f, "{\n  \"memtrace_report\": 1,\n  \"view\": \"%s\",\n  \"recording\": ",
		mt_view_names[v]);
	mt_json_str(f, new->path);
	fputs(",\n  \"diff\": {\"base\": ", f);
	mt_json_str(f, base->path);
	fputs(", \"new\": ", f);
	mt_json_str(f, new->path);
	fprintf(f, "},\n  \"truncated\": %s,\n  \"processes\": [\n    {\n      ",
		base->truncated || new->truncated ? "true" : "false");
	if (p)
		mt_json_identity(f, p, ",\n      ", 0);
	else
		fputs("\"pid\": 0, \"ppid\": 0, \"exe\": null, \"argv\": [], \"backend\": null", f);
	fputs(",\n      \"totals\": {", f);
	mt_json_totals_delta(f, &d->base, &d->new);
	fputs(",\n        \"diff\": {\"base\": {", f);
	mt_json_totals_side(f, &d->base);
	fputs("}, \"new\": {", f);
	mt_json_totals_side(f, &d->new);
	fputs("}}},\n      \"sites\": [", f);
	size_t n;
	uint32_t *sites = mt_diff_rank(d, v, 0, &n);
	if (o->limit > 0 && (size_t)o->limit < n)
		n = (size_t)o->limit;
	for (size_t i = 0; i < n; i++) {
		const struct mt_diff_site *s = &d->sites[sites[i]];
		fprintf(f, "%s\n        {\"id\": %u, ", i ? "," : "", sites[i]);
		mt_json_site_delta(f, &s->base, &s->new);
		fprintf(f, ",\n         \"allocator\": \"%s\",\n         \"frames\": ",
			mt_fn_names[s->fn]);
		mt_json_frames(f, s->frames, s->nframes);
		fputs(",\n         \"diff\": {\"base\": {", f);
		mt_json_site_figures(f, &s->base);
		fputs("},\n                  \"new\": {", f);
		mt_json_site_figures(f, &s->new);
		fputs("}}}", f);
	}
	free(sites);
	fputs(n ? "\n      ]\n    }\n  ]\n}\n" : "]\n    }\n  ]\n}\n", f);
	return 0;
}
