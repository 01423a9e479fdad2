/*
 * util.c - see util.h.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static void vsay(const char *kind, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "memtrace: %s", kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void mt_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay("error: ", fmt, ap);
	va_end(ap);
}

void mt_warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay("warning: ", fmt, ap);
	va_end(ap);
}

void mt_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay("", fmt, ap);
	va_end(ap);
}

int mt_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay("error: ", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'memtrace %s%s--help' for more information.\n", cmd ? cmd : "",
		cmd ? " " : "");
	return MT_EXIT_USAGE;
}

static int fail_status = MT_EXIT_RUNTIME;

void mt_set_fail_status(int status)
{
	fail_status = status;
}

void mt_oom(size_t n)
{
	fprintf(stderr, "memtrace: error: out of memory (%zu bytes)\n", n);
	exit(fail_status);
}

static void oom(size_t n)
{
	mt_oom(n);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		oom(n * m);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

void mt_grow(void *arr, size_t *cap, size_t n, size_t es)
{
	void **a = arr;
	if (n < *cap)
		return;
	size_t c = *cap ? *cap : 16;
	while (c <= n)
		c *= 2;
	*a = xrealloc(*a, c * es);
	memset((char *)*a + *cap * es, 0, (c - *cap) * es);
	*cap = c;
}

int mt_parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int mt_parse_size(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	static const char units[] = "KMGT";
	const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
	unsigned shift = 0;
	if (u) {
		shift = 10 * (unsigned)(u - units + 1);
		end++;
		if (toupper((unsigned char)*end) == 'I' && toupper((unsigned char)end[1]) == 'B')
			end += 2;
		else if (toupper((unsigned char)*end) == 'B')
			end++;
	} else if (toupper((unsigned char)*end) == 'B') {
		end++;
	}
	if (*end || (shift && v > UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int mt_parse_double(const char *s, double *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || v != v)
		return -1;
	*out = v;
	return 0;
}

const char *mt_fmt_bytes(uint64_t n, char buf[32])
{
	static const char *const units[] = { "B", "KB", "MB", "GB", "TB" };
	if (n < 1000) {
		snprintf(buf, 32, "%llu B", (unsigned long long)n);
		return buf;
	}
	double v = (double)n;
	int u = 0;
	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	snprintf(buf, 32, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, units[u]);
	return buf;
}

char *mt_put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*p++ = tmp[--n];
	return p;
}

const char *mt_fmt_size(uint64_t n, char buf[32])
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;
	while (u < 4 && n && !(n & 1023)) {
		n >>= 10;
		u++;
	}
	snprintf(buf, 32, "%llu %s", (unsigned long long)n, units[u]);
	return buf;
}

const char *mt_fmt_count(uint64_t n, char buf[32])
{
	char tmp[32];
	int len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)n);
	int o = 0;
	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

int mt_opt(const char *arg, const char *name, const char **val)
{
	if (arg[0] != '-' || arg[1] != '-')
		return 0;
	size_t n = strlen(name);
	if (strncmp(arg + 2, name, n) != 0)
		return 0;
	if (arg[2 + n] == 0) {
		*val = NULL;
		return 1;
	}
	if (arg[2 + n] == '=') {
		*val = arg + 3 + n;
		return 1;
	}
	return 0;
}

volatile int mt_stop;

static void on_stop(int sig)
{
	(void)sig;
	mt_stop = 1;
}

void mt_catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int mt_parse_seconds(const char *s, double *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	/* digits only: strtod would take "inf", "nan" and hex floats too */
	if (errno || v < 0 || v != v || end == s || !strchr("0123456789.", *s))
		return -1;
	/* "m" alone is not taken: minutes to some, milliseconds to others */
	static const struct {
		const char *unit;
		double scale;
	} units[] = { { "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "min", 60 }, { "h", 3600 } };
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (!strcmp(end, units[i].unit)) {
			*out = v * units[i].scale;
			return 0;
		}
	return -1;
}

int mt_arg(int argc, char **argv, int *i, const char *shortopt, const char *longopt,
	   const char **val)
{
	const char *a = argv[*i];
	if ((shortopt && !strcmp(a, shortopt)) || (longopt && !strcmp(a, longopt))) {
		*val = *i + 1 < argc ? argv[++*i] : NULL;
		return 1;
	}
	if (shortopt && !strncmp(a, shortopt, strlen(shortopt)) && a[1] != '-') {
		*val = a + strlen(shortopt);
		return 1;
	}
	return longopt && mt_opt(a, longopt + 2, val) && *val;
}

int mt_arg_pid(const char *cmd, const char *val, pid_t *pid)
{
	uint64_t n;
	if (!val || mt_parse_u64(val, &n) || n == 0 || n > 0x3fffffff)
		return mt_usage_error(cmd, "-p needs a process id, not '%s'", val ? val : "");
	*pid = (pid_t)n;
	return 0;
}

int mt_arg_count(const char *cmd, const char *opt, const char *val, uint64_t max, uint64_t *out)
{
	if (!val || mt_parse_u64(val, out) || *out == 0 || *out > max)
		return mt_usage_error(cmd, "%s needs a positive number (at most %llu), not '%s'",
				      opt, (unsigned long long)max, val ? val : "");
	return 0;
}

int mt_open_regular(const char *path, int flags, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | flags);
	struct stat st;

	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		return fd;
	int e = fd < 0 ? errno : EINVAL; /* (fstat cannot fail on an open descriptor) */
	if (fd >= 0)
		close(fd);
	if (why)
		snprintf(why, whylen, "cannot open: %s",
			 fd >= 0 ? "not a regular file" : strerror(e));
	errno = e;
	return -1;
}

int mt_open_recorded(const char *path, char *why, size_t whylen)
{
	const char *root = getenv("MEMTRACE_SYSROOT");
	if (root && *root && path[0] == '/') {
		char full[PATH_MAX];
		int n = snprintf(full, sizeof full, "%s%s", root, path);
		if (n > 0 && (size_t)n < sizeof full) {
			int fd = mt_open_regular(full, 0, NULL, 0);
			if (fd >= 0)
				return fd;
		}
	}
	return mt_open_regular(path, 0, why, whylen);
}

int mt_gather_mmaps(void)
{
	const char *v = getenv("MEMTRACE_GATHER_MMAP_CALLS");
	if (!v || !*v)
		v = getenv("MEMORY_PROFILER_GATHER_MMAP_CALLS");
	return !v || !*v ||
	       !(strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0);
}
