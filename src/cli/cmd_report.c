/*
 * cmd_report.c - `memtrace report`: text trees or JSON from a recording.
 */
#include "commands.h"
#include "options.h"
#include "report/report.h"
#include "analyse/select.h"
#include "query/where.h"
#include "base/util.h"

#include <stdlib.h>

/* --help up to its options: the views (report/views.c). */
static void prologue(FILE *f)
{
	fputs("usage: memtrace report [VIEW] [options] FILE\n"
	      "\n"
	      "Shows what a recording says.  VIEW is one of:\n",
	      f);
	mt_report_views_help(f);
	fputs("\n"
	      "options:\n",
	      f);
}

static const char epilogue[] =
	"\n"
	"With filters, every figure counts only the allocations they match.\n";

/* The report of REC on OUT: JSON, or text fitted to O's width. */
static int report_to(FILE *out, struct mt_recording *rec, const struct mt_report_opts *o)
{
	if (o->json)
		return mt_report_json(out, rec, o);
	FILE *f = mt_fit_open(out, o->fit.width);
	int r = mt_report_text(f, rec, o);
	mt_fit_close(f, out);
	return r;
}

/* --callers/--callees FN: the report is held until it is known whether FN
 * is on any stack, so that a name that is not gives one error line and no
 * report before it.  Returns what mt_report_* return. */
static int report_held(struct mt_recording *rec, const struct mt_report_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return report_to(stdout, rec, o);
	int r = report_to(f, rec, o);
	if (fclose(f) != 0)
		mt_oom(len);
	if (r == 0)
		fwrite(buf, 1, len, stdout);
	free(buf);
	return r;
}

/* What the command line asks of report, besides the filters. */
struct report_args {
	struct mt_report_opts o;
	const char *file, *supp;
	int nviews; /* view options given */
};

/* --top-down turns the text trees of the four tree views over; the other
 * outputs have no such tree (the JSON lists sites with whole stacks,
 * whichever way one reads them), and taking the option silently would let
 * a user believe the output was turned.  MT_OPTS_GO_ON, or the usage
 * error's status. */
static int check_top_down(const struct report_args *a)
{
	const struct mt_report_opts *o = &a->o;
	if (!o->top_down)
		return MT_OPTS_GO_ON;
	const struct mt_report_view *section = mt_report_section(o);
	const char *other = o->json   ? "--json" :
			    section   ? section->option :
			    a->nviews ? NULL :
					"the summary (the default view)";
	if (!other && o->view == MT_VIEW_SUMMARY)
		other = "--summary";
	if (other)
		return mt_usage_error("report",
				      "--top-down turns the text trees of --leaks, --peak, "
				      "--temporary and --frequency over: it does not go with %s",
				      other);
	return MT_OPTS_GO_ON;
}

/* Reads the command line into A, its filters into FILT.  MT_OPTS_GO_ON,
 * or the status to exit with. */
static int parse_args(struct report_args *a, struct mt_filter *filt, int argc, char **argv)
{
	struct mt_report_opts *o = &a->o;
	uint64_t limit = 0;
	struct mt_views views = { .last = MT_VIEW_SUMMARY, .n = 0 };
	/* the views have no .help: the prologue lists them under VIEW */
	const struct mt_option opts[] = {
		MT_OPT_VIEWS(&views),
		MT_OPT_JSON(&o->json, "print the JSON report (schema: memtrace-report(1))"),
		{ .shortopt = "-n",
		  .longopt = "--top",
		  .argh = "N",
		  .help = "show only the N call sites ranking first in the view",
		  .type = MT_OPT_COUNT,
		  .target = &limit,
		  .max = 100000000,
		  .err = "-n needs a positive number of sites",
		  .flags = MT_OPTF_NO_GLUE /* report never took "-n5" */ },
		{ .longopt = "--threshold",
		  .argh = "PCT",
		  .help = "fold tree branches below PCT percent (default 0.5)",
		  .type = MT_OPT_CALLBACK,
		  .target = &o->threshold,
		  .cb = mt_opt_threshold },
		{ .longopt = "--functions", .type = MT_OPT_FLAG, .target = &o->functions },
		{ .longopt = "--callers",
		  .argh = "FN",
		  .type = MT_OPT_STRING,
		  .target = &o->callers,
		  .err = "--callers needs a function name",
		  .flags = MT_OPTF_NONEMPTY },
		{ .longopt = "--callees",
		  .argh = "FN",
		  .type = MT_OPT_STRING,
		  .target = &o->callees,
		  .err = "--callees needs a function name",
		  .flags = MT_OPTF_NONEMPTY },
		{ .longopt = "--sizes", .type = MT_OPT_FLAG, .target = &o->sizes },
		{ .longopt = "--top-down",
		  .help = "trees from main towards the allocator (default:\n"
			  "from the allocator outwards)",
		  .type = MT_OPT_FLAG,
		  .target = &o->top_down },
		MT_OPT_RECPID(&o->pid, "only the process PID of a multi-process recording"),
		MT_OPT_IMAGE(&o->image, "only image N (the report numbers a recording's images),\n"
					"or those of program NAME, in full"),
		{ .longopt = "--all-images",
		  .help = "every image in full (default: the main one, the others\n"
			  "named one line each)",
		  .type = MT_OPT_FLAG,
		  .target = &o->all_images },
		MT_OPT_SUPPRESSIONS(&a->supp),
		MT_OPT_FIT(&o->fit.width, &o->fit.full_names),
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = {
		.cmd = "report", .opts = opts, .prologue = prologue, .col = 21, .epilogue = epilogue
	};
	int st = mt_options_recording(&cl, filt, &a->file, argc, argv);
	if (st != MT_OPTS_GO_ON)
		return st;
	o->view = (enum mt_view)views.last;
	o->leak_kinds = views.leak_kinds;
	o->filter = filt;
	o->limit = (long)limit;
	if (o->fit.width < 0)
		o->fit.width = mt_output_width();
	a->nviews = views.n;
	if (views.n > 1)
		return mt_usage_error(
			"report",
			"choose one view of --summary, --leaks, --peak, --temporary, --frequency");
	if (!a->file)
		return mt_usage_error("report", "no recording given");
	if (o->image && o->all_images)
		return mt_usage_error("report", "--image shows some images, --all-images all: "
						"choose one");
	return check_top_down(a);
}

/* Loads FILE through FILT into SEL, its suppressions applied, with the
 * checks and warnings that go with it.  0, or -1 after the error (SEL
 * and FILT freed). */
static int load(struct mt_selection *sel, struct mt_filter *filt, const char *file,
		const char *supp)
{
	char err[512];
	if (mt_where_filter_file(filt, file, err, sizeof err) < 0 ||
	    mt_select_load(sel, file, filt, err, sizeof err) < 0) {
		mt_filter_free(filt);
		mt_load_error(err);
		return -1;
	}
	struct mt_recording *rec = &sel->matched;
	if (mt_thread_check(filt, &sel->all, file) < 0 || mt_suppress_file(supp, rec) < 0) {
		mt_select_free(sel);
		mt_filter_free(filt);
		return -1;
	}
	if (rec->truncated)
		mt_warning("%s is truncated (%s); showing what it holds", file, rec->why);
	mt_range_check(filt, &sel->all, file);
	return 0;
}

/* --sizes: the histograms of SEL (one per process of the matched
 * recording, and one more), or NULL after the error message. */
static struct mt_histo *size_histograms(struct mt_selection *sel)
{
	char err[512];
	struct mt_histo *histo = xcalloc(sel->matched.nprocs + 1, sizeof *histo);
	if (mt_histograms(sel, histo, err, sizeof err) < 0) {
		free(histo);
		mt_error("%s", err);
		return NULL;
	}
	return histo;
}

/* The report of REC (what is selected of FILE, whose processes number
 * NPROCS) as O says, on stdout.  Returns the status to exit with. */
static int print_report(struct mt_recording *rec, size_t nprocs, const struct mt_report_opts *o,
			const char *file)
{
	int found = 0;
	for (size_t i = 0; i < rec->nprocs; i++)
		found |= mt_report_wants(o, rec->procs[i]);
	int r = 1;
	if (nprocs == 0)
		/* a header alone: the recorder stopped before its first write */
		mt_error("%s holds no process: nothing was recorded in it", file);
	else if (!found)
		mt_no_process_error(file, o->pid, o->image);
	else if (o->callers || o->callees)
		r = report_held(rec, o);
	else
		r = report_to(stdout, rec, o);
	if (!found)
		return MT_EXIT_RUNTIME;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		mt_error("cannot write the report: output error");
		return MT_EXIT_RUNTIME;
	}
	return r ? MT_EXIT_RUNTIME : MT_EXIT_OK;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = { .o = { .view = MT_VIEW_SUMMARY,
					.threshold = 0.5,
					.limit = 0,
					.pid = -1,
					.fit = { .width = -1 } } };
	static struct mt_filter filt; /* reachable from here until exit, freed at the end */
	mt_filter_init(&filt);
	int st = parse_args(&a, &filt, argc, argv);
	if (st != MT_OPTS_GO_ON)
		return st;
	struct mt_selection sel;
	if (load(&sel, &filt, a.file, a.supp) < 0)
		return MT_EXIT_RUNTIME;
	struct mt_histo *histo = NULL;
	if (a.o.sizes) {
		if (!(histo = size_histograms(&sel))) {
			mt_select_free(&sel);
			mt_filter_free(&filt);
			return MT_EXIT_RUNTIME;
		}
		a.o.histo = histo;
	}
	/* the report needs the figures and the sites, not the blocks: their
	 * memory is better given back before symbols are loaded */
	mt_recording_shed(&sel.all);
	if (sel.filtered)
		mt_recording_shed(&sel.matched);
	mt_select_leak_kinds(&sel.matched, a.o.leak_kinds, a.file);
	st = print_report(&sel.matched, sel.all.nprocs, &a.o, a.file);
	free(histo);
	mt_select_free(&sel);
	mt_filter_free(&filt);
	return st;
}
