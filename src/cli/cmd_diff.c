/*
 * cmd_diff.c - `memtrace diff`: what grew (or shrank) between two
 * recordings, call site by call site (analyse/diff.h, report/diff.c).
 */
#include "commands.h"
#include "options.h"
#include "analyse/diff.h"
#include "analyse/select.h"
#include "report/report.h"
#include "base/util.h"

#include <stdlib.h>

static const char usage_text[] =
	"usage: memtrace diff [VIEW] [options] BASE NEW\n"
	"\n"
	"Shows, per call site, NEW minus BASE: allocations, bytes, leaks, peak,\n"
	"temporaries.  Sites are matched by their frames' function names (a frame\n"
	"without one by its offset in its module), not addresses or paths, so two\n"
	"builds, two runs or a renamed copy match.  VIEW ranks them:\n"
	"  --summary      by bytes allocated (default)\n"
	"  --leaks        by bytes leaked\n"
	"  --peak         by bytes live at the peak\n"
	"  --temporary    by temporary allocations\n"
	"  --frequency    by calls to the allocator\n"
	"\n"
	"options:\n";

static const char epilogue[] =
	"\n"
	"With filters, both recordings count only the allocations they match.\n"
	"Figures are summed over the processes of each recording.\n";

int cmd_diff(int argc, char **argv)
{
	struct mt_report_opts o = { .view = MT_VIEW_SUMMARY, .threshold = 0.5, .pid = -1 };
	const char *files[2] = { 0 }, *supp = NULL;
	size_t nfiles = 0;
	uint64_t limit = 0;
	struct mt_views views = { .last = MT_VIEW_SUMMARY, .n = 0 };
	static struct mt_filter filt;
	mt_filter_init(&filt);
	const struct mt_option opts[] = {
		MT_OPT_VIEWS(&views),
		MT_OPT_JSON(&o.json, "print JSON: the report's schema, with \"diff\" members"),
		MT_OPT_TOP(&limit, 100000000, "show only the N sites that grew most"),
		{ .longopt = "--threshold",
		  .argh = "PCT",
		  .help = "fold tree branches whose change is below PCT percent\n"
			  "of the whole change (default 0.5)",
		  .type = MT_OPT_CALLBACK,
		  .target = &o.threshold,
		  .cb = mt_opt_threshold },
		{ .longopt = "--unchanged",
		  .help = "show the call sites and tree branches that did not\n"
			  "change too (default: left out, and counted)",
		  .type = MT_OPT_FLAG,
		  .target = &o.unchanged },
		MT_OPT_SUPPRESSIONS(&supp),
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = {
		.cmd = "diff", .opts = opts, .usage = usage_text, .col = 21, .epilogue = epilogue
	};
	int st = mt_options_recordings(&cl, &filt, files, 2, &nfiles, argc, argv);
	if (st != MT_OPTS_GO_ON)
		return st;
	if (views.n > 1)
		st = mt_usage_error(
			"diff",
			"choose one view of --summary, --leaks, --peak, --temporary, --frequency");
	else if (nfiles < 2)
		st = mt_usage_error("diff", "two recordings are needed: BASE NEW");
	if (st != MT_OPTS_GO_ON) {
		mt_filter_free(&filt);
		return st;
	}
	o.view = (enum mt_view)views.last;
	o.limit = (long)limit;
	struct mt_selection sel[2];
	char err[512];
	int loaded = 0;
	for (; loaded < 2; loaded++) {
		if (mt_select_load(&sel[loaded], files[loaded], &filt, err, sizeof err) < 0) {
			mt_error("%s", err);
			break;
		}
		if (mt_suppress_file(supp, &sel[loaded].matched) < 0) {
			mt_select_free(&sel[loaded]);
			break;
		}
		if (sel[loaded].matched.truncated)
			mt_warning("%s is truncated (%s); comparing what it holds", files[loaded],
				   sel[loaded].matched.why);
		/* --leaks=KINDS: both sides' leaked figures of those kinds alone */
		mt_select_leak_kinds(&sel[loaded].matched, views.leak_kinds, files[loaded]);
	}
	int r = 1;
	if (loaded == 2) {
		struct mt_diff d;
		mt_diff_build(&d, &sel[0].matched, &sel[1].matched);
		r = o.json ? mt_report_diff_json(stdout, &d, &sel[0].matched, &sel[1].matched, &o) :
			     mt_report_diff_text(stdout, &d, files[0], files[1], &o);
		mt_diff_free(&d);
	}
	while (loaded--)
		mt_select_free(&sel[loaded]);
	mt_filter_free(&filt);
	if (r == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
		mt_error("cannot write the diff: output error");
		return MT_EXIT_RUNTIME;
	}
	return r ? MT_EXIT_RUNTIME : MT_EXIT_OK;
}
