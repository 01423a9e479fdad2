/*
 * config.c - the shim's settings, read once from the environment.
 *
 * Names follow bytehound's (MEMORY_PROFILER_*) with the prefix MEMTRACE_;
 * bytehound's own names are accepted as aliases so its users keep their
 * scripts.  Defaults differ where bytehound's are unsafe: no signal handlers
 * are installed unless asked for, since they would take over the program's
 * own SIGUSR1/SIGUSR2.
 */
#include "shim.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

struct mt_config mt_cfg;

static const char *env(const char *name)
{
	char buf[96];
	snprintf(buf, sizeof buf, "MEMTRACE_%s", name);
	const char *v = getenv(buf);
	if (v)
		return v;
	snprintf(buf, sizeof buf, "MEMORY_PROFILER_%s", name);
	return getenv(buf);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = env(name);
	if (!v || !*v)
		return def;
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	return *end ? def : n;
}

static int env_bool(const char *name, int def)
{
	const char *v = env(name);
	if (!v || !*v)
		return def;
	return !(strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0);
}

/* Expands %p (pid), %t (seconds since the epoch), %e (executable name) and
 * %n (a counter making the name unique) into OUT. */
int mt_expand_path(char *out, size_t len, const char *pattern)
{
	static unsigned counter;
	char exe[4096], *base = exe;
	if (mt_read_self_exe(exe, sizeof exe) > 0) {
		char *slash = strrchr(exe, '/');
		if (slash)
			base = slash + 1;
	} else {
		strcpy(exe, "unknown");
	}
	size_t o = 0;
	for (const char *p = pattern; *p && o + 32 < len; p++) {
		if (*p != '%' || !p[1]) {
			out[o++] = *p;
			continue;
		}
		switch (*++p) {
		case 'p':
			o += (size_t)snprintf(out + o, len - o, "%d", (int)getpid());
			break;
		case 't':
			o += (size_t)snprintf(out + o, len - o, "%lld", (long long)time(NULL));
			break;
		case 'e':
			o += (size_t)snprintf(out + o, len - o, "%.200s", base);
			break;
		case 'n':
			o += (size_t)snprintf(out + o, len - o, "%u", counter++);
			break;
		default:
			out[o++] = '%';
			out[o++] = *p;
		}
	}
	out[o < len ? o : len - 1] = 0;
	return 0;
}

static int parse_level(const char *v)
{
	static const char *const names[] = {"off", "error", "warn", "info", "debug", "trace"};
	if (!v)
		return 0;
	for (int i = 0; i < 6; i++)
		if (strcasecmp(v, names[i]) == 0)
			return i;
	return 2;
}

void mt_config_load(void)
{
	struct mt_config *c = &mt_cfg;
	const char *out = env("OUTPUT");
	snprintf(c->output, sizeof c->output, "%s", out && *out ? out : "memtrace.%e.%p.mtrace");
	c->connect = getenv("MEMTRACE_CONNECT");
	c->follow_forks = env_bool("FOLLOW_FORKS", 0) || env_bool("TRACK_CHILD_PROCESSES", 0);
	c->cull = env_bool("CULL_TEMPORARY_ALLOCATIONS", 0);
	c->cull_ns = env_u64("TEMPORARY_ALLOCATION_LIFETIME_THRESHOLD", 10000) * 1000000ull;
	c->cull_pending = env_u64("TEMPORARY_ALLOCATION_PENDING_THRESHOLD", 65536);
	c->disabled_by_default = env_bool("DISABLE_BY_DEFAULT", 0);
	c->sigusr1 = env_bool("REGISTER_SIGUSR1", 0);
	c->sigusr2 = env_bool("REGISTER_SIGUSR2", 0);
	c->precise_timestamps = env_bool("PRECISE_TIMESTAMPS", 0);
	c->zero_memory = env_bool("ZERO_MEMORY", 0);
	c->backtrace_cache_size = env_u64("BACKTRACE_CACHE_SIZE", 1u << 18);
	c->log_level = parse_level(env("LOG"));
	c->log_fd = 2;
	const char *lf = env("LOGFILE");
	if (lf && *lf && c->log_level) {
		char path[4096];
		mt_expand_path(path, sizeof path, lf);
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0)
			c->log_fd = fd;
	}
}

void mt_log(int level, const char *fmt, ...)
{
	if (level > mt_cfg.log_level)
		return;
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "memtrace[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(mt_cfg.log_fd, buf, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
}
