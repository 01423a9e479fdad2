/*
 * views.c - the views of `memtrace report`, one entry each: the option
 * that asks for it and its lines in report --help, and for a section (a
 * view of a process's functions or sizes rather than of its sites) what
 * writes it as text and as JSON.  report.c and json.c show the sections
 * asked for through this table, so that a new one is an entry here, the
 * file that writes it and its field in mt_report_opts.
 */
#include "report.h"

#include <string.h>

static int asked_functions(const struct mt_report_opts *o)
{
	return o->functions;
}

static int asked_callers(const struct mt_report_opts *o)
{
	return o->callers != NULL;
}

static int asked_callees(const struct mt_report_opts *o)
{
	return o->callees != NULL;
}

static int asked_sizes(const struct mt_report_opts *o)
{
	return o->sizes;
}

/* In the order --help lists them and a report shows the sections. */
const struct mt_report_view mt_report_views[] = {
	/* the views of the sites (analyse/sites.h's enum mt_view; their
	 * options: cli/options.h's MT_OPT_VIEWS), shown by report.c */
	{ .option = "--summary", .help = "totals and the top call sites of each kind (default)" },
	{ .option = "--leaks", .help = "what was still allocated at the end, as a call tree" },
	{ .option = "--peak", .help = "what was live at the moment of the peak, as a call tree" },
	{ .option = "--temporary",
	  .help = "allocations freed by the very next allocator call of\n"
		  "their thread, as a call tree" },
	{ .option = "--frequency", .help = "calls to the allocator per call site, as a call tree" },
	/* the sections */
	{ .option = "--functions",
	  .help = "self and inclusive figures of every function, for every\n"
		  "weight, ranked by the view's (heaptrack_print's)",
	  .asked = asked_functions,
	  .text = mt_report_functions_text,
	  .json = mt_report_functions_json },
	{ .option = "--callers",
	  .argh = "FN",
	  .help = "function FN's figures, its callers and their tree",
	  .asked = asked_callers,
	  .text = mt_report_callers_text,
	  .json = mt_report_callers_json },
	{ .option = "--callees",
	  .argh = "FN",
	  .help = "function FN's figures, its callees and their tree\n"
		  "(FN as the report writes it: a name, or module+0xoffset)",
	  .asked = asked_callees,
	  .text = mt_report_callees_text,
	  .json = mt_report_callees_json },
	{ .option = "--sizes",
	  .help = "histograms of allocation sizes and of lifetimes",
	  .asked = asked_sizes,
	  .text = mt_report_sizes_text,
	  .json = mt_report_sizes_json },
	{ .option = NULL },
};

void mt_report_views_help(FILE *f)
{
	for (const struct mt_report_view *v = mt_report_views; v->option; v++) {
		char spelled[32];
		snprintf(spelled, sizeof spelled, "%s%s%s", v->option, v->argh ? " " : "",
			 v->argh ? v->argh : "");
		fprintf(f, "  %-15s", spelled);
		for (const char *line = v->help; *line;) {
			size_t n = strcspn(line, "\n");
			fprintf(f, "%*s%.*s\n", line == v->help ? 0 : 17, "", (int)n, line);
			line += n + (line[n] == '\n');
		}
	}
}

const struct mt_report_view *mt_report_section(const struct mt_report_opts *o)
{
	for (const struct mt_report_view *v = mt_report_views; v->option; v++)
		if (v->asked && v->asked(o))
			return v;
	return NULL;
}

int mt_report_sections(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
		       const struct mt_report_opts *o, size_t idx, int json)
{
	int found = 1;
	for (const struct mt_report_view *v = mt_report_views; v->option; v++)
		if (v->asked && v->asked(o))
			found &= json ? v->json(f, p, sym, o, idx) : v->text(f, p, sym, o, idx);
	return found;
}
