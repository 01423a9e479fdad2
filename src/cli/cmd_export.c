/*
 * cmd_export.c - `memtrace export --format FMT [-o OUT] [FILTERS] FILE`:
 * a recording, through the report's filters, in another tool's format.
 */
#include "commands.h"
#include "options.h"
#include "export/export.h"
#include "query/where.h"
#include "base/util.h"
#include "format/format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --help up to its options: the formats. */
static void prologue(FILE *f)
{
	fputs("usage: memtrace export --format FMT [-o OUT] [options] [filters] FILE\n"
	      "\n"
	      "Writes the recording FILE in another tool's format, to OUT or standard\n"
	      "output.  FMT is one of:\n",
	      f);
	for (const struct mt_exporter *e = mt_exporters; e->name; e++)
		fprintf(f, "  %-11s %s\n", e->name, e->what);
	fputs("\n"
	      "options:\n",
	      f);
}

static const struct mt_exporter *find_format(const char *name)
{
	for (const struct mt_exporter *e = mt_exporters; e->name; e++)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

static int opt_format(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	const struct mt_exporter **fmt = o->target;
	(void)arg;
	if (!val)
		return mt_usage_error(cmd, "--format needs a format");
	if (!(*fmt = find_format(val)))
		return mt_usage_error(cmd, "--format: unknown format '%s'", val);
	return 0;
}

static int opt_weight(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct mt_export_ctx *x = o->target;
	int found = 0;
	(void)arg;
	for (int w = 0; w <= MT_W_TEMPORARY && val && !found; w++)
		if (!strcmp(val, mt_weight_names[w]))
			x->weight = (enum mt_weight)w, found = 1;
	if (!found)
		return mt_usage_error(
			cmd,
			"--weight: '%s' is none of bytes, allocations, leaked, peak, temporary",
			val ? val : "");
	x->weight_set = 1;
	return 0;
}

/* Opens what -o OUT names.  A regular file (or a new one) is written as
 * OUT.tmpPID, mode 0600 (it holds the paths and arguments of the recorded
 * programs, as the recording does), and renamed over OUT once whole, so a
 * failed export leaves what was there; a character device (/dev/null, a
 * terminal) is written in place, never replaced; a symbolic link, FIFO,
 * socket or directory is refused, as record -o refuses them.  Returns 0,
 * or -1 after the error. */
static int open_output(const char *out, FILE **f, char **tmp, int *in_place)
{
	struct stat st;
	/* /dev's links (/dev/stdout, /dev/fd/N) are the system's: followed */
	int dev = !strncmp(out, "/dev/", 5);
	if ((dev ? stat(out, &st) : lstat(out, &st)) == 0 && !S_ISREG(st.st_mode)) {
		if (!S_ISCHR(st.st_mode) && !(dev && S_ISFIFO(st.st_mode))) {
			const char *why =
				mt_file_refused(out, S_ISLNK(st.st_mode) ? ELOOP : EINVAL);
			mt_error("%s %s", out, why ? why : "is not a regular file: not written");
			return -1;
		}
		int fd = open(out, O_WRONLY | O_CLOEXEC | O_NOCTTY | (dev ? 0 : O_NOFOLLOW));
		if (fd < 0 || fstat(fd, &st) != 0 ||
		    !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) || !(*f = fdopen(fd, "w"))) {
			mt_error("cannot write %s: %s", out,
				 fd < 0 ? strerror(errno) : "not a device");
			if (fd >= 0)
				close(fd);
			return -1;
		}
		*in_place = 1;
		return 0;
	}
	size_t n = strlen(out) + 16;
	*tmp = xmalloc(n);
	snprintf(*tmp, n, "%s.tmp%d", out, (int)getpid());
	int fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(*f = fdopen(fd, "w"))) {
		mt_error("cannot write %s: %s", out, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(*tmp);
		}
		free(*tmp);
		*tmp = NULL;
		return -1;
	}
	return 0;
}

int cmd_export(int argc, char **argv)
{
	static struct mt_filter filt; /* reachable until exit; freed at the end */
	struct mt_export_ctx x = { .pid = -1, .weight = MT_W_BYTES, .out = stdout };
	const struct mt_exporter *fmt = NULL;
	const char *file = NULL, *out = NULL, *base = NULL;
	int r;
	mt_filter_init(&filt);
	const struct mt_option opts[] = {
		{ .shortopt = "-f",
		  .longopt = "--format",
		  .argh = "FMT",
		  .help = "the format (required)",
		  .type = MT_OPT_CALLBACK,
		  .target = &fmt,
		  .cb = opt_format },
		MT_OPT_OUTPUT(&out, "OUT", "write to OUT (written whole, then renamed into place)"),
		{ .longopt = "--weight",
		  .argh = "W",
		  .help = "what flamegraph widths measure (folded, svg, speedscope,\n"
			  "gprof2dot, html): bytes (allocated, default), allocations,\n"
			  "leaked (bytes), peak (bytes live at the peak), temporary",
		  .type = MT_OPT_CALLBACK,
		  .target = &x,
		  .cb = opt_weight },
		{ .longopt = "--per-site",
		  .help = "json: one entry per call site instead of per allocation",
		  .type = MT_OPT_FLAG,
		  .target = &x.per_site },
		{ .longopt = "--base",
		  .argh = "BASE",
		  .help = "svg, html: a differential flamegraph, widths from FILE,\n"
			  "red where it grew since BASE, blue where it shrank",
		  .type = MT_OPT_STRING,
		  .target = &base,
		  .err = "--base needs a recording",
		  .flags = MT_OPTF_NONEMPTY },
		MT_OPT_RECPID(&x.pid, "only process PID of a multi-process recording (formats\n"
				      "with one process per file take the first by default)"),
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = {
		.cmd = "export", .opts = opts, .prologue = prologue, .col = 21, .epilogue = "\n"
	};
	int st = mt_options_recording(&cl, &filt, &file, argc, argv);
	if (st != MT_OPTS_GO_ON)
		return st;
	if (!fmt)
		return mt_usage_error("export", "no --format given");
	if (!file)
		return mt_usage_error("export", "no recording given");
	if (base && strcmp(fmt->name, "svg") && strcmp(fmt->name, "html"))
		return mt_usage_error("export", "--base draws a differential flamegraph: "
						"use it with --format svg or html");
	if (!out && fmt->binary && isatty(1))
		return mt_usage_error(
			"export", "the %s format is binary: give -o FILE or redirect the output",
			fmt->name);

	struct mt_selection sel;
	char err[512];
	if (mt_where_filter_file(&filt, file, err, sizeof err) < 0 ||
	    mt_select_load(&sel, file, &filt, err, sizeof err) < 0) {
		mt_load_error(err);
		mt_filter_free(&filt);
		return MT_EXIT_RUNTIME;
	}
	if (mt_thread_check(&filt, &sel.all, file) < 0) {
		mt_select_free(&sel);
		mt_filter_free(&filt);
		return MT_EXIT_RUNTIME;
	}
	mt_range_check(&filt, &sel.all, file);
	x.sel = &sel;
	struct mt_selection bsel;
	if (base) {
		if (mt_select_load(&bsel, base, &filt, err, sizeof err) < 0) {
			mt_error("%s", err);
			mt_select_free(&sel);
			mt_filter_free(&filt);
			return MT_EXIT_RUNTIME;
		}
		x.base = &bsel;
	}
	if (sel.all.truncated)
		mt_warning("%s is truncated (%s); exporting what it holds", file, sel.all.why);
	int found = x.pid < 0;
	for (size_t i = 0; i < sel.matched.nprocs; i++)
		found |= mt_export_wants(&x, sel.matched.procs[i]);
	char *tmp = NULL;
	int status = MT_EXIT_RUNTIME;
	if (!found) {
		mt_error("%s has no process %ld", file, x.pid);
		goto done;
	}
	if (out && !strcmp(out, "-"))
		out = NULL; /* standard output, as without -o */
	int in_place = 0;
	if (out && open_output(out, &x.out, &tmp, &in_place) < 0)
		goto done;
	if (out)
		x.out_path = out;
	err[0] = 0;
	r = fmt->run(&x, err, sizeof err);
	if (fflush(x.out) != 0 || ferror(x.out)) {
		mt_error("cannot write %s: output error", out ? out : "the export");
		r = -2;
	} else if (r < 0) {
		mt_error("%s", err[0] ? err : "export failed");
	}
	if (out) {
		fclose(x.out);
		if (in_place) {
			/* a device: written as it is, nothing to move */
		} else if (r == 0 && rename(tmp, out) < 0) {
			mt_error("cannot write %s: %s", out, strerror(errno));
			r = -2;
		}
		if (r != 0 && tmp)
			unlink(tmp);
	}
	status = r == 0 ? MT_EXIT_OK : MT_EXIT_RUNTIME;
done:
	free(tmp);
	if (x.base)
		mt_select_free(x.base);
	mt_select_free(&sel);
	mt_filter_free(&filt);
	return status;
}
