/*
 * config.c - the shim's settings, read once from the environment.
 *
 * Names follow bytehound's (MEMORY_PROFILER_*) with the prefix MEMTRACE_;
 * bytehound's own names are accepted as aliases so its users keep their
 * scripts.  Defaults differ where bytehound's are unsafe: no signal handlers
 * are installed unless asked for, since they would take over the program's
 * own SIGUSR1/SIGUSR2.
 *
 * This file only reads: what the settings lead to (file names, the log file,
 * the clock) is done by the files that use them.
 */
#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* Unset is 0: only what must be said (a process not traced, log.c);
 * "off" is -1: nothing. */
static int parse_level(const char *v)
{
	static const char *const names[] = { "off", "error", "warn", "info", "debug", "trace" };
	if (!v)
		return 0;
	if (strcasecmp(v, "off") == 0)
		return -1;
	for (int i = 1; i < 6; i++)
		if (strcasecmp(v, names[i]) == 0)
			return i;
	return 2;
}

void mt_config_load(void)
{
	struct mt_config *c = &mt_cfg;
	const char *out = env("OUTPUT");
	snprintf(c->output, sizeof c->output, "%s", out && *out ? out : MT_OUTPUT_DEFAULT);
	c->connect = getenv("MEMTRACE_CONNECT");
	c->main_pid = (uint32_t)env_u64("MAIN", 0);
	c->follow_forks = env_bool("FOLLOW_FORKS", 0) || env_bool("TRACK_CHILD_PROCESSES", 0);
	c->cull = env_bool("CULL_TEMPORARY_ALLOCATIONS", 0);
	c->cull_ns = env_u64("TEMPORARY_ALLOCATION_LIFETIME_THRESHOLD", 10000) * 1000000ull;
	c->cull_pending = env_u64("TEMPORARY_ALLOCATION_PENDING_THRESHOLD", 65536);
	c->disabled_by_default = env_bool("DISABLE_BY_DEFAULT", 0);
	c->sigusr1 = env_bool("REGISTER_SIGUSR1", 0);
	c->sigusr2 = env_bool("REGISTER_SIGUSR2", 0);
	c->precise_timestamps = env_bool("PRECISE_TIMESTAMPS", 0);
	const char *tb = env("THREAD_BUFFERS");
	c->thread_buffers =
		!tb || !*tb || strcasecmp(tb, "auto") == 0 ? -1 : env_bool("THREAD_BUFFERS", 0);
	c->zero_memory = env_bool("ZERO_MEMORY", 0);
	c->backtrace_cache_size = env_u64("BACKTRACE_CACHE_SIZE", 1u << 18);
	c->log_level = parse_level(env("LOG"));
	c->logfile = env("LOGFILE");
	c->enable_server = env_bool("ENABLE_SERVER", 0);
	c->enable_broadcast = env_bool("ENABLE_BROADCAST", 0);
	c->write_binaries = env_bool("WRITE_BINARIES_TO_OUTPUT", 0);
	c->base_server_port = env("BASE_SERVER_PORT");
	c->listen = env("LISTEN");
	c->token = env("TOKEN");
	c->server_wait = env_u64("SERVER_WAIT", 0);
	c->gather_mmap = env_bool("GATHER_MMAP_CALLS", 1);
	c->sample = env_u64("SAMPLE", 0);
	c->sample_seed = env_u64("SAMPLE_SEED", 0);
	if (c->sample)
		c->cull = 0; /* a sampled block's lifetime says nothing of the others' */
}
