/*
 * options.c - see options.h.
 */
#include "options.h"
#include "analyse/filter.h"
#include "analyse/images.h"
#include "analyse/recording.h"
#include "analyse/suppress.h"
#include "base/util.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Does ARG (argv[*i]) name option O?  Sets *VAL to its value: the next
 * argument for "-n" and "--top" (*i moves past it; NULL when there is
 * none), the rest for "-n5" and "--top=5"; NULL for a flag. */
static int match(const struct mt_option *o, int argc, char **argv, int *i, const char **val)
{
	const char *a = argv[*i];
	int noarg = o->type == MT_OPT_FLAG || (o->flags & MT_OPTF_NOARG);
	size_t n;
	*val = NULL;
	if ((o->shortopt && !strcmp(a, o->shortopt)) || (o->longopt && !strcmp(a, o->longopt))) {
		if (!noarg && !(o->flags & MT_OPTF_EQ_ONLY))
			*val = *i + 1 < argc ? argv[++*i] : NULL;
		return 1;
	}
	if (noarg)
		return 0;
	if (o->shortopt && !(o->flags & (MT_OPTF_NO_GLUE | MT_OPTF_EQ_ONLY)) &&
	    !strncmp(a, o->shortopt, strlen(o->shortopt)) && a[1] != '-') {
		*val = a + strlen(o->shortopt);
		return 1;
	}
	if (o->longopt && !strncmp(a, o->longopt, n = strlen(o->longopt)) && a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	return 0;
}

/* Checks and stores VAL for O, spelled ARG.  Returns 0 or MT_EXIT_USAGE. */
static int store(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	const char *name = o->shortopt ? o->shortopt : o->longopt;
	struct mt_pids *pids = o->target;
	uint64_t n;
	double s;
	switch (o->type) {
	case MT_OPT_FLAG:
		*(int *)o->target = 1;
		return 0;
	case MT_OPT_STRING:
		if (!val || ((o->flags & MT_OPTF_NONEMPTY) && !*val))
			return mt_usage_error(cmd, "%s", o->err);
		*(const char **)o->target = val;
		return 0;
	case MT_OPT_SECONDS:
		if (mt_parse_seconds(val, &s) || ((o->flags & MT_OPTF_POSITIVE) && s <= 0))
			return mt_usage_error(cmd, "%s", o->err);
		*(double *)o->target = s;
		return 0;
	case MT_OPT_COUNT:
	case MT_OPT_COUNT32:
		if (o->err && (!val || mt_parse_u64(val, &n) || n == 0 || n > o->max))
			return mt_usage_error(cmd, "%s", o->err);
		if (!o->err && mt_arg_count(cmd, name, val, o->max, &n))
			return MT_EXIT_USAGE;
		if (o->type == MT_OPT_COUNT)
			*(uint64_t *)o->target = n;
		else
			*(uint32_t *)o->target = (uint32_t)n;
		return 0;
	case MT_OPT_PID:
		if (pids->n == MT_MAX_PIDS)
			return mt_usage_error(cmd, "at most %zu processes", pids->n);
		if (mt_arg_pid(cmd, val, &pids->v[pids->n]))
			return MT_EXIT_USAGE;
		pids->n++;
		return 0;
	case MT_OPT_PROCESS:
		if (!val || mt_parse_u64(val, &n) || n > 0x7fffffff)
			return mt_usage_error(cmd, "%s", o->err);
		*(long *)o->target = (long)n;
		return 0;
	case MT_OPT_CALLBACK:
		return o->cb(cmd, o, arg, val) ? MT_EXIT_USAGE : 0;
	case MT_OPT_END:
		break;
	}
	return mt_usage_error(cmd, "unknown option '%s'", arg);
}

/* One argument, argv[*i], that is neither the help nor "--". */
static int parse_one(const struct mt_cmdline *c, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *val;
	for (const struct mt_option *o = c->opts; o->type != MT_OPT_END; o++)
		if (match(o, argc, argv, i, &val))
			return store(c->cmd, o, a, val);
	for (const struct mt_option *o = c->more; o && o->type != MT_OPT_END; o++)
		if (match(o, argc, argv, i, &val))
			return store(c->cmd, o, a, val);
	if (c->operands == MT_OPERANDS_EVERY && !(a[0] == '-' && a[1]))
		return c->operand(c->operand_ctx, c->cmd, a) ? MT_EXIT_USAGE : 0;
	return mt_usage_error(c->cmd, "unknown option '%s'", a);
}

/* "  -n, --top N     what it does": the help from column COL, each of its
 * lines there; on a line of its own when the spelling reaches COL. */
static void print_option(FILE *f, const char *shortopt, const char *longopt, const char *argh,
			 const char *help, int col)
{
	int n = fprintf(f, "  %s%s%s%s%s", shortopt ? shortopt : "",
			shortopt && longopt ? ", " : "", longopt ? longopt : "",
			argh && argh[0] != '=' && argh[0] != '[' ? " " : "", argh ? argh : "");
	if (n >= col) {
		fputc('\n', f);
		n = 0;
	}
	for (const char *line = help; *line;) {
		size_t len = strcspn(line, "\n");
		fprintf(f, "%*s%.*s\n", col - n, "", (int)len, line);
		n = 0;
		line += len;
		if (*line)
			line++;
	}
}

static void print_help(FILE *f, const struct mt_cmdline *c)
{
	if (c->prologue)
		c->prologue(f);
	else
		fputs(c->usage, f);
	for (const struct mt_option *o = c->opts; o->type != MT_OPT_END; o++)
		if (o->help)
			print_option(f, o->shortopt, o->longopt, o->argh, o->help, c->col);
	for (const struct mt_option *o = c->more; o && o->type != MT_OPT_END; o++)
		if (o->help)
			print_option(f, o->shortopt, o->longopt, o->argh, o->help, c->col);
	print_option(f, "-h", "--help", NULL, "show this help", c->col);
	if (c->epilogue)
		fputs(c->epilogue, f);
	if (c->filter_help)
		fputs(mt_filter_help, f);
}

int mt_options_parse(const struct mt_cmdline *c, int argc, char **argv, int *next)
{
	int i, r;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (c->hook && (r = c->hook(c->hook_ctx, c->cmd, argc, argv, &i)) != 0) {
			if (r < 0)
				return MT_EXIT_USAGE;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_help(stdout, c);
			return MT_EXIT_OK;
		}
		if (c->dashdash && !strcmp(a, "--")) {
			i++;
			break;
		}
		if (c->operands == MT_OPERANDS_STOP && a[0] != '-')
			break;
		if (parse_one(c, argc, argv, &i))
			return MT_EXIT_USAGE;
	}
	/* after "--", everything is an operand */
	for (; c->operands == MT_OPERANDS_EVERY && i < argc; i++)
		if (c->operand(c->operand_ctx, c->cmd, argv[i]))
			return MT_EXIT_USAGE;
	if (next)
		*next = i;
	return MT_OPTS_GO_ON;
}

int mt_options_bpf(const struct mt_cmdline *c, struct mt_bpf_opts *maps, int argc, char **argv)
{
	const struct mt_option more[] = {
		{ .longopt = "--max-live",
		  .argh = "N",
		  .type = MT_OPT_COUNT32,
		  .target = &maps->max_live,
		  .max = 1u << 30,
		  .help = "entries of the kernel's map of live blocks (default\n"
			  "1048576); a full map is counted as a loss" },
		{ .longopt = "--max-stacks",
		  .argh = "N",
		  .type = MT_OPT_COUNT32,
		  .target = &maps->max_stacks,
		  .max = 1u << 24,
		  .help = "entries of the kernel's stack map (default 65536)" },
		MT_OPT_SAMPLE(&maps->sample_mean),
		{ .type = MT_OPT_END },
	};
	struct mt_cmdline bc = *c;
	bc.more = more;
	return mt_options_parse(&bc, argc, argv, NULL);
}

static int filters(void *filter, const char *cmd, int argc, char **argv, int *i)
{
	return mt_filter_arg(filter, cmd, argc, argv, i);
}

int mt_opt_view(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct mt_views *v = o->target;
	(void)arg;
	v->last = o->value;
	v->n++;
	char err[160];
	if (val && mt_leak_kinds_parse(val, &v->leak_kinds, err, sizeof err) < 0)
		return mt_usage_error(cmd, "--leaks=%s: %s", val, err);
	return 0;
}

int mt_opt_threshold(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	double *pct = o->target;
	(void)arg;
	if (!val || mt_parse_double(val, pct) || *pct < 0 || *pct > 100)
		return mt_usage_error(cmd, "--threshold needs a percentage between 0 and 100");
	return 0;
}

int mt_opt_sample(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	uint64_t *mean = o->target;
	(void)arg;
	if (!val) {
		*mean = MT_SAMPLE_DEFAULT;
		return 0;
	}
	if (mt_parse_size(val, mean) || *mean > (1ull << 40))
		return mt_usage_error(cmd,
				      "--sample takes a mean in bytes (such as 512K, 2M; 0: every "
				      "allocation; at most 1T), not '%s'",
				      val);
	return 0;
}

/* Narrower than this, a wrapped tree would be mostly indent. */
#define MIN_WIDTH 20

int mt_opt_width(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	uint64_t w;
	(void)arg;
	if (!val || mt_parse_u64(val, &w) || (w && w < MIN_WIDTH) || w > 100000)
		return mt_usage_error(cmd,
				      "--width needs a number of columns from %d to 100000, "
				      "or 0 for no limit",
				      MIN_WIDTH);
	*(int *)o->target = (int)w;
	return 0;
}

int mt_output_width(void)
{
	struct winsize ws;
	uint64_t w;
	const char *env = getenv("COLUMNS");
	int envw = env && !mt_parse_u64(env, &w) && w >= MIN_WIDTH && w <= 100000 ? (int)w : 0;
	if (!isatty(1))
		return envw;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= MIN_WIDTH)
		return ws.ws_col;
	/* a terminal that does not say (a serial line): what a terminal has */
	return envw ? envw : 80;
}

int mt_suppress_file(const char *path, struct mt_recording *rec)
{
	if (!path)
		return 0;
	char err[512];
	struct mt_suppressions *s = mt_supp_load(path, err, sizeof err);
	if (!s) {
		mt_error("%s", err);
		return -1;
	}
	mt_supp_apply(s, rec);
	mt_supp_free(s);
	return 0;
}

int mt_thread_check(const struct mt_filter *f, const struct mt_recording *all, const char *file)
{
	if (!f->thread.set)
		return 0;
	for (size_t i = 0; i < all->nprocs; i++) {
		size_t n;
		struct mt_thread_last *t = mt_figures_threads(&all->procs[i]->figures, &n);
		size_t k = 0;
		while (k < n && (double)t[k].tid != f->thread.v)
			k++;
		free(t);
		if (k < n)
			return 0;
	}
	mt_error("%s has no thread %.0f (report --json lists the threads of each process)", file,
		 f->thread.v);
	return -1;
}

void mt_range_check(const struct mt_filter *f, const struct mt_recording *all, const char *file)
{
	/* a percentage (at most 100) is always within the run */
	if (!f->from.set || f->from.pct || all->nprocs == 0)
		return;
	/* the range is measured from the start of each process: it is empty
	 * only when it starts after the end of every one */
	double longest = 0;
	for (size_t i = 0; i < all->nprocs; i++) {
		double run = mt_filter_span_s(NULL, all->procs[i], NULL);
		if (f->from.v <= run)
			return;
		if (run > longest)
			longest = run;
	}
	mt_warning("--from %g s is past the end of %s, whose %s %.3f s: nothing is in the range",
		   f->from.v, file, all->nprocs > 1 ? "longest process ran" : "process ran",
		   longest);
}

void mt_no_process_error(const char *file, long pid, const char *image)
{
	char of[48] = "";
	if (pid >= 0 && image)
		snprintf(of, sizeof of, " of process %ld", pid);
	if (!image)
		mt_error("%s has no process %ld", file, pid);
	else if (mt_image_is_number(image))
		mt_error("%s has no image %s%s (memtrace report lists them)", file, image, of);
	else
		mt_error("%s has no image named '%s'%s (memtrace report lists them)", file, image,
			 of);
}

void mt_load_error(const char *err)
{
	mt_error("%s%s", strncmp(err, "where: ", 7) ? "" : "--", err);
}

/* The recordings of mt_options_recordings: at most MAX. */
struct files {
	const char **v;
	size_t n, max;
};

static int some_recordings(void *ctx, const char *cmd, const char *arg)
{
	struct files *fs = ctx;
	if (fs->n == fs->max)
		return fs->max == 1 ?
			       mt_usage_error(cmd, "more than one recording given ('%s' and '%s')",
					      fs->v[0], arg) :
			       mt_usage_error(cmd, "more than %zu recordings given ('%s')", fs->max,
					      arg);
	fs->v[fs->n++] = arg;
	return 0;
}

/* A range whose lower end is above its upper end matches nothing: the
 * user swapped them or mistyped one, and would get an empty report that
 * looks like a quiet program.  Ends of different kinds (seconds and a
 * share of the run) are not compared. */
static int check_ranges(const char *cmd, const struct mt_filter *f)
{
	static const struct {
		size_t lo, hi;
		const char *lo_name, *hi_name;
	} pairs[] = {
#define PAIR(a, b, an, bn) { offsetof(struct mt_filter, a), offsetof(struct mt_filter, b), an, bn }
		PAIR(from, to, "--from", "--to"),
		PAIR(address_min, address_max, "--address-min", "--address-max"),
		PAIR(size_min, size_max, "--size-min", "--size-max"),
		PAIR(lifetime_min, lifetime_max, "--lifetime-min", "--lifetime-max"),
		PAIR(depth_min, depth_max, "--backtrace-depth-min", "--backtrace-depth-max"),
		PAIR(group_interval_min, group_interval_max, "--group-interval-min",
		     "--group-interval-max"),
		PAIR(group_allocations_min, group_allocations_max, "--group-allocations-min",
		     "--group-allocations-max"),
		PAIR(group_leaked_min, group_leaked_max, "--group-leaked-allocations-min",
		     "--group-leaked-allocations-max"),
#undef PAIR
	};
	for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
		const struct mt_fbound *lo = (const void *)((const char *)f + pairs[i].lo);
		const struct mt_fbound *hi = (const void *)((const char *)f + pairs[i].hi);
		if (lo->set && hi->set && lo->pct == hi->pct && lo->v > hi->v)
			return mt_usage_error(cmd, "%s is above %s: nothing would match",
					      pairs[i].lo_name, pairs[i].hi_name);
	}
	return 0;
}

int mt_options_recordings(const struct mt_cmdline *c, struct mt_filter *filter, const char **files,
			  size_t max, size_t *n, int argc, char **argv)
{
	struct files fs = { files, 0, max };
	struct mt_cmdline rc = *c;
	rc.filter_help = 1;
	rc.operands = MT_OPERANDS_EVERY;
	rc.hook = filters;
	rc.hook_ctx = filter;
	rc.operand = some_recordings;
	rc.operand_ctx = &fs;
	int st = mt_options_parse(&rc, argc, argv, NULL);
	if (st == MT_OPTS_GO_ON && check_ranges(c->cmd, filter))
		st = MT_EXIT_USAGE;
	if (st != MT_OPTS_GO_ON)
		mt_filter_free(filter);
	*n = fs.n;
	return st;
}

int mt_options_recording(const struct mt_cmdline *c, struct mt_filter *filter, const char **file,
			 int argc, char **argv)
{
	size_t n;
	return mt_options_recordings(c, filter, file, 1, &n, argc, argv);
}

void mt_select_leak_kinds(struct mt_recording *rec, unsigned mask, const char *file)
{
	if (!mask)
		return;
	for (size_t i = 0; i < rec->nprocs; i++)
		if (!mt_leak_kinds_select(rec->procs[i], mask))
			mt_warning(
				"%s: no leak scan classified process %u (recorded with --no-scan, "
				"or not by record): all its leaked blocks are shown",
				file, rec->procs[i]->pid);
}
