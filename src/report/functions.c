/*
 * functions.c - `memtrace report --functions`, `--callers FN` and
 * `--callees FN`: heaptrack_print's per-function figures (self and
 * inclusive, for every weight) and a function's callers or callees, as
 * text and as keys of the JSON report.  The figures: analyse/functions.h.
 */
#include "report.h"
#include "analyse/functions.h"
#include "base/json.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* The weights a text table shows, and whether each is bytes. */
static const struct {
	int w, count_w; /* count_w: the blocks beside a byte figure, or -1 */
	const char *head;
} cols[] = {
	{ MT_FW_ALLOCATIONS, -1, "allocations" },
	{ MT_FW_ALLOCATED_BYTES, -1, "allocated" },
	{ MT_FW_LEAKED_BYTES, MT_FW_LEAKED_ALLOCATIONS, "leaked" },
	{ MT_FW_PEAK_BYTES, MT_FW_PEAK_ALLOCATIONS, "peak" },
	{ MT_FW_TEMPORARY, -1, "temporary" },
};
#define NCOLS (sizeof cols / sizeof *cols)

static int is_bytes(int w)
{
	return w == MT_FW_ALLOCATED_BYTES || w == MT_FW_LEAKED_BYTES || w == MT_FW_PEAK_BYTES;
}

static const char *fig(uint64_t v, int w, char *buf)
{
	return is_bytes(w) ? mt_fmt_bytes(v, buf) : mt_fmt_count(v, buf);
}

static const char *weight_words(int w)
{
	switch (w) {
	case MT_FW_LEAKED_BYTES:
		return "leaked bytes";
	case MT_FW_PEAK_BYTES:
		return "bytes at the peak";
	case MT_FW_TEMPORARY:
		return "temporary allocations";
	case MT_FW_ALLOCATIONS:
		return "allocations";
	default:
		return "allocated bytes";
	}
}

/* FN's name (its template arguments folded unless FULL) and file. */
static void name_cell(FILE *f, const struct mt_func *fn, int full)
{
	char buf[2048];
	mt_text_str(f, full ? fn->name : mt_fold_name(fn->name, buf, sizeof buf));
	if (fn->file) {
		const char *b = strrchr(fn->file, '/');
		fputs(" [", f);
		mt_text_str(f, b ? b + 1 : fn->file);
		fputc(']', f);
	}
	fputc('\n', f);
}

static void functions_text(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			   const struct mt_report_opts *o)
{
	struct mt_functions fs;
	mt_functions_build(&fs, p, sym);
	int w = mt_view_weight(o->view);
	size_t n;
	size_t *order = mt_functions_rank(&fs, w, &n);
	size_t lim = o->limit > 0 ? (size_t)o->limit : 30;
	fprintf(f,
		"\nFUNCTIONS by inclusive %s (self: what the function asked the allocator for "
		"itself; incl.: with everything it called)\n",
		weight_words(w));
	fputs(" ", f);
	for (size_t c = 0; c < NCOLS; c++)
		fprintf(f, " %19s", cols[c].head);
	fputs("\n ", f);
	for (size_t c = 0; c < NCOLS; c++)
		fprintf(f, " %9s %9s", "self", "incl.");
	fputs("  function\n", f);
	char a[32], b[32];
	for (size_t i = 0; i < n && i < lim; i++) {
		const struct mt_func *fn = &fs.v[order[i]];
		fputs(" ", f);
		for (size_t c = 0; c < NCOLS; c++)
			fprintf(f, " %9s %9s", fig(fn->self[cols[c].w], cols[c].w, a),
				fig(fn->incl[cols[c].w], cols[c].w, b));
		fputs("  ", f);
		name_cell(f, fn, o->fit.full_names);
	}
	if (n > lim)
		fprintf(f, "  ... and %zu more function%s (use -n)\n", n - lim,
			n - lim == 1 ? "" : "s");
	free(order);
	mt_functions_free(&fs);
}

/* FN's own line: its self and inclusive figures, or 0 when P has no FN. */
static int function_head(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			 const char *name)
{
	struct mt_functions fs;
	mt_functions_build(&fs, p, sym);
	const struct mt_func *fn = mt_functions_find(&fs, name);
	if (fn) {
		char a[32], b[32];
		fputs("\nFUNCTION ", f);
		name_cell(f, fn, 1); /* as the user named it */
		for (int k = 0; k < 2; k++) {
			const uint64_t *v = k ? fn->incl : fn->self;
			fprintf(f, "  %-10s", k ? "inclusive:" : "self:");
			for (size_t c = 0; c < NCOLS; c++) {
				fprintf(f, "%s%s %s", c ? ", " : " ", cols[c].head,
					fig(v[cols[c].w], cols[c].w, a));
				if (cols[c].count_w >= 0)
					fprintf(f, " in %s", mt_fmt_count(v[cols[c].count_w], b));
			}
			fputc('\n', f);
		}
	}
	mt_functions_free(&fs);
	return fn != NULL;
}

static int neighbours_text(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			   const struct mt_report_opts *o, int callers)
{
	const char *name = callers ? o->callers : o->callees;
	if (!function_head(f, p, sym, name))
		return 0;
	struct mt_functions fs;
	mt_functions_neighbours(&fs, p, sym, name, callers);
	int w = mt_view_weight(o->view);
	size_t n;
	size_t *order = mt_functions_rank(&fs, w, &n);
	fprintf(f, "\n%s (what went through each, by %s)\n ", callers ? "CALLERS" : "CALLEES",
		weight_words(w));
	for (size_t c = 0; c < NCOLS; c++)
		fprintf(f, " %11s", cols[c].head);
	fputs("  function\n", f);
	char a[32];
	for (size_t i = 0; i < n; i++) {
		const struct mt_func *fn = &fs.v[order[i]];
		fputs(" ", f);
		for (size_t c = 0; c < NCOLS; c++)
			fprintf(f, " %11s", fig(fn->incl[cols[c].w], cols[c].w, a));
		fputs("  ", f);
		name_cell(f, fn, o->fit.full_names);
	}
	free(order);
	mt_functions_free(&fs);
	fprintf(f, "\n%s TREE (%s)\n", callers ? "CALLER" : "CALLEE",
		callers ? "from the function towards main" :
			  "from the function towards the allocator");
	mt_print_fn_tree(f, p, sym, name, callers, o->view, o->threshold, &o->fit);
	return 1;
}

int mt_report_functions_text(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			     const struct mt_report_opts *o, size_t idx)
{
	(void)idx;
	functions_text(f, p, sym, o);
	return 1;
}

int mt_report_callers_text(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			   const struct mt_report_opts *o, size_t idx)
{
	(void)idx;
	return neighbours_text(f, p, sym, o, 1);
}

int mt_report_callees_text(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			   const struct mt_report_opts *o, size_t idx)
{
	(void)idx;
	return neighbours_text(f, p, sym, o, 0);
}

/* ---- JSON ---- */

static void weights_json(FILE *f, const uint64_t *v)
{
	fputc('{', f);
	for (int i = 0; i < MT_FW_COUNT; i++)
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "", mt_fn_weight_names[i],
			(unsigned long long)v[i]);
	fputc('}', f);
}

static void func_json(FILE *f, const struct mt_func *fn, int self)
{
	fputs("{\"name\": ", f);
	mt_json_str(f, fn->name);
	fputs(", \"file\": ", f);
	mt_json_str(f, fn->file);
	fputs(", \"module\": ", f);
	mt_json_str(f, fn->module);
	fprintf(f, ", \"sites\": %u", fn->sites);
	if (self) {
		fputs(", \"self\": ", f);
		weights_json(f, fn->self);
	}
	fputs(", \"inclusive\": ", f);
	weights_json(f, fn->incl);
	fputc('}', f);
}

static void neighbours_json(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			    const struct mt_report_opts *o, int callers)
{
	struct mt_functions fs;
	mt_functions_neighbours(&fs, p, sym, callers ? o->callers : o->callees, callers);
	size_t n;
	size_t *order = mt_functions_rank(&fs, mt_view_weight(o->view), &n);
	fprintf(f, ",\n      \"%s\": [", callers ? "callers" : "callees");
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",\n        " : "\n        ", f);
		func_json(f, &fs.v[order[i]], 0);
	}
	fputs(n ? "\n      ]" : "]", f);
	free(order);
	mt_functions_free(&fs);
}

int mt_report_functions_json(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			     const struct mt_report_opts *o, size_t idx)
{
	(void)idx;
	struct mt_functions fs;
	mt_functions_build(&fs, p, sym);
	size_t n;
	size_t *order = mt_functions_rank(&fs, mt_view_weight(o->view), &n);
	if (o->limit > 0 && (size_t)o->limit < n)
		n = (size_t)o->limit;
	fputs(",\n      \"functions\": [", f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",\n        " : "\n        ", f);
		func_json(f, &fs.v[order[i]], 1);
	}
	fputs(n ? "\n      ]" : "]", f);
	free(order);
	mt_functions_free(&fs);
	return 1;
}

/* "callers_of" (or "callees_of"): the function --callers (--callees)
 * names, or null, then its callers (callees). */
static int function_json(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			 const struct mt_report_opts *o, int callers)
{
	struct mt_functions fs;
	mt_functions_build(&fs, p, sym);
	const struct mt_func *fn = mt_functions_find(&fs, callers ? o->callers : o->callees);
	fprintf(f, ",\n      \"%s\": ", callers ? "callers_of" : "callees_of");
	if (fn)
		func_json(f, fn, 1);
	else
		fputs("null", f);
	if (fn)
		neighbours_json(f, p, sym, o, callers);
	else
		fprintf(f, ",\n      \"%s\": []", callers ? "callers" : "callees");
	mt_functions_free(&fs);
	return fn != NULL;
}

int mt_report_callers_json(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			   const struct mt_report_opts *o, size_t idx)
{
	(void)idx;
	return function_json(f, p, sym, o, 1);
}

int mt_report_callees_json(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			   const struct mt_report_opts *o, size_t idx)
{
	(void)idx;
	return function_json(f, p, sym, o, 0);
}
