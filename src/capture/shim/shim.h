/*
 * shim.h - what the files of libmemtrace-preload.so offer each other.
 *
 * The shim runs inside the traced program.  Its rules: no memory from the
 * heap it measures (mt_arena_* hands out mmap'd memory), no stdio, no locks
 * that a signal handler or fork could leave held, and nothing on the
 * allocation hot path that is not needed to capture the event.
 *
 * The sections below are in call order: a file calls only the files whose
 * sections come before its own, so calls run one way, from the hooks
 * (hooks.c, the allocator's standard functions; extapi.c, the allocators'
 * own APIs: jemalloc's mallocx, mi_malloc, tc_malloc...; tune.c, mallopt
 * and malloc_trim; mmaps.c, the mapping calls) through the recording core
 * (preload.c: fastpath.h, inlined into hooks.c, and record.h, the other
 * hooks' entry points), which also starts the shim and calls all the
 * others, down to next.c, arena.c, state.c, thread.c, self.c and config.c,
 * which call no other file of the shim.  tbuf.c (the per-thread buffers)
 * calls channel.c, stacktab.c and stamp.c; the unwinder (unwind.h) is
 * called only from preload.c and fastpath.h.
 */
#ifndef MEMTRACE_SHIM_H
#define MEMTRACE_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "format/codec.h"
#include "base/clock.h"

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

/* next.c: the allocator the process would have used without the shim (the
 * next malloc in lookup order), and what it is.  mt_next_glibc: 1 when that
 * is glibc's __libc_* functions, which the hooks then call directly; 0 when
 * it is another (or the bootstrap buffer was used), -1 before the first call
 * resolved it.  The mt_next_* calls resolve on first use. */
struct mt_next {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
};
MT_HIDDEN extern struct mt_next mt_next;
MT_HIDDEN extern int mt_next_glibc;
/* The program break last seen (fastpath.h: WATCH_BRK); mmaps.c's brk and
 * sbrk set it after the moves they record themselves. */
MT_HIDDEN extern void *mt_brk_known;
MT_HIDDEN int mt_next_resolve(void);	       /* -1 when called back while resolving */
MT_HIDDEN void *mt_next_sym(const char *name); /* dlsym(RTLD_NEXT, NAME) */
MT_HIDDEN int mt_next_boot_owns(const void *p);
/* The bootstrap buffer, for the hooks' inline check before a block goes to
 * glibc's free or realloc directly. */
#define MT_NEXT_BOOT_SIZE (64u << 10)
MT_HIDDEN extern uint8_t mt_next_boot[MT_NEXT_BOOT_SIZE];
static inline int mt_boot_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)mt_next_boot < MT_NEXT_BOOT_SIZE;
}
MT_HIDDEN size_t mt_next_boot_size(const void *p);
MT_HIDDEN const char *mt_next_heap_name(void); /* glibc, jemalloc, tcmalloc, mimalloc, unknown */
MT_HIDDEN const char *mt_next_heap_path(void); /* the object that defines it, or "" */
MT_HIDDEN int mt_next_in_heap(const void *fn); /* FN lies in that object */
MT_HIDDEN void *mt_next_malloc(size_t n);
MT_HIDDEN void mt_next_free(void *p);
MT_HIDDEN void *mt_next_calloc(size_t n, size_t m);
MT_HIDDEN void *mt_next_realloc(void *old, size_t n);
MT_HIDDEN void *mt_next_memalign(size_t align, size_t n);
MT_HIDDEN void *mt_next_aligned_alloc(size_t align, size_t n);
MT_HIDDEN int mt_next_posix_memalign(void **out, size_t align, size_t n);
MT_HIDDEN void *mt_next_valloc(size_t n);
MT_HIDDEN void *mt_next_pvalloc(size_t n);

/* glibc's allocator under its own names (the fast path, when it is the
 * next allocator: next.c decides). */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* sample.c: sampled recording (MEMTRACE_SAMPLE): the mean R in bytes (0:
 * every call is recorded), the bytes left to the thread's next sample
 * point, and the set of sampled blocks, whose frees are recorded. */
MT_HIDDEN extern uint64_t mt_sample_mean;
MT_HIDDEN extern __thread int64_t mt_t_left;
/* A sampled block was the thread's last event recorded: the next call not
 * recorded says that an event came between (mt_sample_touch, preload.c),
 * or its free would seem the next event after it, a temporary. */
MT_HIDDEN extern __thread uint8_t mt_t_touch;
MT_HIDDEN __attribute__((cold, noinline)) void mt_sample_touch(void);
/* The filter in front of the set: a bit per bucket of addresses, set while
 * a sampled block of the bucket lives (8 KB: it stays in the L1 cache,
 * where counters per bucket, 128 KB, missed it on most frees). */
#define MT_SAMPLE_FILTER (1u << 16)
MT_HIDDEN extern uint64_t mt_sample_bits[MT_SAMPLE_FILTER / 64];
MT_HIDDEN void mt_sample_init(uint64_t mean, uint64_t seed);
/* The thread's count reached its sample point: draws the next one.
 * Returns 1 when the allocation is not sampled after all (the thread's
 * first, which starts its count). */
MT_HIDDEN int mt_sample_draw(void);
/* With the thread busy (fastpath.h: begin): P is sampled, or was (1, and
 * no longer is). */
MT_HIDDEN void mt_sample_add(void *p);
MT_HIDDEN int mt_sample_take(void *p);
MT_HIDDEN void mt_sample_before_fork(void);
MT_HIDDEN void mt_sample_after_fork(int child);

static inline uint64_t mt_sample_hash(uint64_t a)
{
	return (a ^ (a >> 29)) * 0x9e3779b97f4a7c15ull;
}
static inline unsigned mt_sample_bucket(uint64_t a)
{
	return (unsigned)(mt_sample_hash(a) >> 48);
}
/* Whether P may be sampled (no lock: its bucket's counter). */
static inline int mt_sample_maybe(const void *p)
{
	unsigned b = mt_sample_bucket((uint64_t)(uintptr_t)p);
	return (__atomic_load_n(&mt_sample_bits[b / 64], __ATOMIC_RELAXED) >> (b % 64)) & 1;
}

/* arena.c: memory that never comes from the traced heap. */
MT_HIDDEN void *mt_arena_alloc(size_t size); /* zeroed, 16-byte aligned */
MT_HIDDEN void *mt_map(size_t size);	     /* fresh anonymous mapping or NULL */
/* mmap and munmap's system calls, past the shim's hooks (mmaps.c) */
MT_HIDDEN void *mt_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, int64_t off);
MT_HIDDEN int mt_sys_munmap(void *addr, size_t len);

/* state.c: whether events are recorded now, and the shim's own clock
 * (timeouts, flush intervals, EXEC records; events use mt_stamp below). */
MT_HIDDEN extern int mt_enabled;
MT_HIDDEN extern clockid_t mt_clock; /* CLOCK_MONOTONIC */

static inline uint64_t mt_now(void)
{
	return mt_clock_ns(mt_clock);
}

/* stamp.c: the time of each event, read raw on the hot path (the CPU's
 * time-stamp counter where CLOCK_MONOTONIC runs on it, else that clock in
 * ns), in the order the events happened across threads, and converted to
 * CLOCK_MONOTONIC ns when written out, rounded to the nearest multiple of
 * mt_stamp_quantum: MT_STAMP_QUANTUM ns (2^20, 1.05 ms: off by 0.52 ms at
 * most, and each step of the clock costs 2-3 bytes of the recording),
 * or 1 with MEMTRACE_PRECISE_TIMESTAMPS.  Markers, few, keep exact times. */
#define MT_STAMP_QUANTUM 1048576u /* a power of two */
MT_HIDDEN extern int mt_stamp_tsc;
MT_HIDDEN extern uint64_t mt_stamp_quantum;
static inline uint64_t mt_stamp_raw(int ordered)
{
#if defined(__x86_64__)
	if (likely(mt_stamp_tsc)) {
		uint32_t lo, hi, aux;
		/* RDTSCP waits for the instructions before it (the allocator
		 * call whose event this is) to have executed; its ordering
		 * costs 15-30 ns, which only events of several threads need */
		if (ordered)
			__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
		else
			__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)::"memory");
		return (uint64_t)hi << 32 | lo;
	}
#endif
	(void)ordered;
	return mt_now_ns();
}
static inline uint64_t mt_stamp(void)
{
	return mt_stamp_raw(1);
}
/* Keeps the loads after it from being performed before the stamp is read. */
static inline void mt_stamp_fence(void)
{
#if defined(__x86_64__)
	__asm__ volatile("lfence" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
MT_HIDDEN void mt_stamp_init(int precise);
MT_HIDDEN double mt_stamp_ns_per_tick(void);
/* ns = mono0 + (stamp - tsc0) * mult / 2^32 (the identity for ns stamps). */
struct mt_stamp_conv {
	uint64_t tsc0, mono0, mult;
};
MT_HIDDEN extern struct mt_stamp_conv mt_stamp_conv;
static inline uint64_t mt_stamp_ns_exact(uint64_t stamp)
{
	/* (every stamp converted was read after tsc0: stamp.c reads it first) */
	const struct mt_stamp_conv *c = &mt_stamp_conv;
#ifdef __SIZEOF_INT128__
	return c->mono0 + (uint64_t)((unsigned __int128)(stamp - c->tsc0) * c->mult >> 32);
#else
	/* 32-bit targets: no counter is read there, stamps are already ns */
	return c->mono0 + (stamp - c->tsc0);
#endif
}
static inline uint64_t mt_stamp_ns(uint64_t stamp)
{
	return (mt_stamp_ns_exact(stamp) + mt_stamp_quantum / 2) &
	       ~(uint64_t)(mt_stamp_quantum - 1);
}
/* Measures the rate anew if 10 ms passed since (NOW: a stamp). */
MT_HIDDEN void mt_stamp_recalibrate(uint64_t now);

/* thread.c: starts FN(ARG) on a thread of the shim's own: every signal
 * blocked, detached, with a stack of STACK bytes.  0, or -1. */
MT_HIDDEN int mt_shim_thread(void *(*fn)(void *), void *arg, size_t stack);

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
	/* MEMTRACE_MAIN: the pid of the command's process (0: unset); the
	 * program it runs, through every exec, is traced without -f */
	uint32_t main_pid;
	int follow_forks;
	int cull;	       /* cull temporary allocations */
	uint64_t cull_ns;      /* lifetime threshold */
	uint64_t cull_pending; /* pending buffer bound */
	int disabled_by_default;
	int sigusr1, sigusr2;
	int precise_timestamps;
	int thread_buffers; /* MEMTRACE_THREAD_BUFFERS: 1, 0, -1 auto (tbuf.c) */
	int zero_memory;
	uint64_t backtrace_cache_size;
	int log_level;	     /* -1 off, 0 unset (only "not traced"), 1 error, 2 warn, 3 info,
			* 4 debug, 5 trace */
	const char *logfile; /* MEMTRACE_LOGFILE: path pattern, or NULL */
	/* Standalone only (serve.c, binaries.c): bytehound's ENABLE_SERVER,
	 * BASE_SERVER_PORT, ENABLE_BROADCAST, WRITE_BINARIES_TO_OUTPUT, and
	 * memtrace's own LISTEN (the address), TOKEN and SERVER_WAIT. */
	int enable_server, enable_broadcast, write_binaries;
	const char *base_server_port; /* NULL: 8100 */
	const char *listen;	      /* NULL: 127.0.0.1 */
	const char *token;
	uint64_t server_wait; /* s, at exit, for a gatherer to come */
	int gather_mmap;      /* MEMTRACE_GATHER_MMAP_CALLS (mmaps.c): 1 unless 0 */
	uint64_t sample;      /* MEMTRACE_SAMPLE: mean bytes between samples, 0: all */
	uint64_t sample_seed; /* MEMTRACE_SAMPLE_SEED: draws repeatable (0: random) */
};
MT_HIDDEN extern struct mt_config mt_cfg;
MT_HIDDEN void mt_config_load(void);

/* log.c: the shim's messages, to stderr or MEMTRACE_LOGFILE. */
MT_HIDDEN void mt_log_open(void); /* after mt_config_load */
MT_HIDDEN void mt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* channel.c: where records go (ring shared with `memtrace record`, or a file). */
MT_HIDDEN int mt_channel_open(uint32_t ppid);
/* Before mt_channel_open: sets up the lock's page, which tells a child made
 * without glibc's fork (raw clone, clone3) from its parent.  Such a child's
 * first mt_channel_lock calls ON_NEW_PROCESS with the lock held, as glibc's
 * fork calls the atfork child handler; the handler must unlock. */
MT_HIDDEN void mt_channel_guard_init(void (*on_new_process)(void));
MT_HIDDEN void mt_channel_lock(void);
MT_HIDDEN int mt_channel_trylock(void); /* 1 if taken */
/* 0 in a child made without glibc's fork, until its first mt_channel_lock. */
MT_HIDDEN extern volatile int *mt_channel_live;
/* The pid that opened the channel (0: none): a vfork child, which shares
 * our memory and ring, is not it. */
MT_HIDDEN uint32_t mt_channel_pid(void);
MT_HIDDEN void mt_channel_unlock(void);
/* Whether this thread holds the lock (a signal handler asks: the thread it
 * interrupted may be holding it). */
MT_HIDDEN int mt_channel_held_here(void);
/* With the lock held: room for MAX more bytes; returns where to write. */
MT_HIDDEN uint8_t *mt_channel_reserve(size_t max);
/* With the lock held: the bytes up to END are complete records. */
MT_HIDDEN void mt_channel_commit(uint8_t *end);
MT_HIDDEN void mt_channel_flush(void); /* standalone: write out what is buffered */
/* The process ends from a signal handler that interrupted this thread while
 * it held the lock, which is never released: LOST_N events that could not
 * be encoded are counted as lost (the recorder reads the ring's counters),
 * and, standalone, what is committed is written out after a LOST record
 * and (HAVE_EXIT) the EXIT record of STATUS, unless the interrupted code
 * was writing the file.  Takes no lock. */
MT_HIDDEN void mt_channel_end_interrupted(uint64_t lost_n, int have_exit, int64_t status);
/* FN runs every 20 ms on the shim's own thread (set before mt_channel_open). */
MT_HIDDEN void mt_channel_on_tick(void (*fn)(void));
MT_HIDDEN void mt_channel_after_fork_child(int follow);
/* Standalone: the recording's path ("" before it is open, or under
 * `memtrace record`). */
MT_HIDDEN const char *mt_channel_output(void);
/* Standalone, the lock held: compresses RAW (LEN bytes, at most 8 MiB) into
 * a chunk of STREAM appended to the file.  0, or -1. */
MT_HIDDEN int mt_channel_append(uint32_t stream, const uint8_t *raw, size_t len);
/* Before an exec of PATH, which the shim cannot follow: asks the recorder
 * (if MEMTRACE_CONNECT says it offers) to trace it with the BPF backend,
 * and waits, bounded, for its answer.  Returns 1 if it does. */
MT_HIDDEN int mt_channel_ask_fallback(const char *path);
MT_HIDDEN extern struct mt_enc mt_enc_state; /* guarded by the channel lock */

/* exec.c: which process is the command's (MEMTRACE_MAIN), and what an
 * exec makes of the image. */
MT_HIDDEN int mt_main_claim(void);	   /* at start: whether this image has the role */
MT_HIDDEN void mt_main_handover(void);	   /* in a wrapper's child: it takes the role */
MT_HIDDEN int mt_is_waiting_wrapper(void); /* timeout, time...: the child is the program */
/* Before an exec of FILE (looked up in PATH when SEARCH) with ENVP: an EXEC
 * record saying whether the new image will be traced, and if not why. */
MT_HIDDEN void mt_exec_note(const char *file, int search, char *const envp[], int main_role);
MT_HIDDEN void mt_exec_failed(const char *file); /* the exec returned */

/* fatal.c: standalone, the signals whose default action ends the process
 * (SIGSEGV, SIGABRT, SIGTERM...) and that the program leaves at the
 * default are handled: FLUSH(SIG) runs, then the process dies of the
 * signal as it would have.  Also interposes sigaction and signal, so
 * that the program sees and sets its own dispositions. */
MT_HIDDEN void mt_fatal_install(void (*flush)(int sig));

/* modules.c: the loaded objects, emitted as MODULE records. */
/* Takes the channel lock itself; runs ON_REPLACED (NULL: nothing) with it
 * held, after the records, when an object is where another one was. */
MT_HIDDEN void mt_modules_emit_new(void (*on_replaced)(void));
MT_HIDDEN void mt_modules_forget(void); /* after fork: re-emit everything */
/* With MEMTRACE_WRITE_BINARIES_TO_OUTPUT: every module emitted since the
 * process started (or forked), path and build-id, for FN. */
MT_HIDDEN void mt_modules_each(void (*fn)(const char *path, size_t plen, const uint8_t *id,
					  size_t idlen, void *ctx),
			       void *ctx);

/* binaries.c: MEMTRACE_WRITE_BINARIES_TO_OUTPUT, at exit: the files of the
 * modules go into the recording, as `memtrace record --embed-binaries`
 * puts them (MT_STREAM_OBJECTS). */
MT_HIDDEN void mt_binaries_write(void);

/* serve.c: MEMTRACE_ENABLE_SERVER, the standalone shim serving its
 * recording to `memtrace gather` (format/wire.h) from a thread of its own.
 * ENTER marks a thread as the shim's (its allocations pass unrecorded). */
MT_HIDDEN void mt_serve_init(void (*enter)(void));
MT_HIDDEN extern int mt_serve_pending; /* mt_serve_start has work to do */
MT_HIDDEN void mt_serve_start(void);   /* on the flusher's thread, lazily */
/* At exit, the recording complete: the gatherer gets the rest, waited
 * for (bounded); with none, MEMTRACE_SERVER_WAIT seconds for one. */
MT_HIDDEN void mt_serve_finish(void);
MT_HIDDEN int mt_serve_listening(void); /* a listener is up and serving */
/* Fork handlers: a child never holds the parent's listener once fork has
 * returned in the parent (the parent waits for the child to close it). */
MT_HIDDEN void mt_serve_before_fork(void);
MT_HIDDEN void mt_serve_after_fork_parent(void);
MT_HIDDEN void mt_serve_after_fork_child(void);

/* tbuf.c: per-thread event buffers, merged into the channel in stamp
 * order (see there why that order is the true one).  A thread gets its
 * slot on its first event; while a realloc of its is under way, HOLD is
 * that realloc's stamp (0 otherwise). */
#define MT_TSLOT_WORDS (1u << 15)
struct mt_tslot {
	uint64_t *buf;			     /* MT_TSLOT_WORDS words, just before this header */
	_Alignas(64) volatile uint64_t head; /* words written; the owner's */
	volatile uint64_t hold;
	uint32_t tid;
	_Alignas(64) volatile uint64_t tail; /* words merged; the lock holder's */
	uint32_t state;
};
MT_HIDDEN extern __thread struct mt_tslot *mt_t_slot;
MT_HIDDEN extern volatile int mt_tbuf_nlive;
MT_HIDDEN extern uint32_t mt_tbuf_nslots;    /* slots ever made (the lock held) */
MT_HIDDEN extern volatile int mt_tbuf_dirty; /* some buffer may hold events */
MT_HIDDEN extern int mt_tbuf_on; /* threads buffer their events (else: the lock per event) */
MT_HIDDEN void mt_tbuf_init(void);
/* Whether events of several threads are being buffered and merged: their
 * stamps must then be read in order with what precedes them (mt_stamp_raw). */
static inline int mt_tbuf_multi(void)
{
	return mt_tbuf_nlive > 1 && mt_tbuf_on;
}
/* The calling thread's slot, new (NULL when none: its events then go out
 * one by one, as after its exit). */
MT_HIDDEN struct mt_tslot *mt_tbuf_slot_new(uint32_t tid);
enum { MT_EV_ALLOC = 1, MT_EV_FREE, MT_EV_REALLOC };
MT_HIDDEN void mt_tbuf_event(struct mt_tslot *s, int kind, int fn, void *old, void *p, size_t n,
			     const uint64_t *pcs, int depth, uint64_t stamp, uint32_t tid);
/* The same, the channel lock held (a realloc of a process that does not
 * buffer holds it across its call). */
MT_HIDDEN void mt_tbuf_event_locked(int kind, int fn, void *old, void *p, size_t n,
				    const uint64_t *pcs, int depth, uint64_t stamp, uint32_t tid);
/* Merges what can be merged now (FORCE: everything buffered). */
MT_HIDDEN void mt_tbuf_sync(int force);
MT_HIDDEN void mt_tbuf_sync_locked(uint64_t bound, int force); /* the lock held */
MT_HIDDEN int mt_tbuf_pending(void);
MT_HIDDEN void mt_tbuf_after_fork_child(void);
/* The realloc gate: held across a realloc call; a free waits while it is
 * held (by another thread) before it releases its block. */
MT_HIDDEN extern volatile uintptr_t mt_realloc_gate;
MT_HIDDEN void mt_gate_lock(void);
static inline void mt_gate_unlock(void)
{
	__atomic_store_n(&mt_realloc_gate, 0, __ATOMIC_RELEASE);
}
MT_HIDDEN void mt_gate_wait_slow(void);
/* For a free stamped STAMP: the gate is read after the stamp (its address
 * depends on the stamp's value, so the CPU cannot read it first), and
 * waited for while another thread holds it. */
static inline void mt_gate_wait(uint64_t stamp)
{
	uintptr_t zero = (uintptr_t)stamp;
	/* (an AND with zero the compiler cannot see through: ZERO is 0, but
	 * its value depends on the stamp's; without one, the stamp itself
	 * would be added to the gate's address) */
#if defined(__x86_64__)
	__asm__("and $0, %0" : "+r"(zero));
#elif defined(__aarch64__)
	__asm__("and %0, %0, xzr" : "+r"(zero));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#elif defined(__arm__)
	__asm__("and %0, %0, #0" : "+r"(zero));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#elif defined(__mips__)
	__asm__("and %0, %0, $0" : "+r"(zero));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#else
	zero = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	const volatile uintptr_t *g =
		(const volatile uintptr_t *)((uintptr_t)&mt_realloc_gate + zero);
	if (unlikely(__atomic_load_n(g, __ATOMIC_ACQUIRE)))
		mt_gate_wait_slow();
}

/* stacktab.c: deduplicates stacks; called with the channel lock held. */
MT_HIDDEN void mt_stacktab_init(uint64_t capacity);
MT_HIDDEN void mt_stacktab_reset(void);
/* Returns the stack's id; *is_new is set when it has not been emitted yet. */
MT_HIDDEN uint64_t mt_stacktab_intern(const uint64_t *pcs, unsigned n, int *is_new);

/* With the channel lock held, thread TID's records as they go into the
 * channel, for the hot path (fastpath.h) and the merge (tbuf.c) alike: the
 * ALLOC of block P (N bytes, by FN, at STAMP), or with REALLOC the REALLOC
 * of OLD into P, after a STACK record when its stack PCS is new; and the
 * FREE of P.  A record the channel has no room for is not written. */
static inline __attribute__((always_inline)) void mt_emit_block(uint32_t tid, int realloc, int fn,
								uint64_t old, uint64_t p,
								uint64_t n, const uint64_t *pcs,
								unsigned depth, uint64_t stamp)
{
	int is_new;
	uint64_t id = mt_stacktab_intern(pcs, depth, &is_new);
	uint8_t *w =
		mt_channel_reserve(is_new ? MT_REC_MAX_STACK + MT_REC_MAX_SMALL : MT_REC_MAX_SMALL);
	if (unlikely(!w)) {
		if (is_new)
			mt_stacktab_reset(); /* the stack was never written out */
		return;
	}
	if (is_new)
		w = mt_enc_stack(w, id, pcs, depth);
	w = mt_enc_thread(&mt_enc_state, w, tid);
	uint64_t ts = mt_stamp_ns(stamp);
	if (realloc)
		w = mt_enc_realloc(&mt_enc_state, w, fn, ts, old, p, n, id);
	else
		w = mt_enc_alloc(&mt_enc_state, w, fn, ts, p, n, id);
	mt_channel_commit(w);
}
static inline __attribute__((always_inline)) void mt_emit_free(uint32_t tid, uint64_t p,
							       uint64_t stamp)
{
	uint8_t *w = mt_channel_reserve(MT_REC_MAX_SMALL);
	if (likely(w)) {
		w = mt_enc_thread(&mt_enc_state, w, tid);
		mt_channel_commit(mt_enc_free(&mt_enc_state, w, mt_stamp_ns(stamp), p));
	}
}

#endif
