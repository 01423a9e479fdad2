/*
 * preload.c - libmemtrace-preload.so: the allocator hooks, and the start-up,
 * fork and signal handling around them.
 *
 * Each hook calls the allocator the process would have used without the
 * shim (next.c: glibc's own __libc_malloc and friends, called directly, or
 * the jemalloc, tcmalloc or mimalloc that comes next in lookup order; user
 * blocks are exactly what it returns: no headers, no padding), then, if
 * tracing is on and the thread is not
 * already inside the shim, captures the stack and appends one record to the
 * channel.  A free is recorded before the block is released and an
 * allocation after it is obtained, and a realloc is recorded while the
 * channel lock is held around it, so that the order of records always
 * matches the order in which addresses were handed out, across threads.
 *
 * This file is the top of the shim: it calls the other files (shim.h,
 * unwind.h) and none of them calls it.  The per-thread state (inside the
 * shim or not, the thread id) stays here, the only file that reads it.
 */
#include "shim.h"
#include "unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

static int initialized;
/* This image is the recorded command's, or what it became (MEMTRACE_MAIN is
 * our pid): traced without --follow-forks, and named the main process. */
static int main_role;
/* A wrapper that runs the program in a child and waits (timeout): the
 * child it forks takes over the main role (self.c: mt_is_waiting_wrapper). */
static int hands_over;
static __thread int t_busy; /* inside the shim: allocations pass through */
static __thread uint32_t t_tid;
static void *(*real_dlopen)(const char *, int);
static int (*real_dlclose)(void *);

#define EXPORT __attribute__((visibility("default")))
#define INLINE static inline __attribute__((always_inline))

/* The next allocator's call: glibc's DIRECT one when it is glibc, else
 * OTHER (next.c) with the thread inside the shim, so that what that
 * allocator calls of ours on its way (mimalloc's malloc -> mi_malloc, both
 * interposed) passes through unrecorded: each event counts once. */
#define NEXT(direct, other)                      \
	({                                       \
		__typeof__(direct) r_;           \
		if (likely(mt_next_glibc > 0)) { \
			r_ = direct;             \
		} else {                         \
			int b_ = t_busy;         \
			t_busy = 1;              \
			r_ = other;              \
			t_busy = b_;             \
		}                                \
		r_;                              \
	})

INLINE uint32_t tid(void)
{
	if (unlikely(!t_tid))
		t_tid = (uint32_t)syscall(SYS_gettid);
	return t_tid;
}

/* Appends an ALLOC (or REALLOC when OLD is set) record; the caller holds
 * the channel lock. */
INLINE void emit_alloc(int fn, void *old, void *p, size_t n, const uint64_t *pcs, int depth,
		       uint64_t ts)
{
	int is_new;
	uint64_t id = mt_stacktab_intern(pcs, (unsigned)depth, &is_new);
	uint8_t *w =
		mt_channel_reserve(is_new ? MT_REC_MAX_STACK + MT_REC_MAX_SMALL : MT_REC_MAX_SMALL);
	if (unlikely(!w)) {
		if (is_new)
			mt_stacktab_reset(); /* the stack was never written out */
		return;
	}
	if (is_new)
		w = mt_enc_stack(w, id, pcs, (unsigned)depth);
	w = mt_enc_thread(&mt_enc_state, w, tid());
	if (old)
		w = mt_enc_realloc(&mt_enc_state, w, fn, ts, (uint64_t)old, (uint64_t)p, n, id);
	else
		w = mt_enc_alloc(&mt_enc_state, w, fn, ts, (uint64_t)p, n, id);
	mt_channel_commit(w);
}

/* Records an allocation made by the hook this is inlined into: the stack
 * starts at that hook's caller. */
#define RECORD_ALLOC(fn, p, n)                                          \
	do {                                                            \
		if (likely(mt_enabled) && !t_busy) {                    \
			uint64_t pcs_[MT_MAX_FRAMES];                   \
			t_busy = 1;                                     \
			int depth_ = mt_unwind(pcs_, MT_MAX_FRAMES, 0); \
			uint64_t ts_ = mt_now();                        \
			mt_channel_lock();                              \
			emit_alloc(fn, NULL, p, n, pcs_, depth_, ts_);  \
			mt_channel_unlock();                            \
			t_busy = 0;                                     \
		}                                                       \
	} while (0)

INLINE void record_free(void *p)
{
	if (likely(mt_enabled) && !t_busy && p) {
		t_busy = 1;
		uint64_t ts = mt_now();
		mt_channel_lock();
		uint8_t *w = mt_channel_reserve(MT_REC_MAX_SMALL);
		if (likely(w)) {
			w = mt_enc_thread(&mt_enc_state, w, tid());
			mt_channel_commit(mt_enc_free(&mt_enc_state, w, ts, (uint64_t)p));
		}
		mt_channel_unlock();
		t_busy = 0;
	}
}

EXPORT void *malloc(size_t n)
{
	void *p = unlikely(mt_cfg.zero_memory) ? NEXT(__libc_calloc(1, n), mt_next_calloc(1, n)) :
						 NEXT(__libc_malloc(n), mt_next_malloc(n));
	if (likely(p))
		RECORD_ALLOC(MT_FN_MALLOC, p, n);
	return p;
}

EXPORT void free(void *p)
{
	record_free(p);
	if (likely(mt_next_glibc > 0)) {
		__libc_free(p);
	} else {
		int busy = t_busy;
		t_busy = 1;
		mt_next_free(p);
		t_busy = busy;
	}
}

EXPORT void *calloc(size_t n, size_t m)
{
	void *p = NEXT(__libc_calloc(n, m), mt_next_calloc(n, m));
	if (likely(p))
		RECORD_ALLOC(MT_FN_CALLOC, p, n * m);
	return p;
}

INLINE void *do_realloc(int fn, void *old, size_t n)
{
	if (!old) {
		void *p = NEXT(__libc_realloc(NULL, n), mt_next_realloc(NULL, n));
		if (p)
			RECORD_ALLOC(fn, p, n);
		return p;
	}
	if (!mt_enabled || t_busy)
		return NEXT(__libc_realloc(old, n), mt_next_realloc(old, n));
	if (n == 0) {
		/* glibc, jemalloc and tcmalloc free the block and return NULL;
		 * mimalloc returns a new block of size 0 */
		record_free(old);
		void *p = NEXT(__libc_realloc(old, 0), mt_next_realloc(old, 0));
		if (p)
			RECORD_ALLOC(fn, p, 0);
		return p;
	}
	uint64_t pcs[MT_MAX_FRAMES];
	t_busy = 1;
	int depth = mt_unwind(pcs, MT_MAX_FRAMES, 0);
	uint64_t ts = mt_now();
	/* Held across the call: the old block must not be handed to another
	 * thread's malloc before this realloc is in the stream. */
	mt_channel_lock();
	void *p = NEXT(__libc_realloc(old, n), mt_next_realloc(old, n));
	if (p) /* a failed realloc leaves the old block live: nothing to record */
		emit_alloc(fn, old, p, n, pcs, depth, ts);
	mt_channel_unlock();
	t_busy = 0;
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	return do_realloc(MT_FN_REALLOC, old, n);
}

EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return do_realloc(MT_FN_REALLOCARRAY, old, total);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (align % sizeof(void *) || (align & (align - 1)) || !align)
		return EINVAL;
	int saved = errno;
	void *p = NULL;
	int r = NEXT(((p = __libc_memalign(align, n)) ? 0 : ENOMEM),
		     mt_next_posix_memalign(&p, align, n));
	if (r) {
		errno = saved;
		return r;
	}
	*out = p;
	RECORD_ALLOC(MT_FN_POSIX_MEMALIGN, p, n);
	return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	void *p = NEXT(__libc_memalign(align, n), mt_next_aligned_alloc(align, n));
	if (likely(p))
		RECORD_ALLOC(MT_FN_ALIGNED_ALLOC, p, n);
	return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
	void *p = NEXT(__libc_memalign(align, n), mt_next_memalign(align, n));
	if (likely(p))
		RECORD_ALLOC(MT_FN_MEMALIGN, p, n);
	return p;
}

EXPORT void *valloc(size_t n)
{
	void *p = NEXT(__libc_valloc(n), mt_next_valloc(n));
	if (likely(p))
		RECORD_ALLOC(MT_FN_VALLOC, p, n);
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	void *p = NEXT(__libc_pvalloc(n), mt_next_pvalloc(n));
	if (likely(p))
		RECORD_ALLOC(MT_FN_PVALLOC, p, n);
	return p;
}

/* ---- for extapi.c: the allocators' own APIs (shim.h) ------------------ */

int mt_ext_enter(void)
{
	int busy = t_busy;
	t_busy = 1;
	return busy;
}

void mt_ext_leave(int saved)
{
	t_busy = saved;
}

__attribute__((noinline)) void mt_ext_alloc(int fn, void *p, size_t n)
{
	if (likely(p))
		RECORD_ALLOC(fn, p, n);
}

__attribute__((noinline)) void mt_ext_free(void *p)
{
	record_free(p);
}

__attribute__((noinline)) void *mt_ext_resize(int fn, void *old, size_t n, mt_resize_fn call,
					      void *ctx)
{
	if (!mt_enabled || t_busy) {
		int busy = mt_ext_enter();
		void *p = call(old, n, ctx);
		mt_ext_leave(busy);
		return p;
	}
	if (n == 0) {
		record_free(old);
		t_busy = 1;
		void *p = call(old, 0, ctx);
		t_busy = 0;
		if (p)
			RECORD_ALLOC(fn, p, 0);
		return p;
	}
	uint64_t pcs[MT_MAX_FRAMES];
	t_busy = 1;
	int depth = mt_unwind(pcs, MT_MAX_FRAMES, 0);
	uint64_t ts = mt_now();
	mt_channel_lock();
	void *p = call(old, n, ctx);
	if (p)
		emit_alloc(fn, old, p, n, pcs, depth, ts);
	mt_channel_unlock();
	t_busy = 0;
	return p;
}

/* ---- loader, exit --------------------------------------------------- */

EXPORT void *dlopen(const char *file, int mode)
{
	if (!real_dlopen)
		real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	void *h = real_dlopen(file, mode);
	if (h && initialized) {
		int busy = t_busy;
		t_busy = 1;
		mt_unwind_modules_changed();
		mt_modules_emit_new();
		t_busy = busy;
	}
	return h;
}

EXPORT int dlclose(void *h)
{
	if (!real_dlclose)
		real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	int r = real_dlclose(h);
	if (initialized)
		mt_unwind_modules_changed();
	return r;
}

EXPORT void _exit(int status)
{
	mt_channel_flush();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	_exit(status);
}

/* An exec ends this image's entry.  What the new image will be is written
 * first (exec.c: traced as an entry of its own, or not, and why), so that
 * `memtrace record` can say which program went untraced; standalone, what
 * is buffered is written out, or it would die with the image.  If the exec
 * returns, the image goes on and says so.  (glibc's execl* and posix_spawn
 * reach execve without the PLT: the first are seen when the new image
 * starts, or not at all; the second run in a child.) */
static void exec_note(const char *file, int search, char *const envp[])
{
	if (!initialized || mt_channel_pid() != (uint32_t)getpid())
		return; /* not traced, or a vfork child: its parent's ring */
	int busy = t_busy;
	t_busy = 1;
	mt_exec_note(file, search, envp, main_role);
	t_busy = busy;
	mt_channel_flush();
}

static void exec_failed(const char *file)
{
	if (!initialized || mt_channel_pid() != (uint32_t)getpid())
		return;
	int saved = errno, busy = t_busy;
	t_busy = 1;
	mt_exec_failed(file);
	t_busy = busy;
	errno = saved;
}

#define EXEC_HOOK(name, params, file, search, envp, args)              \
	EXPORT int name params                                         \
	{                                                              \
		static int(*real) params;                              \
		if (!real)                                             \
			real = (int(*) params)dlsym(RTLD_NEXT, #name); \
		exec_note(file, search, envp);                         \
		int r = real args;                                     \
		exec_failed(file);                                     \
		return r;                                              \
	}
EXEC_HOOK(execve, (const char *path, char *const argv[], char *const envp[]), path, 0, envp,
	  (path, argv, envp))
EXEC_HOOK(execv, (const char *path, char *const argv[]), path, 0, environ, (path, argv))
EXEC_HOOK(execvp, (const char *file, char *const argv[]), file, 1, environ, (file, argv))
EXEC_HOOK(execvpe, (const char *file, char *const argv[], char *const envp[]), file, 1, envp,
	  (file, argv, envp))

/* A program may mark moments of its run ("request 1 done"); reports list
 * them with their times.  Declare it weak to run with and without the shim:
 *   extern void memtrace_marker(const char *) __attribute__((weak));
 *   if (memtrace_marker) memtrace_marker("warm-up done"); */
EXPORT void memtrace_marker(const char *text)
{
	static unsigned long counter;
	if (!initialized || !text)
		return;
	size_t n = strnlen(text, 1024);
	int busy = t_busy;
	t_busy = 1;
	uint64_t ts = mt_now();
	mt_channel_lock();
	uint8_t *w = mt_channel_reserve(64 + n);
	if (w) {
		w = mt_enc_thread(&mt_enc_state, w, tid());
		mt_channel_commit(mt_enc_marker(&mt_enc_state, w, ts, ++counter, text, n));
	}
	mt_channel_unlock();
	t_busy = busy;
}

/* ---- start-up, fork, signals ----------------------------------------- */

/* Which allocator the hooks forward to (next.c), after the PROCESS record. */
static void write_heap_record(void)
{
	if (mt_next_glibc < 0)
		mt_next_resolve();
	const char *name = mt_next_heap_name(), *path = mt_next_heap_path();
	size_t nlen = strlen(name), plen = strlen(path);
	mt_channel_lock();
	uint8_t *w = mt_channel_reserve(32 + nlen + plen);
	if (w)
		mt_channel_commit(mt_enc_heap(w, name, nlen, path, plen));
	mt_channel_unlock();
}

static void write_process_record(void)
{
	char exe[4096];
	int exelen = mt_read_self_exe(exe, sizeof exe);
	if (exelen < 0)
		exelen = 0;
	enum { ARGV_MAX = 32768 };
	char *argv = mt_arena_alloc(ARGV_MAX);
	size_t alen = argv ? mt_read_self_cmdline(argv, ARGV_MAX) : 0;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	mt_channel_lock();
	uint8_t *w = mt_channel_reserve(128 + (size_t)exelen + alen);
	if (w) {
		w = mt_enc_process(&mt_enc_state, w, (uint32_t)getpid(), (uint32_t)getppid(),
				   (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec,
				   mt_now(), "preload", exe, (size_t)exelen, argv ? argv : "",
				   alen);
		if (main_role)
			w = mt_enc_main(w);
		mt_channel_commit(w);
	}
	mt_channel_unlock();
	write_heap_record();
}

static void before_fork(void)
{
	mt_channel_lock();
}

static void after_fork_parent(void)
{
	mt_channel_unlock();
}

/* Also called for a child made without glibc's fork (channel.c), on its
 * first event, with the channel lock held. */
static void after_fork_child(void)
{
	t_tid = 0;
	mt_enabled = 0;
	if (main_role && hands_over)
		mt_main_handover(); /* the program the wrapper runs is the main one */
	else
		main_role = 0;
	mt_channel_after_fork_child(mt_cfg.follow_forks);
	mt_channel_unlock();
	if (mt_cfg.follow_forks) {
		mt_stacktab_reset();
		mt_modules_forget();
		write_process_record();
		mt_modules_emit_new();
		mt_enabled = 1;
	}
}

static void on_toggle(int sig)
{
	(void)sig;
	mt_enabled = !mt_enabled;
}

/* Without --follow-forks, programs this one executes must not load the shim:
 * take it out of LD_PRELOAD. */
static void unexport_shim(void)
{
	Dl_info info;
	const char *pre = getenv("LD_PRELOAD");
	if (!pre || !dladdr((void *)unexport_shim, &info) || !info.dli_fname)
		return;
	const char *self = strrchr(info.dli_fname, '/');
	self = self ? self + 1 : info.dli_fname;
	char out[8192];
	size_t o = 0;
	const char *p = pre;
	while (*p) {
		size_t n = strcspn(p, ": ");
		const char *base = memrchr(p, '/', n);
		base = base ? base + 1 : p;
		if (!(n - (size_t)(base - p) == strlen(self) &&
		      memcmp(base, self, strlen(self)) == 0) &&
		    o + n + 2 < sizeof out) {
			if (o)
				out[o++] = ':';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
		while (*p == ':' || *p == ' ')
			p++;
	}
	out[o] = 0;
	if (o)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
}

__attribute__((constructor(101))) static void mt_init(void)
{
	t_busy = 1;
	mt_config_load();
	mt_log_open();
	if (mt_cfg.precise_timestamps)
		mt_clock = CLOCK_MONOTONIC;
	/* Without -f the command's process is traced through every exec (a
	 * wrapper such as env or sh -c "exec ..." runs the program in the same
	 * process), and no other process: one that finds itself here is a
	 * child's exec, and takes the shim out of what it passes on. */
	main_role = mt_main_claim();
	if (!main_role && !mt_cfg.follow_forks) {
		unexport_shim();
		t_busy = 0;
		return;
	}
	hands_over = main_role && mt_is_waiting_wrapper();
	mt_stacktab_init(mt_cfg.backtrace_cache_size);
	mt_channel_guard_init(after_fork_child);
	if (mt_channel_open((uint32_t)getppid()) < 0) {
		t_busy = 0;
		return;
	}
	write_process_record();
	mt_modules_emit_new();
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	struct sigaction sa = { .sa_handler = on_toggle, .sa_flags = SA_RESTART };
	if (mt_cfg.sigusr1)
		sigaction(SIGUSR1, &sa, NULL);
	if (mt_cfg.sigusr2)
		sigaction(SIGUSR2, &sa, NULL);
	initialized = 1;
	mt_enabled = !mt_cfg.disabled_by_default;
	t_busy = 0;
}

__attribute__((destructor)) static void mt_fini(void)
{
	mt_channel_flush();
}
