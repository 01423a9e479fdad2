/*
 * util.h - small things every command of the memtrace binary uses: error
 * messages in the one-line `memtrace: error: ...` form, allocation that
 * cannot fail silently, number parsing and formatting, growable arrays.
 */
#ifndef MEMTRACE_UTIL_H
#define MEMTRACE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit statuses of every subcommand but record (memtrace(1), EXIT STATUS). */
#define MT_EXIT_OK 0
#define MT_EXIT_RUNTIME 1
#define MT_EXIT_USAGE 2

void mt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mt_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage error: prints it, a hint to --help, returns MT_EXIT_USAGE. */
int mt_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one out-of-memory policy of the memtrace binary: a one-line error
 * and exit with the command's failure status (MT_EXIT_RUNTIME, or 125 once
 * record has set it), never a crash, never a silent loss.  The x*()
 * allocators below call it; so does any table that cannot grow. */
void mt_oom(size_t n) __attribute__((noreturn));
void mt_set_fail_status(int status);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrndup(const char *s, size_t n);
char *xstrdup(const char *s);

/* Grows *ARR (element size ES) so that index N is valid; *CAP is updated. */
void mt_grow(void *arr, size_t *cap, size_t n, size_t es);

int mt_parse_u64(const char *s, uint64_t *out);
int mt_parse_double(const char *s, double *out);
/* A size in bytes: a whole number, with K, M, G or T after it (KiB, MiB...:
 * powers of 1024, as allocators count), any case, the B optional. */
int mt_parse_size(const char *s, uint64_t *out);

/* "1.23 MB"-style figures, and "1,234,567" with separators; both into BUF. */
const char *mt_fmt_bytes(uint64_t n, char buf[32]);
const char *mt_fmt_count(uint64_t n, char buf[32]);
/* A size as it was given (--sample=512K): "512 KiB", in powers of 1024
 * when it is a whole number of them, else in bytes. */
const char *mt_fmt_size(uint64_t n, char buf[32]);
/* V's decimal digits at P (at most 20, no NUL); returns their end.  For
 * the outputs that write millions of figures, where printf's parsing of
 * its format costs more than the rest. */
char *mt_put_u64(char *p, uint64_t v);
/* Signed figures (a diff's changes, a tree's weights) made of a
 * recording's sizes and counts, which a hostile file sets to anything up to
 * 2^64 - 1: they saturate at INT64_MIN and INT64_MAX rather than overflow
 * (undefined in C, and a wrapped figure would show growth as shrinkage).
 * mt_sat_i64 is an unsigned figure as a signed one, mt_sat_sub A - B of
 * two unsigned figures, mt_sat_add the sum of two signed ones. */
static inline int64_t mt_sat_i64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}
static inline int64_t mt_sat_sub(uint64_t a, uint64_t b)
{
	if (a >= b)
		return mt_sat_i64(a - b);
	/* b - a is at most 2^64 - 1: past 2^63 it saturates, at 2^63 exactly
	 * it is INT64_MIN itself */
	return b - a >= (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)(b - a);
}
static inline int64_t mt_sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b < 0 ? INT64_MIN : INT64_MAX;
	return r;
}
/* A + B of two unsigned figures, at most 2^64 - 1 (a total that wrapped
 * would be smaller than its parts). */
static inline uint64_t mt_sat_uadd(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* "s" unless N is 1: "%s allocation%s", mt_fmt_count(n, buf), mt_s(n). */
static inline const char *mt_s(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* Long-option matching for hand-written argument loops: matches "--NAME" or
 * "--NAME=VALUE"; returns 1 and sets *val (NULL without '='). */
int mt_opt(const char *arg, const char *name, const char **val);

/* Option parsing for the commands: matches argv[*i] against SHORTOPT ("-n",
 * also written "-n5") or LONGOPT ("--top", also "--top=5"; either may be
 * NULL) taking a value, which is the next argument unless attached (*i then
 * moves past it).  Returns 1 with *val set (NULL when it is missing), 0 when
 * the argument is another option. */
int mt_arg(int argc, char **argv, int *i, const char *shortopt, const char *longopt,
	   const char **val);
/* The value of a -p PID option, with the usage error written on failure. */
int mt_arg_pid(const char *cmd, const char *val, pid_t *pid);
/* The value of -n N: a positive count up to MAX. */
int mt_arg_count(const char *cmd, const char *opt, const char *val, uint64_t max, uint64_t *out);

/* SIGINT, SIGTERM and SIGHUP set mt_stop instead of killing the process:
 * commands that trace others must detach and report before they exit. */
extern volatile int mt_stop;
void mt_catch_stop_signals(void);

/* A duration as a command-line value, into seconds: a decimal number
 * alone (seconds) or followed by ms, s, min or h: "2", "0.5", "200ms",
 * "10s", "2min", "1h".  "2m" is refused (minutes or milliseconds?). */
int mt_parse_seconds(const char *s, double *out);
/* The forms mt_parse_seconds takes, for error messages. */
#define MT_DURATION_FORMS "seconds, or a number with ms, s, min or h (200ms, 1.5s, 2min, 1h)"

/* The one way to open a file that a traced process or a recording names
 * (hostile: a jailed process owns its paths, a recording can name any):
 * read-only, with O_NONBLOCK so that a FIFO cannot hang the open, and kept
 * only if fstat of what was opened (not a stat before it, which a swap
 * could outrun) says it is a regular file.  FLAGS are added (O_NOFOLLOW
 * where the path is a resolved one).  Returns the descriptor, or -1 with
 * errno set (EINVAL: not a regular file) and, given WHY, a reason a user
 * can read ("cannot open: ..."). */
int mt_open_regular(const char *path, int flags, char *why, size_t whylen);

/* mt_open_regular for a file a recording names (a module, the executable).
 * A recording made on another machine (an ARM board, a cross build under
 * qemu-user) names that machine's files: with MEMTRACE_SYSROOT set to a
 * copy of its root, PATH is looked for there first, then as it is (the
 * program's own binaries); the readers check build-ids. */
int mt_open_recorded(const char *path, char *why, size_t whylen);
/* Whether the calls that map memory are to be recorded: yes unless
 * MEMTRACE_GATHER_MMAP_CALLS (or bytehound's MEMORY_PROFILER_GATHER_MMAP_CALLS)
 * is 0, false or no (record --no-mmap sets it, for the shim too). */
int mt_gather_mmaps(void);

#endif
