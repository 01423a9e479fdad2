/*
 * options.h - the command line of every subcommand, declared as a table of
 * options (in the spirit of git's parse-options) and parsed by one function,
 * so that every command spells, checks and reports its options the same way:
 * a usage error is one line, `memtrace: error: ...`, then "Try 'memtrace
 * CMD --help'", and exit status 2.  The options part of --help is printed
 * from the same table, so an option is spelled and explained in one place.
 *
 * An option taking a value is written "-n 5", "-n5", "--top 5" or
 * "--top=5"; a flag only as itself ("--json", never "--json=1").
 */
#ifndef MEMTRACE_OPTIONS_H
#define MEMTRACE_OPTIONS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "capture/bpf/capture.h"

enum mt_opt_type {
	MT_OPT_END,	 /* ends the table */
	MT_OPT_FLAG,	 /* int: set to 1 */
	MT_OPT_STRING,	 /* const char *: the value */
	MT_OPT_SECONDS,	 /* double: seconds, as mt_parse_seconds reads them */
	MT_OPT_COUNT,	 /* uint64_t: 1 to .max */
	MT_OPT_COUNT32,	 /* uint32_t: 1 to .max */
	MT_OPT_PID,	 /* struct mt_pids: one more process (repeatable) */
	MT_OPT_PROCESS,	 /* long: a process of the recording, 0 to 2^31-1 */
	MT_OPT_CALLBACK, /* .cb checks and stores the value */
};

enum {
	MT_OPTF_NO_GLUE = 1,  /* the short form takes no attached value ("-n5") */
	MT_OPTF_EQ_ONLY = 2,  /* the value is optional, given only as --NAME=VALUE */
	MT_OPTF_POSITIVE = 4, /* MT_OPT_SECONDS: more than 0 */
	MT_OPTF_NONEMPTY = 8, /* MT_OPT_STRING: not "" */
	MT_OPTF_NOARG = 16,   /* MT_OPT_CALLBACK: takes no value, like a flag */
};

struct mt_option;

/* Checks VAL (NULL when missing) of the option spelled ARG and stores it
 * through o->target.  Returns 0, or the status of mt_usage_error(CMD, ...). */
typedef int mt_opt_cb(const char *cmd, const struct mt_option *o, const char *arg, const char *val);

struct mt_option {
	const char *shortopt; /* "-n", or NULL */
	const char *longopt;  /* "--top", or NULL */
	/* --help: the value's name ("N", or "=A|B" and "[=MS]" as written), and
	 * what the option does, lines split by '\n' (NULL: not listed) */
	const char *argh;
	const char *help;
	enum mt_opt_type type;
	void *target;
	/* the usage error for a missing or bad value (MT_OPT_STRING,
	 * MT_OPT_SECONDS, MT_OPT_PROCESS; without it MT_OPT_COUNT* say their
	 * range, naming the short spelling: "-n needs a positive number ...") */
	const char *err;
	uint64_t max;	/* MT_OPT_COUNT* */
	unsigned flags; /* MT_OPTF_* */
	mt_opt_cb *cb;	/* MT_OPT_CALLBACK */
	int value;	/* MT_OPT_CALLBACK: what this option stands for */
};

/* The processes of -p PID options. */
#define MT_MAX_PIDS 256
struct mt_pids {
	pid_t v[MT_MAX_PIDS];
	size_t n;
};

/* How a command takes what is not an option. */
enum mt_operands {
	MT_OPERANDS_NONE,  /* none: every argument is an option */
	MT_OPERANDS_STOP,  /* the first one ends the options (record's COMMAND) */
	MT_OPERANDS_EVERY, /* anywhere, each handed to .operand ("-" too) */
};

struct mt_cmdline {
	const char *cmd; /* the command, as usage errors name it */
	const struct mt_option *opts;
	const struct mt_option *more; /* another table, after OPTS (or NULL) */
	/* -h, --help prints USAGE (or what PROLOGUE prints), then the options
	 * with their help at column COL and "-h, --help", then EPILOGUE */
	const char *usage;
	void (*prologue)(FILE *f);
	int col;
	const char *epilogue;
	int filter_help; /* then the filters' help (analyse/filter.h) */
	enum mt_operands operands;
	int dashdash; /* "--" ends the options (else it is an unknown option) */
	/* Tried first on every argument, for options of another stage's table
	 * (the filters): returns 1 when it took argv[*i] (and moved *i past its
	 * value), 0 when not, -1 after a usage error. */
	int (*hook)(void *ctx, const char *cmd, int argc, char **argv, int *i);
	void *hook_ctx;
	/* MT_OPERANDS_EVERY: takes one operand; returns 0 or a usage status. */
	int (*operand)(void *ctx, const char *cmd, const char *arg);
	void *operand_ctx;
};

struct mt_filter;

/* What mt_options_parse returns when the command should go on. */
#define MT_OPTS_GO_ON (-1)

/* Parses argv[1..argc-1] against C.  Returns MT_OPTS_GO_ON, with *NEXT (if
 * not NULL) the index of the first argument after the options; or the
 * status to exit with: MT_EXIT_OK after printing the help, MT_EXIT_USAGE
 * after a usage error. */
int mt_options_parse(const struct mt_cmdline *c, int argc, char **argv, int *next);

/* Options more than one command takes, spelled and checked alike. */
#define MT_OPT_PIDS(pids, what)                                                      \
	{                                                                            \
		.shortopt = "-p", .longopt = "--pid", .argh = "PID", .help = (what), \
		.type = MT_OPT_PID, .target = (pids)                                 \
	}
#define MT_OPT_TOP(n, most, what)                                                  \
	{                                                                          \
		.shortopt = "-n", .longopt = "--top", .argh = "N", .help = (what), \
		.type = MT_OPT_COUNT, .target = (n), .max = (most)                 \
	}
#define MT_OPT_JSON(on, what)                                                            \
	{                                                                                \
		.longopt = "--json", .help = (what), .type = MT_OPT_FLAG, .target = (on) \
	}
#define MT_OPT_RECPID(pid, what)                                                           \
	{                                                                                  \
		.longopt = "--pid", .argh = "PID", .help = (what), .type = MT_OPT_PROCESS, \
		.target = (pid), .err = "--pid needs a process id"                         \
	}
/* --image N|NAME of report and export (analyse/images.h): the images of a
 * recording by the number reports give them, or by program name. */
#define MT_OPT_IMAGE(sel, what)                                                                \
	{                                                                                      \
		.longopt = "--image", .argh = "N|NAME", .help = (what), .type = MT_OPT_STRING, \
		.target = (sel), .err = "--image needs an image number or a program's name",   \
		.flags = MT_OPTF_NONEMPTY                                                      \
	}
/* Says in one error line that FILE has no process that --pid and --image
 * (PID, -1: none; IMAGE, NULL: none) select. */
void mt_no_process_error(const char *file, long pid, const char *image);
#define MT_OPT_OUTPUT(path, name, what)                                                  \
	{                                                                                \
		.shortopt = "-o", .longopt = "--output", .argh = (name), .help = (what), \
		.type = MT_OPT_STRING, .target = (path), .err = "-o needs a file name",  \
		.flags = MT_OPTF_NONEMPTY                                                \
	}

/* --sample[=BYTES] of record, attach, top and sweep: record one allocation
 * per BYTES allocated on average (default 512 KiB; 0: every one). */
#define MT_SAMPLE_DEFAULT (512u << 10)
int mt_opt_sample(const char *cmd, const struct mt_option *o, const char *arg, const char *val);
#define MT_OPT_SAMPLE(mean)                                                          \
	{                                                                            \
		.longopt = "--sample", .argh = "[=BYTES]",                           \
		.help = "record one allocation per BYTES allocated, on average\n"    \
			"(default 512K; K, M, G: powers of 1024; 0: every\n"         \
			"one), weighed so that every figure is an estimate of\n"     \
			"the whole; a call not sampled costs a subtraction and\n"    \
			"a branch, no stack walk: for production",                   \
		.type = MT_OPT_CALLBACK, .target = (mean), .flags = MT_OPTF_EQ_ONLY, \
		.cb = mt_opt_sample                                                  \
	}

#define MT_OPT_SUPPRESSIONS(path)                                                              \
	{                                                                                      \
		.longopt = "--suppressions", .argh = "FILE",                                   \
		.help = "leaks matched by FILE's leak:PATTERN lines\n"                         \
			"(LeakSanitizer's syntax) are not counted as leaks",                   \
		.type = MT_OPT_STRING, .target = (path), .err = "--suppressions needs a file", \
		.flags = MT_OPTF_NONEMPTY                                                      \
	}

/* Applies the suppressions file PATH (may be NULL: none) to REC.  0, or -1
 * after a one-line error. */
struct mt_recording;
int mt_suppress_file(const char *path, struct mt_recording *rec);

/* When F selects a thread (--thread TID) that made no event in ALL (the
 * whole recording FILE), says so in one error line and returns -1: a
 * mistyped tid would otherwise give an empty report that looks like an idle
 * thread's.  0 otherwise. */
int mt_thread_check(const struct mt_filter *f, const struct mt_recording *all, const char *file);

/* When F's --from starts after the end of every process of ALL (the whole
 * recording FILE), warns in one line naming how long it ran: the report,
 * empty as for any filter that matches nothing, would otherwise not say
 * why (--from 1h on a recording of a few seconds). */
void mt_range_check(const struct mt_filter *f, const struct mt_recording *all, const char *file);

/* Says ERR, what loading a recording through the filters gave: a message
 * about the --where condition is named by its option, as the user wrote it
 * (the filters name it "where", the server's parameter). */
void mt_load_error(const char *err);

/* The view options of report and diff (--summary, --leaks, ...): each sets
 * views->last to its .value and counts itself in views->n.  --leaks=KINDS
 * also names the kinds of leak to show (analyse/leakkinds.h's mask; 0:
 * --leaks alone). */
struct mt_views {
	int last, n;
	unsigned leak_kinds;
};
int mt_opt_view(const char *cmd, const struct mt_option *o, const char *arg, const char *val);
#define MT_OPT_VIEW(name, views, v)                                                             \
	{                                                                                       \
		.longopt = name, .type = MT_OPT_CALLBACK, .target = (views), .cb = mt_opt_view, \
		.value = v, .flags = MT_OPTF_NOARG                                              \
	}
/* The five views, in the order --help lists them. */
#define MT_OPT_VIEWS(views)                                           \
	MT_OPT_VIEW("--summary", views, MT_VIEW_SUMMARY),             \
		{ .longopt = "--leaks",                               \
		  .type = MT_OPT_CALLBACK,                            \
		  .target = (views),                                  \
		  .cb = mt_opt_view,                                  \
		  .value = MT_VIEW_LEAKS,                             \
		  .flags = MT_OPTF_EQ_ONLY },                         \
		MT_OPT_VIEW("--peak", views, MT_VIEW_PEAK),           \
		MT_OPT_VIEW("--temporary", views, MT_VIEW_TEMPORARY), \
		MT_OPT_VIEW("--frequency", views, MT_VIEW_FREQUENCY)
/* --threshold PCT of the tree views: a percentage into the double at
 * o->target. */
int mt_opt_threshold(const char *cmd, const struct mt_option *o, const char *arg, const char *val);

/* --width N and --full-names of the text outputs, into the int at
 * o->target (-1 until given: then mt_output_width) and FULL. */
int mt_opt_width(const char *cmd, const struct mt_option *o, const char *arg, const char *val);
#define MT_OPT_FIT(width, full)                                               \
	{ .longopt = "--width",                                               \
	  .argh = "N",                                                        \
	  .help = "fit lines to N columns, wrapping longer ones (0: no\n"     \
		  "limit; default: the terminal's width)",                    \
	  .type = MT_OPT_CALLBACK,                                            \
	  .target = (width),                                                  \
	  .cb = mt_opt_width },                                               \
	{                                                                     \
		.longopt = "--full-names",                                    \
		.help = "C++ names with their template arguments (default:\n" \
			"folded, as std::map<>::operator[])",                 \
		.type = MT_OPT_FLAG, .target = (full)                         \
	}
/* The width of text on standard output when --width was not given: the
 * terminal's; when it is not a terminal, $COLUMNS if set (a user asking
 * for it), else 0: a file or a pipe gets whole lines. */
int mt_output_width(void);

/* mt_options_parse for a BPF command (attach, top, sweep): C's options,
 * then the map sizes every one takes into MAPS: --max-live N (live blocks)
 * and --max-stacks N (distinct stacks). */
int mt_options_bpf(const struct mt_cmdline *c, struct mt_bpf_opts *maps, int argc, char **argv);

/* mt_options_parse for a command that reads one recording (its path into
 * *FILE) through the filters of analyse/filter.h (into FILTER, which is
 * freed when the command is to exit). */
int mt_options_recording(const struct mt_cmdline *c, struct mt_filter *filter, const char **file,
			 int argc, char **argv);
/* The same for up to MAX recordings, their paths into FILES[0..*N). */
int mt_options_recordings(const struct mt_cmdline *c, struct mt_filter *filter, const char **files,
			  size_t max, size_t *n, int argc, char **argv);

/* --leaks=KINDS (MASK; 0: not given): every process of REC counts as
 * leaked the blocks of those kinds alone (mt_leak_kinds_select); a
 * process no leak scan classified is named in a warning (FILE's), its
 * leaked blocks all shown. */
void mt_select_leak_kinds(struct mt_recording *rec, unsigned mask, const char *file);

#endif
