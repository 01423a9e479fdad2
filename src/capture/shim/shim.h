/*
 * shim.h - what the files of libmemtrace-preload.so offer each other.
 *
 * The shim runs inside the traced program.  Its rules: no memory from the
 * heap it measures (mt_arena_* hands out mmap'd memory), no stdio, no locks
 * that a signal handler or fork could leave held, and nothing on the
 * allocation hot path that is not needed to capture the event.
 *
 * The sections below are in call order: a file calls only the files whose
 * sections come before its own, so calls run one way, from preload.c (the
 * hooks and start-up, which calls them all and offers nothing here) down to
 * arena.c, state.c, self.c and config.c, which call no other file of the
 * shim.  stacktab.c and the unwinder (unwind.h) are called only from
 * preload.c.
 */
#ifndef MEMTRACE_SHIM_H
#define MEMTRACE_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "format/codec.h"

#define MT_HIDDEN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* The one architecture-specific line outside unwind_<arch>.c: a spin-wait hint. */
#if defined(__x86_64__) || defined(__i386__)
#define mt_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define mt_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define mt_cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

/* arena.c: memory that never comes from the traced heap. */
MT_HIDDEN void *mt_arena_alloc(size_t size); /* zeroed, 16-byte aligned */
MT_HIDDEN void *mt_map(size_t size);	     /* fresh anonymous mapping or NULL */

/* state.c: whether events are recorded now, and the clock that stamps them. */
MT_HIDDEN extern int mt_enabled;
MT_HIDDEN extern clockid_t mt_clock; /* CLOCK_MONOTONIC_COARSE unless precise */

/* Inline: every recorded event reads the clock. */
static inline uint64_t mt_now(void)
{
	struct timespec ts;
	clock_gettime(mt_clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* self.c: the process's own name, read from /proc/self. */
MT_HIDDEN int mt_read_self_exe(char *buf, size_t len); /* length, or -1 */
/* Up to LEN bytes of the NUL-separated arguments; the length, 0 if unknown. */
MT_HIDDEN size_t mt_read_self_cmdline(char *buf, size_t len);
/* Expands %p (pid), %t (time), %e (executable name), %n (counter) into OUT. */
MT_HIDDEN int mt_expand_path(char *out, size_t len, const char *pattern);
/* The output name when MEMTRACE_OUTPUT is unset: the shim made it up, so
 * channel.c never overwrites what is there (STEM + [.N] + .mtrace). */
#define MT_OUTPUT_STEM "memtrace.%e.%p"
#define MT_OUTPUT_DEFAULT MT_OUTPUT_STEM ".mtrace"

/* fds.c: the shim's descriptors, high and out of the program's way. */
struct rlimit;
struct mt_fd_id {
	uint64_t dev, ino; /* what the descriptor was when the shim opened it */
};
/* Raises RLIMIT_NOFILE's soft limit for the shim to open descriptors (1 if
 * it did; put back with mt_fd_restore_limit). */
MT_HIDDEN int mt_fd_lift_limit(struct rlimit *saved);
MT_HIDDEN void mt_fd_restore_limit(const struct rlimit *saved);
/* Moves FD high (close-on-exec) and notes what it is; returns its number. */
MT_HIDDEN int mt_fd_place(int fd, struct mt_fd_id *id);
/* Whether FD is still what ID says (the program may have closed it and
 * opened a file of its own at that number). */
MT_HIDDEN int mt_fd_is(int fd, const struct mt_fd_id *id);
MT_HIDDEN void mt_fd_close(int fd, const struct mt_fd_id *id); /* only if still ours */
/* Makes PATH absolute (a daemon changes directory before the shim reopens). */
MT_HIDDEN void mt_fd_absolute(char *path, size_t len);

/* config.c: the MEMTRACE_* (and MEMORY_PROFILER_*) environment. */
struct mt_config {
	char output[4096];   /* output path pattern (standalone mode) */
	const char *connect; /* MEMTRACE_CONNECT: recorder socket (record mode) */
	int follow_forks;
	int cull;	       /* cull temporary allocations */
	uint64_t cull_ns;      /* lifetime threshold */
	uint64_t cull_pending; /* pending buffer bound */
	int disabled_by_default;
	int sigusr1, sigusr2;
	int precise_timestamps;
	int zero_memory;
	uint64_t backtrace_cache_size;
	int log_level;	     /* -1 off, 0 unset (only "not traced"), 1 error, 2 warn, 3 info,
			* 4 debug, 5 trace */
	const char *logfile; /* MEMTRACE_LOGFILE: path pattern, or NULL */
};
MT_HIDDEN extern struct mt_config mt_cfg;
MT_HIDDEN void mt_config_load(void);

/* log.c: the shim's messages, to stderr or MEMTRACE_LOGFILE. */
MT_HIDDEN void mt_log_open(void); /* after mt_config_load */
MT_HIDDEN void mt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* channel.c: where records go (ring shared with `memtrace record`, or a file). */
MT_HIDDEN int mt_channel_open(uint32_t ppid);
MT_HIDDEN void mt_channel_lock(void);
MT_HIDDEN void mt_channel_unlock(void);
/* Whether this thread holds the lock (a signal handler asks: the thread it
 * interrupted may be holding it). */
MT_HIDDEN int mt_channel_held_here(void);
/* With the lock held: room for MAX more bytes; returns where to write. */
MT_HIDDEN uint8_t *mt_channel_reserve(size_t max);
/* With the lock held: the bytes up to END are complete records. */
MT_HIDDEN void mt_channel_commit(uint8_t *end);
MT_HIDDEN void mt_channel_flush(void); /* standalone: write out what is buffered */
MT_HIDDEN void mt_channel_after_fork_child(int follow);
MT_HIDDEN extern struct mt_enc mt_enc_state; /* guarded by the channel lock */

/* modules.c: the loaded objects, emitted as MODULE records. */
MT_HIDDEN void mt_modules_emit_new(void); /* takes the channel lock itself */
MT_HIDDEN void mt_modules_forget(void);	  /* after fork: re-emit everything */

/* stacktab.c: deduplicates stacks; called with the channel lock held. */
MT_HIDDEN void mt_stacktab_init(uint64_t capacity);
MT_HIDDEN void mt_stacktab_reset(void);
/* Returns the stack's id; *is_new is set when it has not been emitted yet. */
MT_HIDDEN uint64_t mt_stacktab_intern(const uint64_t *pcs, unsigned n, int *is_new);

#endif
