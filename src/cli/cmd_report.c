/*
 * cmd_report.c - `memtrace report`: text trees or JSON from a recording.
 */
#include "commands.h"
#include "report/report.h"
#include "analyse/select.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"usage: memtrace report [VIEW] [options] FILE\n"
	"\n"
	"Shows what a recording says.  VIEW is one of:\n"
	"  --summary      totals and the top call sites of each kind (default)\n"
	"  --leaks        what was still allocated at the end, as a call tree\n"
	"  --peak         what was live at the moment of the peak, as a call tree\n"
	"  --temporary    allocations freed by the very next allocator call of\n"
	"                 their thread, as a call tree\n"
	"  --frequency    calls to the allocator per call site, as a call tree\n"
	"\n"
	"options:\n"
	"  --json             print the JSON report (schema: memtrace-report(1))\n"
	"  -n, --top N        show only the N call sites ranking first in the view\n"
	"  --threshold PCT    fold tree branches below PCT percent (default 0.5)\n"
	"  --pid PID          only the process PID of a multi-process recording\n"
	"  -h, --help         show this help\n"
	"\n"
	"With filters, every figure counts only the allocations they match.\n";

int cmd_report(int argc, char **argv)
{
	struct mt_report_opts o = {MT_VIEW_SUMMARY, 0, 0.5, 0, -1};
	const char *file = NULL, *val;
	int views = 0, fr;
	static struct mt_filter filt; /* reachable from here until exit, freed at the end */
	mt_filter_init(&filt);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if ((fr = mt_filter_arg(&filt, "report", argc, argv, &i)) != 0) {
			if (fr < 0)
				return MT_EXIT_USAGE;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			fputs(mt_filter_help, stdout);
			mt_filter_free(&filt);
			return 0;
		} else if (!strcmp(a, "--summary")) {
			o.view = MT_VIEW_SUMMARY, views++;
		} else if (!strcmp(a, "--leaks")) {
			o.view = MT_VIEW_LEAKS, views++;
		} else if (!strcmp(a, "--peak")) {
			o.view = MT_VIEW_PEAK, views++;
		} else if (!strcmp(a, "--temporary")) {
			o.view = MT_VIEW_TEMPORARY, views++;
		} else if (!strcmp(a, "--frequency")) {
			o.view = MT_VIEW_FREQUENCY, views++;
		} else if (!strcmp(a, "--json")) {
			o.json = 1;
		} else if (!strcmp(a, "-n") || !strcmp(a, "--top") || mt_opt(a, "top", &val)) {
			if (a[1] == 'n' || !strcmp(a, "--top"))
				val = ++i < argc ? argv[i] : NULL;
			uint64_t n;
			if (!val || mt_parse_u64(val, &n) || n == 0 || n > 100000000)
				return mt_usage_error("report", "-n needs a positive number of sites");
			o.limit = (long)n;
		} else if (!strcmp(a, "--threshold") || mt_opt(a, "threshold", &val)) {
			if (!strcmp(a, "--threshold"))
				val = ++i < argc ? argv[i] : NULL;
			if (!val || mt_parse_double(val, &o.threshold) || o.threshold < 0 || o.threshold > 100)
				return mt_usage_error("report", "--threshold needs a percentage between 0 and 100");
		} else if (!strcmp(a, "--pid") || mt_opt(a, "pid", &val)) {
			if (!strcmp(a, "--pid"))
				val = ++i < argc ? argv[i] : NULL;
			uint64_t pid;
			if (!val || mt_parse_u64(val, &pid) || pid > 0x7fffffff)
				return mt_usage_error("report", "--pid needs a process id");
			o.pid = (long)pid;
		} else if (a[0] == '-' && a[1]) {
			return mt_usage_error("report", "unknown option '%s'", a);
		} else if (file) {
			return mt_usage_error("report", "more than one recording given ('%s' and '%s')", file, a);
		} else {
			file = a;
		}
	}
	if (views > 1)
		return mt_usage_error("report", "choose one view of --summary, --leaks, --peak, --temporary, --frequency");
	if (!file)
		return mt_usage_error("report", "no recording given");
	struct mt_selection sel;
	char err[512];
	if (mt_select_load(&sel, file, &filt, err, sizeof err) < 0) {
		mt_filter_free(&filt);
		mt_error("%s", err);
		return MT_EXIT_RUNTIME;
	}
	struct mt_recording *rec = &sel.matched;
	if (rec->truncated)
		mt_warning("%s is truncated (%s); showing what it holds", file, rec->why);
	int found = o.pid < 0;
	for (size_t i = 0; i < rec->nprocs; i++)
		found |= rec->procs[i]->pid == (uint32_t)o.pid;
	int r = 1;
	if (!found)
		mt_error("%s has no process %ld", file, o.pid);
	else
		r = o.json ? mt_report_json(stdout, rec, &o) : mt_report_text(stdout, rec, &o);
	mt_select_free(&sel);
	mt_filter_free(&filt);
	if (!found)
		return MT_EXIT_RUNTIME;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		mt_error("cannot write the report: output error");
		return MT_EXIT_RUNTIME;
	}
	return r ? MT_EXIT_RUNTIME : MT_EXIT_OK;
}
