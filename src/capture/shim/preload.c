/*
 * preload.c - the recording core of libmemtrace-preload.so, and the
 * process's life around it.  The core: the slow paths of the allocator
 * hooks (hooks.c, whose fast path is fastpath.h), the events a signal
 * handler holds back, and the entry points of the other hooks (record.h:
 * extapi.c, tune.c, mmaps.c).  The life: the loader (dlopen, dlclose),
 * exec, posix_spawn, exit, markers, and start-up, fork and signals.
 *
 * The first allocator call starts the shim (it may come before its
 * constructor); a call from a signal handler that interrupted the shim is
 * recorded as well (see "signal handlers" below).
 *
 * Calls run one way: hooks.c, extapi.c, tune.c and mmaps.c call this file,
 * and it calls the other files of the shim (shim.h, unwind.h), none of
 * which calls it or the hooks.  The per-thread state (inside the shim or
 * not, the thread id) is defined here; fastpath.h declares it for hooks.c,
 * the only other file that reads it.
 */
#include "fastpath.h"
#include "record.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Start-up: the shim starts itself on the first allocator call (another
 * library's constructor, or the loader, may allocate before the shim's own
 * constructor runs), or at the latest in that constructor. */
enum { INIT_NOT_YET, INIT_RUNNING, INIT_DONE };
static int init_state;
static int initialized;		/* INIT_DONE: the channel is open */
static __thread int t_starting; /* this thread is starting the shim */
/* Allocator calls of other threads while one starts the shim: not recorded,
 * counted as lost (shim_busy) once the channel is open. */
static unsigned long unrecorded_at_start;
static void start_shim(void);

/* This image is the recorded command's, or what it became (MEMTRACE_MAIN is
 * our pid): traced without --follow-forks, and named the main process. */
static int main_role;
/* A wrapper that runs the program in a child and waits (timeout): the
 * child it forks takes over the main role (self.c: mt_is_waiting_wrapper). */
static int hands_over;
static void *(*real_dlopen)(const char *, int);
static int (*real_dlclose)(void *);

/* The thread's state (fastpath.h). */
__thread union mt_tstate mt_t_in;
__thread uint32_t mt_t_tid;

/* Raw-clone children (channel.c) are told apart on their first event. */
void mt_check_process(void)
{
	mt_channel_lock();
	mt_channel_unlock();
}

struct mt_tslot *mt_new_slot(void)
{
	return mt_tbuf_slot_new(tid());
}

/* ---- signal handlers: events held back --------------------------------
 *
 * A signal handler that allocates may interrupt its thread anywhere, also
 * inside the shim.  If the thread is only capturing a stack (busy, lock not
 * held), the handler records its event as usual: the stack table and the
 * encoder are touched only under the channel lock.  If the thread holds the
 * channel lock, the handler must not wait for it (it would wait forever), so
 * it holds its event back in the thread's small queue, with its stack and
 * time, and whoever next holds the lock on this thread writes the queue out
 * before anything else of the thread, so records stay in the order the
 * calls were made.  A held-back free does not release the block until its
 * record is written (another thread could be handed the address and record
 * it first), and a held-back realloc moves the block for the same reason.
 * The queue lives in memory taken from a small pool when a handler first
 * needs it and given back once written out, so that threads pay nothing for
 * it until a handler of theirs holds an event back; writing it out is done
 * with signals blocked, so no handler can hold more back meanwhile.  Events
 * beyond HELD_MAX before the thread gets out of the shim, or with the pool
 * empty, are counted as lost (shim_busy). */
/* A slot's kind is written last and cleared once written out: a slot a
 * handler did not fill (its queue came too late) is NONE, never stale. */
enum { HELD_NONE, HELD_ALLOC, HELD_FREE, HELD_REALLOC };
/* Room for the events of a few hundred handler runs: a standalone shim
 * compressing its full buffer, or one waiting for a slow recorder, holds the
 * lock for tens of milliseconds.  The pool is mapped without reserving
 * memory: only the slots used are ever touched. */
#define HELD_MAX 256
#define HELD_QUEUES 16
struct held {
	uint8_t kind, fn;
	uint16_t depth;
	uint8_t unsampled; /* sampling: the allocation's part is not recorded */
	uint64_t ts;
	void *old, *p;
	size_t n;
	uint64_t pcs[MT_MAX_FRAMES];
};
struct held_queue {
	int taken;
	struct held ev[HELD_MAX];
};
static struct held_queue *held_pool; /* HELD_QUEUES of them, mapped when first needed */
static __thread struct held_queue *t_queue;

/* The thread's queue, taken from the pool if it has none (NULL when the
 * pool is empty).  Signal-safe: mmap and atomics only; a nested handler that
 * took one first wins and this one goes back. */
static struct held_queue *held_queue(void)
{
	struct held_queue *q = t_queue, *pool = __atomic_load_n(&held_pool, __ATOMIC_ACQUIRE);
	if (q)
		return q;
	if (!pool) {
		struct held_queue *m = mt_map(HELD_QUEUES * sizeof *m), *none = NULL;
		if (!m)
			return NULL;
		if (__atomic_compare_exchange_n(&held_pool, &none, m, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			pool = m;
		else {
			mt_sys_munmap(m, HELD_QUEUES * sizeof *m);
			pool = none;
		}
	}
	for (int i = 0; i < HELD_QUEUES; i++) {
		int free_ = 0;
		if (!__atomic_load_n(&pool[i].taken, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&pool[i].taken, &free_, 1, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			struct held_queue *none = NULL;
			if (__atomic_compare_exchange_n(&t_queue, &none, &pool[i], 0,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				return &pool[i];
			__atomic_store_n(&pool[i].taken, 0, __ATOMIC_RELEASE);
			return none;
		}
	}
	return NULL;
}

/* A slot for an event held back, or NULL (the event is then counted as lost
 * when the queue is written out).  A handler nested in this one takes the
 * next slot. */
static struct held *hold_slot(void)
{
	uint32_t i = __atomic_fetch_add(&t_held_n, 1, __ATOMIC_RELAXED);
	struct held_queue *q = held_queue();
	return q && i < HELD_MAX ? &q->ev[i] : NULL;
}

/* Fills the held event H of KIND (its stack the caller's: inlined, so that
 * the frames skipped are the same as the recorded path's), marking it
 * complete last: a signal handler that interrupts this sees it or not. */
__attribute__((always_inline)) static inline void hold(struct held *h, int kind, int fn, void *old,
						       void *p, size_t n)
{
	h->depth = (uint16_t)mt_unwind(h->pcs, MT_MAX_FRAMES, 1);
	h->ts = mt_stamp();
	h->fn = (uint8_t)fn;
	h->old = old;
	h->p = p;
	h->n = n;
	h->unsampled = (uint8_t)sample_skip(n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	h->kind = (uint8_t)kind;
}

/* A held allocation or realloc (H): recorded, or when sampling, as much of
 * it as was sampled (the allocation's part was decided when it was held: a
 * sampled realloc of an unsampled block is recorded as an allocation). */
static void emit_held_block(struct mt_tslot *s, struct held *h)
{
	int kind = h->kind == HELD_REALLOC ? MT_EV_REALLOC : MT_EV_ALLOC;
	void *old = h->old;
	if (mt_sample_mean && kind == MT_EV_REALLOC && !mt_sample_take(old)) {
		kind = MT_EV_ALLOC;
		old = NULL;
	}
	if (!mt_sample_mean || !h->unsampled) {
		mt_tbuf_event(s, kind, h->fn, old, h->p, h->n, h->pcs, h->depth, h->ts, tid());
		if (mt_sample_mean)
			mt_sample_add(h->p);
	} else if (old) {
		mt_tbuf_event(s, MT_EV_FREE, 0, NULL, old, 0, NULL, 0, h->ts, tid());
	}
	if (h->kind == HELD_REALLOC)
		release(h->old);
}

/* Writes out the events held back, oldest first, releases the blocks of
 * held-back frees after their records, and gives the queue back. */
static void emit_held(struct mt_tslot *s)
{
	uint32_t n = __atomic_load_n(&t_held_n, __ATOMIC_RELAXED);
	if (likely(!n))
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	n = t_held_n; /* final now */
	struct held_queue *q = t_queue;
	uint32_t kept = 0;
	for (uint32_t i = 0; q && i < n && i < HELD_MAX; i++) {
		struct held *h = &q->ev[i];
		if (h->kind == HELD_NONE)
			continue;
		kept++;
		if (h->kind == HELD_FREE) {
			if (!mt_sample_mean || mt_sample_take(h->p)) {
				mt_tbuf_event(s, MT_EV_FREE, 0, NULL, h->p, 0, NULL, 0, h->ts,
					      tid());
				mt_gate_wait(h->ts);
			}
			release(h->p);
		} else {
			emit_held_block(s, h);
		}
		h->kind = HELD_NONE;
	}
	if (n > kept) {
		mt_channel_lock();
		uint8_t *w = mt_channel_reserve(MT_REC_MAX_SMALL);
		if (w)
			mt_channel_commit(mt_enc_lost(w, MT_LOST_SHIM_BUSY, n - kept));
		mt_channel_unlock();
	}
	t_held_n = 0;
	if (q) {
		t_queue = NULL;
		__atomic_store_n(&q->taken, 0, __ATOMIC_RELEASE);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Called when the thread, outside the lock, finds events held back. */
void mt_flush_held(void)
{
	if (!__atomic_load_n(&t_held_n, __ATOMIC_RELAXED) || mt_channel_held_here())
		return;
	uint16_t busy = t_busy;
	struct mt_tslot *s = begin();
	emit_held(s);
	t_busy = busy;
}

/* Whether a call must be held back: a signal handler's, on a thread that is
 * recording an event or holds the channel lock. */
INLINE int must_hold(void)
{
	return t_busy || mt_channel_held_here();
}

/* Whether an event that missed the fast path is to be recorded at all;
 * starts the shim on the first call. */
INLINE int wanted(void)
{
	if (t_pass)
		return 0; /* part of an event a hook records */
	if (likely(mt_enabled))
		return 1;
	if (init_state == INIT_DONE)
		return 0; /* switched off (SIGUSR1/2, or the recorder is gone) */
	if (t_starting)
		return 0; /* the shim's own calls while it starts */
	if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == INIT_NOT_YET)
		start_shim();
	else /* another thread is starting it: do not wait for that thread */
		__atomic_fetch_add(&unrecorded_at_start, 1, __ATOMIC_RELAXED);
	return mt_enabled;
}

/* The slow paths: called from the hooks when the fast path does not apply
 * (shim not started or switched off, the thread inside the shim, events
 * held back).  Each unwinds from its own frame, skipping the hook's. */
void mt_slow_alloc(int fn, void *p, size_t n)
{
	if (!wanted())
		return;
	if (must_hold()) {
		struct held *h = hold_slot();
		if (h)
			hold(h, HELD_ALLOC, fn, NULL, p, n);
		return;
	}
	struct mt_tslot *s = begin();
	emit_held(s);
	if (!sample_skip(n)) {
		uint64_t pcs[MT_MAX_FRAMES];
		int depth = mt_unwind(pcs, MT_MAX_FRAMES, 1);
		mt_tbuf_event(s, MT_EV_ALLOC, fn, NULL, p, n, pcs, depth, mt_stamp(), tid());
		if (mt_sample_mean)
			mt_sample_add(p);
	}
	leave();
}

/* Returns 1 when the free was held back: the caller must not release the
 * block (emit_held does, after its record). */
int mt_slow_free(void *p)
{
	if (!wanted())
		return 0;
	if (must_hold()) {
		struct held *h = hold_slot();
		if (!h)
			return 0;
		h->ts = mt_stamp();
		h->p = p;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		h->kind = HELD_FREE;
		return 1;
	}
	struct mt_tslot *s = begin();
	uint64_t ts = mt_stamp();
	emit_held(s);
	if (!mt_sample_mean || mt_sample_take(p)) {
		mt_tbuf_event(s, MT_EV_FREE, 0, NULL, p, 0, NULL, 0, ts, tid());
		mt_gate_wait(ts);
	}
	leave();
	return 0;
}

/* A realloc of a live block (OLD set, N not 0) off the fast path. */
void *mt_slow_realloc(int fn, void *old, size_t n)
{
	if (!wanted())
		return NEXT_REALLOC(old, n);
	if (must_hold()) {
		/* The old block must stay someone's until the record is out: a
		 * new block for the caller, the old one released after. */
		size_t have = mt_boot_owns(old) ?
				      mt_next_boot_size(old) :
				      malloc_usable_size(old); /* the next allocator's */
		void *p = NEXT(__libc_malloc(n), mt_next_malloc(n));
		if (!p)
			return NULL;
		memcpy(p, old, have < n ? have : n);
		struct held *h = hold_slot();
		if (!h) {
			release(old);
			return p;
		}
		hold(h, HELD_REALLOC, fn, old, p, n);
		return p;
	}
	struct mt_tslot *s = begin();
	uint64_t pcs[MT_MAX_FRAMES];
	int depth = mt_unwind(pcs, MT_MAX_FRAMES, 1);
	emit_held(s);
	int new = !sample_skip(n);
	if (mt_sample_mean && !mt_sample_take(old)) {
		/* the old block was not sampled: at most an allocation */
		void *p = NEXT_REALLOC(old, n);
		if (p && new) {
			mt_tbuf_event(s, MT_EV_ALLOC, fn, NULL, p, n, pcs, depth, mt_stamp(),
				      tid());
			mt_sample_add(p);
		}
		leave();
		return p;
	}
	uint64_t ts;
	int locked = realloc_begin(s, &ts);
	void *p = NEXT_REALLOC(old, n);
	realloc_end(s, locked, new ? fn : -1, old, p, n, pcs, depth, ts);
	if (mt_sample_mean && (!p || new))
		mt_sample_add(p ? p : old);
	leave();
	return p;
}

/* Sampling: an allocator call not recorded came after a sampled block's
 * record: a free of no block (address 0) says so, as the thread's next
 * allocator event (analyse/figures.c), so that the block's free is no
 * temporary unless it really was the thread's next call. */
void mt_sample_touch(void)
{
	if (!mt_enabled || mt_t_in.any)
		return; /* (the next call that is not recorded says it) */
	mt_t_touch = 0;
	struct mt_tslot *s = begin();
	put_free(s, NULL, mt_stamp_raw(mt_tbuf_multi()));
	leave();
}

/* ---- for extapi.c: the allocators' own APIs (record.h) ----------------- */

int mt_ext_enter(void)
{
	int pass = t_pass;
	t_pass = 1;
	return pass;
}

void mt_ext_leave(int saved)
{
	t_pass = (uint16_t)saved;
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

/* CALL(OLD, N, CTX) with the thread inside the shim. */
static void *ext_call(mt_resize_fn call, void *old, size_t n, void *ctx)
{
	int pass = mt_ext_enter();
	void *p = call(old, n, ctx);
	mt_ext_leave(pass);
	return p;
}

__attribute__((noinline)) void *mt_ext_resize(int fn, void *old, size_t n, mt_resize_fn call,
					      void *ctx)
{
	if (!mt_enabled || mt_t_in.any)
		return ext_call(call, old, n, ctx);
	void *p;
	if (n == 0) {
		record_free(old);
		p = ext_call(call, old, 0, ctx);
		if (p)
			RECORD_ALLOC(fn, p, 0);
		return p;
	}
	RECORD_REALLOC(fn, old, n, p, ext_call(call, old, n, ctx));
	return p;
}

/* ---- for mmaps.c: mapping calls (record.h) ---------------------------- */

/* The file behind descriptor FD (its /proc/self/fd link), in OUT: the
 * length, 0 when unknown. */
static size_t fd_path(int fd, char *out, size_t len)
{
	char link[32] = "/proc/self/fd/", digits[12];
	int n = 0;
	unsigned v = (unsigned)fd;
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	size_t o = 14;
	while (n)
		link[o++] = digits[--n];
	link[o] = 0;
	ssize_t r = readlink(link, out, len);
	return r > 0 ? (size_t)r : 0;
}

/* Writes M with the stack PCS, after the events stamped before STAMP, at
 * its exact time (as a marker's: the calls are few, and a call and the
 * marker the program sets after it stay in order). */
static void write_mapcall(const struct mt_mapcall *m, const uint64_t *pcs, int depth,
			  uint64_t stamp)
{
	char path[4096];
	size_t plen = 0;
	if (m->kind == MT_MAP_MMAP && m->fd >= 0 && !m->error)
		plen = fd_path(m->fd, path, sizeof path);
	mt_channel_lock();
	mt_tbuf_sync_locked(stamp, 0);
	uint8_t *w = mt_channel_reserve(MT_REC_MAX_STACK + 160 + plen);
	if (w) {
		w = mt_enc_thread(&mt_enc_state, w, tid());
		mt_channel_commit(mt_enc_mmap(w, mt_stamp_ns_exact(stamp), m, pcs, (unsigned)depth,
					      path, plen));
	}
	mt_channel_unlock();
}

/* Whether a mapping call may be recorded now: tracing on, and the thread
 * not inside the shim's recording (a call made there is the shim's own, or
 * a signal handler's that the shim does not hold back). */
INLINE int mapcall_wanted(void)
{
	return likely(mt_enabled) && mt_cfg.gather_mmap && !t_busy && !t_starting &&
	       !mt_channel_held_here();
}

/* Records M with the stack of the hook that calls this, SKIP frames left
 * out (inlined: the frames are the hook's). */
__attribute__((always_inline)) static inline void record_mapcall(const struct mt_mapcall *m,
								 int skip)
{
	struct mt_tslot *s = begin();
	uint64_t pcs[MT_MAX_FRAMES];
	int depth = mt_unwind(pcs, MT_MAX_FRAMES, skip);
	uint64_t stamp = mt_stamp();
	emit_held(s);
	write_mapcall(m, pcs, depth, stamp);
	leave();
}

__attribute__((noinline)) void mt_ext_mapcall(struct mt_mapcall *m)
{
	if (!mapcall_wanted())
		return;
	m->by = t_pass ? MT_MAP_BY_ALLOCATOR : MT_MAP_BY_PROGRAM;
	/* from here: the frames of mmaps.c are dropped when reports symbolize */
	record_mapcall(m, 0);
	NO_TAIL_CALL();
}

void mt_note_block(void *p)
{
	if (likely(mt_next_glibc <= 0) || mt_boot_owns(p) || !mapcall_wanted() || t_pass)
		return;
	const size_t *h = (const size_t *)p;
	if (!(h[-1] & 2)) /* IS_MMAPPED */
		return;
	struct mt_mapcall m = { .kind = MT_MAP_BLOCK,
				.by = MT_MAP_BY_ALLOCATOR,
				.prot = PROT_READ | PROT_WRITE,
				.flags = MAP_PRIVATE | MAP_ANONYMOUS,
				.fd = -1,
				.addr = (uint64_t)(uintptr_t)p,
				.len = (h[-1] & ~(size_t)7) + h[-2] };
	record_mapcall(&m, 1);
	NO_TAIL_CALL();
}

void *mt_brk_known;

void mt_note_brk(void)
{
	void *now = __curbrk, *was = __atomic_exchange_n(&mt_brk_known, now, __ATOMIC_RELAXED);
	/* another thread's hook took this move; or the break before start */
	if (was == now || !was || !mapcall_wanted() || t_pass)
		return;
	int64_t move = (int64_t)((uintptr_t)now - (uintptr_t)was);
	struct mt_mapcall m = { .kind = MT_MAP_BRK,
				.by = MT_MAP_BY_ALLOCATOR,
				.fd = -1,
				.addr = (uint64_t)(uintptr_t)now,
				.old_addr = (uint64_t)(uintptr_t)was,
				/* as sbrk's increment, which glibc's call was */
				.len = ((uint64_t)move << 1) ^ (uint64_t)(move >> 63) };
	record_mapcall(&m, 1);
	NO_TAIL_CALL();
}

/* ---- loader, exit --------------------------------------------------- */

/* The channel lock held: an object took the place of one unloaded, whose
 * stacks' addresses may be this one's: they are written again. */
static void modules_replaced(void)
{
	mt_stacktab_reset();
}

EXPORT void *dlopen(const char *file, int mode)
{
	if (!real_dlopen)
		real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	void *h = real_dlopen(file, mode);
	if (h && initialized) {
		int busy = t_busy;
		t_busy = 1;
		mt_unwind_modules_changed();
		/* the events the threads buffered before the load go before its
		 * MODULE records: a reader names their frames from what was there */
		if (!mt_channel_held_here())
			mt_tbuf_sync(1);
		mt_modules_emit_new(modules_replaced);
		t_busy = busy;
		if (unlikely(t_held_n))
			mt_flush_held();
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

static void finish_recording(void);

/* How the process ends, for the EXIT record a standalone shim writes (the
 * recorder learns it from waitpid otherwise): exit's status through
 * on_exit(3), which sees main's return too, or _exit's argument.  The
 * handler is registered as the shim starts, before main, so exit runs it
 * after the destructors (libc registers the loader's destructor pass
 * later): it, not mt_fini, then ends the recording, status known, with
 * what the other libraries' destructors allocated and freed in it. */
static int exit_hooked, exit_known, exit_code;

static void note_exit(int status, void *finish)
{
	/* only the process that records: a vfork child shares these, and a
	 * child that stopped tracing has nothing to end (mt_fini flushes) */
	if (!initialized || mt_channel_pid() != (uint32_t)getpid())
		return;
	exit_code = status & 0xff;
	exit_known = 1;
	if (finish)
		finish_recording();
}

EXPORT void _exit(int status)
{
	note_exit(status, NULL);
	finish_recording();
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
 * returns, the image goes on and says so.  (glibc's execl* reach execve
 * without the PLT: they have hooks of their own below, as fexecve and
 * posix_spawn, whose child execs.) */
static void note_child(pid_t pid);
static void note_vfork_children(void);
/* The children of vfork (dash runs its commands so) that exec: counted
 * here, in the child, where the memory is its traced parent's, and written
 * by the parent (note_vfork_children). */
static unsigned long vfork_children;

static void exec_note(const char *file, int search, char *const envp[])
{
	if (initialized && mt_channel_pid() && mt_channel_pid() != (uint32_t)getpid() &&
	    !mt_cfg.follow_forks)
		__atomic_fetch_add(&vfork_children, 1, __ATOMIC_RELAXED);
	if (!initialized || mt_channel_pid() != (uint32_t)getpid())
		return; /* not traced, or a vfork child: its parent's ring */
	note_vfork_children();
	int busy = t_busy;
	t_busy = 1;
	if (!mt_channel_held_here())
		mt_tbuf_sync(1);
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

/* glibc's execl, execle and execlp build their argument vector and call
 * execve or execvpe inside libc, past the hooks above: these build it here
 * and go through those hooks (on the stack: an exec's arguments are few). */
#define VA_ARGV(arg, argv, ap)                                        \
	size_t n_ = 1;                                                \
	va_start(ap, arg);                                            \
	for (const char *a_ = arg; a_; a_ = va_arg(ap, const char *)) \
		n_++;                                                 \
	va_end(ap);                                                   \
	char *argv[n_];                                               \
	va_start(ap, arg);                                            \
	argv[0] = (char *)arg;                                        \
	for (size_t i_ = 1; i_ < n_; i_++)                            \
	argv[i_] = va_arg(ap, char *)

EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	VA_ARGV(arg, argv, ap);
	va_end(ap);
	return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	VA_ARGV(arg, argv, ap);
	va_end(ap);
	return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	VA_ARGV(arg, argv, ap);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

/* /proc/self/fd/FD, then "/" and REST when REST is not empty, into OUT. */
static void proc_fd_name(char *out, size_t len, int fd, const char *rest)
{
	static const char pre[] = "/proc/self/fd/";
	char digits[12];
	int k = 0;
	for (unsigned v = fd < 0 ? 0 : (unsigned)fd; k == 0 || v; v /= 10)
		digits[k++] = (char)('0' + v % 10);
	size_t o = sizeof pre - 1, n = rest ? strlen(rest) : 0;
	memcpy(out, pre, o);
	while (k)
		out[o++] = digits[--k];
	if (n && o + 1 + n < len) {
		out[o++] = '/';
		memcpy(out + o, rest, n);
		o += n;
	}
	out[o] = 0;
}

/* fexecve executes what a descriptor holds: /proc/self/fd/FD names it. */
EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	static int (*real)(int, char *const[], char *const[]);
	if (!real)
		real = (int (*)(int, char *const[], char *const[]))dlsym(RTLD_NEXT, "fexecve");
	char path[32];
	proc_fd_name(path, sizeof path, fd, NULL);
	exec_note(path, 0, envp);
	int r = real(fd, argv, envp);
	exec_failed(path);
	return r;
}

/* execveat (glibc 2.34): PATH relative to directory DIRFD, or DIRFD itself. */
EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	static int (*real)(int, const char *, char *const[], char *const[], int);
	if (!real)
		real = (int (*)(int, const char *, char *const[], char *const[],
				int))dlsym(RTLD_NEXT, "execveat");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	char where[4096];
	const char *file = path;
	if (path[0] != '/' && dirfd != AT_FDCWD) {
		proc_fd_name(where, sizeof where, dirfd, (flags & AT_EMPTY_PATH) ? NULL : path);
		file = where;
	}
	exec_note(file, 0, envp);
	int r = real(dirfd, path, argv, envp, flags);
	exec_failed(file);
	return r;
}

/* posix_spawn runs the program in a child: this image goes on, but a
 * program that spawns and is then killed (SIGKILL, which nothing catches)
 * would lose what is buffered: standalone, it is written out first. */
static void spawn_flush(void)
{
	if (!initialized || mt_cfg.connect || mt_channel_pid() != (uint32_t)getpid())
		return;
	int busy = t_busy;
	t_busy = 1;
	if (!mt_channel_held_here())
		mt_tbuf_sync(1);
	t_busy = busy;
	mt_channel_flush();
}

/* Without --follow-forks a child this image starts is not traced, and a
 * user who recorded `sh -c ./app` must be told so: each one is written
 * (MT_EXT_CHILD, PID 0 when not known), for the report and record's end
 * to count.  Not for a wrapper's child that takes the main role over
 * (hands_over): that one is traced.  (A child of vfork is counted at its
 * exec, as a hook of vfork could not return twice through its own frame;
 * one that never execs, or a raw clone's, goes uncounted.) */
static void note_child(pid_t pid)
{
	if (!initialized || mt_cfg.follow_forks || (main_role && hands_over) ||
	    mt_channel_pid() != (uint32_t)getpid())
		return;
	int busy = t_busy;
	t_busy = 1;
	uint64_t ts = mt_now();
	mt_channel_lock();
	uint8_t *w = mt_channel_reserve(MT_REC_MAX_SMALL);
	if (w)
		mt_channel_commit(mt_enc_child(w, ts, (uint64_t)pid));
	mt_channel_unlock();
	t_busy = busy;
}

static void note_vfork_children(void)
{
	if (!__atomic_load_n(&vfork_children, __ATOMIC_RELAXED) ||
	    mt_channel_pid() != (uint32_t)getpid())
		return;
	for (unsigned long n = __atomic_exchange_n(&vfork_children, 0, __ATOMIC_RELAXED); n; n--)
		note_child(0);
}

EXPORT pid_t fork(void)
{
	static pid_t (*real)(void);
	if (!real)
		real = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
	pid_t r = real();
	if (r > 0) {
		int saved = errno;
		note_child(r);
		errno = saved;
	}
	return r;
}

/* glibc's system spawns the shell inside libc, past the hooks: counted
 * here, when the shell ran. */
EXPORT int system(const char *command)
{
	static int (*real)(const char *);
	if (!real)
		real = (int (*)(const char *))dlsym(RTLD_NEXT, "system");
	int r = real(command);
	if (command && r != -1) {
		int saved = errno;
		note_child(0);
		errno = saved;
	}
	return r;
}

#define SPAWN_HOOK(name)                                                                           \
	EXPORT int name(pid_t *pid, const char *file, const posix_spawn_file_actions_t *acts,      \
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])     \
	{                                                                                          \
		static int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *,      \
				   const posix_spawnattr_t *, char *const[], char *const[]);       \
		if (!real)                                                                         \
			real = (int (*)(pid_t *, const char *, const posix_spawn_file_actions_t *, \
					const posix_spawnattr_t *, char *const[],                  \
					char *const[]))dlsym(RTLD_NEXT, #name);                    \
		spawn_flush();                                                                     \
		pid_t child = 0;                                                                   \
		int r = real(&child, file, acts, attr, argv, envp);                                \
		if (pid)                                                                           \
			*pid = child;                                                              \
		if (r == 0)                                                                        \
			note_child(child);                                                         \
		return r;                                                                          \
	}
SPAWN_HOOK(posix_spawn)
SPAWN_HOOK(posix_spawnp)

/* A program may mark moments of its run ("request 1 done"); reports list
 * them with their times.  Declare it weak to run with and without the shim:
 *   extern void memtrace_marker(const char *) __attribute__((weak));
 *   if (memtrace_marker) memtrace_marker("warm-up done"); */
EXPORT void memtrace_marker(const char *text)
{
	static unsigned long counter;
	if (!initialized || !text || mt_channel_held_here())
		return;
	size_t n = strnlen(text, 1024);
	int busy = t_busy;
	t_busy = 1;
	uint64_t stamp = mt_stamp();
	mt_channel_lock();
	mt_tbuf_sync_locked(stamp, 0); /* the events before it first */
	uint8_t *w = mt_channel_reserve(64 + n);
	if (w) {
		w = mt_enc_thread(&mt_enc_state, w, tid());
		mt_channel_commit(mt_enc_marker(&mt_enc_state, w, mt_stamp_ns_exact(stamp),
						++counter, text, n));
	}
	mt_channel_unlock();
	t_busy = busy;
	if (unlikely(t_held_n))
		mt_flush_held();
}

/* ---- for tune.c: calls that tune the allocator ------------------------
 *
 * mallopt and malloc_trim are rare: their record goes out under the lock,
 * after the events the threads buffered before it, as a marker does. */
static void record_tune(uint32_t call, int64_t param, int64_t value, int64_t result,
			const uint64_t *pcs, int depth)
{
	struct mt_mallopt m = {
		.tid = tid(), .call = call, .param = param, .value = value, .result = result
	};
	uint64_t stamp = mt_stamp();
	mt_channel_lock();
	mt_tbuf_sync_locked(stamp, 0);
	uint8_t *w = mt_channel_reserve(MT_REC_MAX_MALLOPT);
	if (w)
		mt_channel_commit(
			mt_enc_mallopt(w, mt_stamp_ns_exact(stamp), &m, pcs, (unsigned)depth));
	mt_channel_unlock();
}

__attribute__((noinline)) void mt_ext_tune(uint32_t call, int64_t param, int64_t value,
					   int64_t result)
{
	/* (not one a signal handler makes inside the shim; it may start it) */
	if (t_busy || mt_channel_held_here() || !wanted() || !initialized)
		return;
	uint64_t pcs[MT_MAX_FRAMES];
	t_busy = 1;
	int depth = mt_unwind(pcs, MT_MAX_FRAMES, 1); /* from the hook's caller */
	record_tune(call, param, value, result, pcs, depth);
	leave();
}

/* ---- start-up, fork, signals ----------------------------------------- */

/* fatal.c's handler, before signal SIG kills the process (standalone):
 * what is buffered goes to the file, after an EXIT record that says of
 * which signal the process died (the recorder writes it otherwise). */
static void fatal_flush(int sig)
{
	if (!initialized || mt_channel_pid() != (uint32_t)getpid())
		return;
	if (mt_channel_held_here()) { /* (see finish_recording) */
		mt_channel_end_interrupted(t_held_n, 1, -(int64_t)sig);
		return;
	}
	if (!t_busy)
		mt_flush_held();
	mt_tbuf_sync(1);
	mt_channel_lock();
	uint8_t *w = mt_channel_reserve(MT_REC_MAX_SMALL);
	if (w)
		mt_channel_commit(mt_enc_exit(w, mt_now(), -(int64_t)sig));
	mt_channel_unlock();
	mt_channel_flush();
}

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
				   mt_timespec_ns(rt), mt_now(), "preload", exe, (size_t)exelen,
				   argv ? argv : "", alen);
		if (main_role)
			w = mt_enc_main(w);
		if (mt_sample_mean)
			w = mt_enc_sampled(w, mt_sample_mean);
		mt_channel_commit(w);
	}
	mt_channel_unlock();
	write_heap_record();
}

static void before_fork(void)
{
	mt_serve_before_fork();
	mt_sample_before_fork();
	mt_channel_lock();
}

static void after_fork_parent(void)
{
	mt_channel_unlock();
	mt_sample_after_fork(0);
	mt_serve_after_fork_parent(); /* waits for the child to drop the listener */
	if (unlikely(t_held_n))
		mt_flush_held();
}

/* In a fork child: events a signal handler held back during the fork are
 * the parent's to record; the child only releases its copies of the blocks
 * whose release waited for a record. */
static void drop_held(void)
{
	struct held_queue *q = t_queue;
	uint32_t n = t_held_n;
	for (uint32_t i = 0; q && i < n && i < HELD_MAX; i++) {
		if (q->ev[i].kind == HELD_FREE)
			release(q->ev[i].p);
		else if (q->ev[i].kind == HELD_REALLOC)
			release(q->ev[i].old);
		q->ev[i].kind = HELD_NONE;
	}
	t_held_n = 0;
	if (q) {
		t_queue = NULL;
		q->taken = 0;
	}
}

/* Also called for a child made without glibc's fork (channel.c), on its
 * first event, with the channel lock held. */
static void after_fork_child(void)
{
	drop_held();
	mt_tbuf_after_fork_child();
	mt_serve_after_fork_child();
	mt_t_tid = 0;
	mt_enabled = 0;
	if (main_role && hands_over)
		mt_main_handover(); /* the program the wrapper runs is the main one */
	else
		main_role = 0;
	mt_channel_after_fork_child(mt_cfg.follow_forks);
	mt_channel_unlock();
	mt_sample_after_fork(1);
	if (mt_cfg.follow_forks) {
		mt_stacktab_reset();
		mt_modules_forget();
		write_process_record();
		mt_modules_emit_new(NULL);
		mt_enabled = 1;
	}
}

static void on_toggle(int sig)
{
	(void)sig;
	mt_enabled = !mt_enabled;
}

/* Every 20 ms, on the shim's thread: what the threads buffered goes out
 * (and the stamps' rate is measured anew). */
static void merge_tick(void)
{
	mt_tbuf_sync(0);
	note_vfork_children();
	if (unlikely(mt_serve_pending)) {
		uint16_t pass = t_pass;
		t_pass = 1; /* what starting the server allocates is the shim's */
		mt_serve_start();
		t_pass = pass;
	}
}

/* Marks the calling thread as the shim's for good (serve.c's). */
static void pass_through(void)
{
	t_pass = 1;
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

/* Starts the shim: on the first allocator call (often in another library's
 * constructor: libstdc++ allocates its emergency exception pool there, before
 * this library's constructor runs), else in the constructor below.  The
 * environment is read directly, as ld.so set it up before any constructor.
 * One thread starts it; the allocator calls it makes meanwhile pass
 * unrecorded (t_starting), and those of other threads are counted as lost
 * rather than made to wait for it (a thread waiting inside dlopen or setenv
 * could hold a lock this one needs). */
static void start_shim(void)
{
	extern char **environ;
	int expected = INIT_NOT_YET;
	/* Called before libc has set up the environment (the loader's own calls,
	 * if any): not yet, or MEMTRACE_* would seem unset. */
	if (!environ)
		return;
	if (!__atomic_compare_exchange_n(&init_state, &expected, INIT_RUNNING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	t_starting = 1;
	mt_config_load();
	mt_log_open();
	mt_stamp_init(mt_cfg.precise_timestamps);
	mt_sample_init(mt_cfg.sample, mt_cfg.sample_seed);
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
	mt_tbuf_init();
	mt_channel_guard_init(after_fork_child);
	mt_channel_on_tick(merge_tick);
	mt_serve_init(pass_through);
	if (mt_channel_open((uint32_t)getppid()) < 0) {
		__atomic_store_n(&init_state, INIT_DONE, __ATOMIC_RELEASE);
		t_starting = 0;
		return;
	}
	write_process_record();
	mt_modules_emit_new(NULL);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	struct sigaction sa = { .sa_handler = on_toggle, .sa_flags = SA_RESTART };
	if (mt_cfg.sigusr1)
		sigaction(SIGUSR1, &sa, NULL);
	if (mt_cfg.sigusr2)
		sigaction(SIGUSR2, &sa, NULL);
	initialized = 1;
	if (!mt_cfg.connect) {
		mt_fatal_install(fatal_flush);
		exit_hooked = on_exit(note_exit, (void *)1) == 0;
	}
	/* the break from here on (glibc asks the kernel at its first move) */
	mt_brk_known = &__curbrk && __curbrk ? __curbrk : (void *)syscall(SYS_brk, 0);
	mt_enabled = !mt_cfg.disabled_by_default;
	__atomic_store_n(&init_state, INIT_DONE, __ATOMIC_RELEASE);
	unsigned long missed = __atomic_exchange_n(&unrecorded_at_start, 0, __ATOMIC_RELAXED);
	if (missed) {
		mt_channel_lock();
		uint8_t *w = mt_channel_reserve(MT_REC_MAX_SMALL);
		if (w)
			mt_channel_commit(mt_enc_lost(w, MT_LOST_SHIM_BUSY, missed));
		mt_channel_unlock();
	}
	t_starting = 0;
}

__attribute__((constructor(101))) static void mt_init(void)
{
	if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == INIT_NOT_YET)
		start_shim();
}

/* The end of the process (exit's destructors, _exit): what is buffered
 * is written out, then, standalone, the binaries
 * (MEMTRACE_WRITE_BINARIES_TO_OUTPUT), and a gatherer is given the end
 * (MEMTRACE_ENABLE_SERVER). */
static void finish_recording(void)
{
	/* A vfork child shares our memory, server included: it only writes
	 * out what is buffered, as before. */
	int own = initialized && mt_channel_pid() == (uint32_t)getpid();
	static int ended; /* (this process's recording was ended) */
	if (own && ended)
		return;
	/* From a signal handler that interrupted this thread while it held the
	 * channel lock (exit or _exit in the handler): the lock is never
	 * released, and the events the handler held back cannot be encoded
	 * (the record it interrupted may have left the encoder's state
	 * half-updated), so they are counted as lost rather than silently
	 * missing; what was committed still reaches the file. */
	if (mt_channel_held_here()) {
		if (own) {
			ended = 1;
			mt_channel_end_interrupted(t_held_n, !mt_cfg.connect && exit_known,
						   exit_code);
			exit_known = 0;
		}
		return;
	}
	/* Served, the recording ends here: what other threads do while the
	 * process exits would otherwise reach the file after the gatherer
	 * was told its end. */
	if (own && mt_serve_listening())
		mt_enabled = 0;
	mt_flush_held();
	mt_tbuf_sync(1);
	if (own)
		note_vfork_children();
	/* standalone, the file says the process ended, and how, as the
	 * recorder's does (else reports take it for still running) */
	if (own && !mt_cfg.connect && exit_known) {
		mt_channel_lock();
		uint8_t *w = mt_channel_reserve(MT_REC_MAX_SMALL);
		if (w)
			mt_channel_commit(mt_enc_exit(w, mt_now(), exit_code));
		mt_channel_unlock();
		exit_known = 0;
	}
	mt_channel_flush();
	if (!own)
		return;
	ended = 1;
	if (mt_cfg.write_binaries) {
		t_pass = 1; /* nothing of the process is recorded after this */
		mt_binaries_write();
	}
	mt_serve_finish();
}

__attribute__((destructor)) static void mt_fini(void)
{
	/* exit's handler comes next and finishes (note_exit) */
	if (exit_hooked && !exit_known && mt_channel_pid() == (uint32_t)getpid())
		return;
	finish_recording();
}
