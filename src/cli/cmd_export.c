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

static int opt_format(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	const struct mt_exporter **fmt = o->target;
	(void)arg;
	if (!val)
		return mt_usage_error(cmd, "--format needs a format");
	if (!(*fmt = mt_exporter_named(val)))
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

/* The format lists of --weight's and --base's help and --base's error,
 * from the table: NAME after what BUF holds, SEP between. */
static void add_name(char *buf, size_t len, const char *name, const char *sep)
{
	size_t n = strlen(buf);
	snprintf(buf + n, len - n, "%s%s", n ? sep : "", name);
}

static const char *weighted_formats(char *buf, size_t len)
{
	const struct mt_exporter *e;
	buf[0] = 0;
	for (int i = 1; (e = mt_exporter_weighted(i)); i++)
		add_name(buf, len, e->name, ", ");
	return buf;
}

static const char *base_formats(char *buf, size_t len, const char *sep)
{
	buf[0] = 0;
	for (const struct mt_exporter *e = mt_exporters; e->name; e++)
		if (e->base)
			add_name(buf, len, e->name, sep);
	return buf;
}

/* S with its spaces turned into line breaks where a line would pass
 * WIDTH: an option's help from column 21 within 79 columns. */
static const char *wrapped(char *s, size_t width)
{
	char *line = s, *space = NULL;
	for (char *c = s;; c++) {
		if (*c != ' ' && *c)
			continue;
		if ((size_t)(c - line) > width && space) {
			*space = '\n';
			line = space + 1;
		}
		if (!*c)
			return s;
		space = c;
	}
}

#define HELP_WIDTH (79 - 21)

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
	int fd = mt_create_output(*tmp, O_WRONLY, 1);
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

/* The recording FILE (and BASE's, into *BSEL, when given) through FILT,
 * into *SEL for X: MT_EXIT_OK, or MT_EXIT_RUNTIME after the error (with
 * nothing left to free). */
static int load(struct mt_export_ctx *x, struct mt_selection *sel, struct mt_selection *bsel,
		struct mt_filter *filt, const char *file, const char *base)
{
	char err[512];
	if (mt_where_filter_file(filt, file, err, sizeof err) < 0 ||
	    mt_select_load(sel, file, filt, err, sizeof err) < 0) {
		mt_load_error(err);
		return MT_EXIT_RUNTIME;
	}
	if (mt_thread_check(filt, &sel->all, file) < 0) {
		mt_select_free(sel);
		return MT_EXIT_RUNTIME;
	}
	mt_range_check(filt, &sel->all, file);
	x->sel = sel;
	if (base) {
		if (mt_select_load(bsel, base, filt, err, sizeof err) < 0) {
			mt_error("%s", err);
			mt_select_free(sel);
			return MT_EXIT_RUNTIME;
		}
		x->base = bsel;
	}
	if (sel->all.truncated)
		mt_warning("%s is truncated (%s); exporting what it holds", file, sel->all.why);
	return MT_EXIT_OK;
}

/* Writes X in FMT to OUT (NULL: standard output): MT_EXIT_OK, or
 * MT_EXIT_RUNTIME after the error, OUT then left as it was. */
static int write_export(struct mt_export_ctx *x, const struct mt_exporter *fmt, const char *out)
{
	char *tmp = NULL, err[512] = "";
	int in_place = 0;
	if (out && open_output(out, &x->out, &tmp, &in_place) < 0)
		return MT_EXIT_RUNTIME;
	if (out)
		x->out_path = out;
	int r = fmt->run(x, err, sizeof err);
	if (fflush(x->out) != 0 || ferror(x->out)) {
		mt_error("cannot write %s: output error", out ? out : "the export");
		r = -2;
	} else if (r < 0) {
		mt_error("%s", err[0] ? err : "export failed");
	}
	if (out) {
		fclose(x->out);
		if (in_place) {
			/* a device: written as it is, nothing to move */
		} else if (r == 0 && rename(tmp, out) < 0) {
			mt_error("cannot write %s: %s", out, strerror(errno));
			r = -2;
		}
		if (r != 0 && tmp)
			unlink(tmp);
	}
	free(tmp);
	return r == 0 ? MT_EXIT_OK : MT_EXIT_RUNTIME;
}

int cmd_export(int argc, char **argv)
{
	static struct mt_filter filt; /* reachable until exit; freed at the end */
	struct mt_export_ctx x = { .pid = -1, .weight = MT_W_BYTES, .out = stdout };
	const struct mt_exporter *fmt = NULL;
	const char *file = NULL, *out = NULL, *base = NULL;
	char names[128], weight_help[256], base_help[256];
	snprintf(weight_help, sizeof weight_help,
		 "what flamegraph widths measure (%s): bytes (allocated, default), allocations, "
		 "leaked (bytes), peak (bytes live at the peak), temporary",
		 weighted_formats(names, sizeof names));
	snprintf(base_help, sizeof base_help,
		 "%s: a differential flamegraph, widths from FILE, red where it grew since BASE, "
		 "blue where it shrank",
		 base_formats(names, sizeof names, ", "));
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
		  .help = wrapped(weight_help, HELP_WIDTH),
		  .type = MT_OPT_CALLBACK,
		  .target = &x,
		  .cb = opt_weight },
		{ .longopt = "--per-site",
		  .help = "json: one entry per call site instead of per allocation",
		  .type = MT_OPT_FLAG,
		  .target = &x.per_site },
		{ .longopt = "--base",
		  .argh = "BASE",
		  .help = wrapped(base_help, HELP_WIDTH),
		  .type = MT_OPT_STRING,
		  .target = &base,
		  .err = "--base needs a recording",
		  .flags = MT_OPTF_NONEMPTY },
		MT_OPT_RECPID(&x.pid, "only process PID of a multi-process recording (formats\n"
				      "with one process per file take the main one by default)"),
		MT_OPT_IMAGE(&x.image, "only image N (as memtrace report numbers them), or\n"
				       "those of program NAME"),
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
	if (base && !fmt->base)
		return mt_usage_error(
			"export", "--base draws a differential flamegraph: use it with --format %s",
			base_formats(names, sizeof names, " or "));
	if (!out && fmt->binary && isatty(1))
		return mt_usage_error(
			"export", "the %s format is binary: give -o FILE or redirect the output",
			fmt->name);
	if (out && !strcmp(out, "-"))
		out = NULL; /* standard output, as without -o */

	struct mt_selection sel, bsel;
	if ((st = load(&x, &sel, &bsel, &filt, file, base)) != MT_EXIT_OK) {
		mt_filter_free(&filt);
		return st;
	}
	int found = x.pid < 0 && !x.image;
	for (size_t i = 0; i < sel.matched.nprocs; i++)
		found |= mt_export_wants(&x, sel.matched.procs[i]);
	if (found) {
		st = write_export(&x, fmt, out);
	} else {
		mt_no_process_error(file, x.pid, x.image);
		st = MT_EXIT_RUNTIME;
	}
	if (x.base)
		mt_select_free(x.base);
	mt_select_free(&sel);
	mt_filter_free(&filt);
	return st;
}
