/*
 * fastpath.h - the recording of an allocator call, inline: what the
 * allocator hooks (hooks.c) and the recording core's own entry points for
 * extapi.c (preload.c: mt_ext_alloc, mt_ext_free, mt_ext_resize) compile
 * into themselves, so that an allocation made outside the shim costs no
 * call but the unwinder's and the next allocator's.  When the fast path
 * does not apply (shim not started or switched off, the thread inside the
 * shim, events held back) they call the slow paths, preload.c's mt_slow_*,
 * which unwind from their own frame.
 *
 * The thread's state (inside the shim or not, its id) is declared here and
 * defined in preload.c; only hooks.c and preload.c include this file.
 */
#ifndef MEMTRACE_SHIM_FASTPATH_H
#define MEMTRACE_SHIM_FASTPATH_H

#include "shim.h"
#include "unwind.h"

#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Per thread, in one word so that the hot path tests them all with one
 * load: whether the thread is inside the shim, whether it is inside the
 * next allocator on the shim's behalf, and how many events a signal handler
 * of the thread held back (preload.c: "signal handlers"). */
union mt_tstate {
	uint64_t any;
	struct {
		uint16_t busy; /* recording an event: a nested call is a signal
				* handler's, recorded (or held back) */
		uint16_t pass; /* in the next allocator for a hook (NEXT): what it
				* calls of ours is part of that one event, and
				* passes through unrecorded */
		uint32_t held; /* events held back, including those that did not fit */
	} s;
};
MT_HIDDEN extern __thread union mt_tstate mt_t_in;
#define t_busy mt_t_in.s.busy
#define t_pass mt_t_in.s.pass
#define t_held_n mt_t_in.s.held
MT_HIDDEN extern __thread uint32_t mt_t_tid;

#define EXPORT __attribute__((visibility("default")))
#define INLINE static inline __attribute__((always_inline))
#define COLD __attribute__((noinline, cold))
/* After a call whose frame the stack must keep: no tail call into it (the
 * slow paths unwind from their own frame, skipping exactly one). */
#define NO_TAIL_CALL() __asm__ volatile("" ::: "memory")

/* The next allocator's call: glibc's DIRECT one when it is glibc, else
 * OTHER (next.c) with the thread marked as passing through, so that what
 * that allocator calls of ours on its way (mimalloc's malloc -> mi_malloc,
 * both interposed; dlsym's allocations while next.c resolves) passes
 * through unrecorded: each event counts once. */
#define NEXT(direct, other)                      \
	({                                       \
		__typeof__(direct) r_;           \
		if (likely(mt_next_glibc > 0)) { \
			r_ = direct;             \
		} else {                         \
			uint16_t b_ = t_pass;    \
			t_pass = 1;              \
			r_ = other;              \
			t_pass = b_;             \
		}                                \
		r_;                              \
	})

/* Gives P back to the next allocator (the slow paths' frees, and free's). */
INLINE void release(void *p)
{
	if (likely(mt_next_glibc > 0) && likely(!mt_boot_owns(p))) {
		__libc_free(p);
	} else {
		uint16_t b = t_pass;
		t_pass = 1;
		mt_next_free(p);
		t_pass = b;
	}
}

/* The next allocator's realloc of a live block OLD (the bootstrap buffer's
 * blocks are next.c's to move, whatever the allocator). */
#define NEXT_REALLOC(old, n)                                                                  \
	(likely(!mt_boot_owns(old)) ? NEXT(__libc_realloc(old, n), mt_next_realloc(old, n)) : \
				      mt_next_realloc(old, n))

INLINE uint32_t tid(void)
{
	if (unlikely(!mt_t_tid))
		mt_t_tid = (uint32_t)syscall(SYS_gettid);
	return mt_t_tid;
}

/* Whether S's event can go straight out: events go out one by one and
 * no buffer holds any (else tbuf.c merges them first, or buffers it). */
INLINE int direct(const struct mt_tslot *s)
{
	return likely(s) && (likely(!mt_tbuf_on) || (mt_tbuf_nlive <= 1 && !mt_tbuf_dirty));
}

/* An allocation's (a free's) event: written at once, under the channel
 * lock, as a merge writes buffered ones, when it can go straight out; else
 * into the thread's buffer (tbuf.c). */
INLINE void put_alloc(struct mt_tslot *s, int fn, void *p, size_t n, const uint64_t *pcs, int depth,
		      uint64_t stamp)
{
	if (direct(s)) {
		mt_channel_lock();
		mt_emit_block(tid(), 0, fn, 0, (uint64_t)(uintptr_t)p, n, pcs, (unsigned)depth,
			      stamp);
		mt_channel_unlock();
	} else {
		mt_tbuf_event(s, MT_EV_ALLOC, fn, NULL, p, n, pcs, depth, stamp, tid());
	}
}

INLINE void put_free(struct mt_tslot *s, void *p, uint64_t stamp)
{
	if (direct(s)) {
		mt_channel_lock();
		mt_emit_free(tid(), (uint64_t)(uintptr_t)p, stamp);
		mt_channel_unlock();
	} else {
		mt_tbuf_event(s, MT_EV_FREE, 0, NULL, p, 0, NULL, 0, stamp, tid());
	}
}

/* preload.c: the slow paths (COLD: out of the hot path's way). */
/* Raw-clone children (channel.c) are told apart on their first event. */
MT_HIDDEN COLD void mt_check_process(void);
/* The calling thread's new buffer slot (tbuf.c). */
MT_HIDDEN COLD struct mt_tslot *mt_new_slot(void);
/* Writes out what a signal handler held back, outside the lock. */
MT_HIDDEN COLD void mt_flush_held(void);
/* An allocation, a free (1: held back, the caller must not release the
 * block) and a realloc of a live block, recorded off the fast path. */
MT_HIDDEN COLD void mt_slow_alloc(int fn, void *p, size_t n);
MT_HIDDEN COLD int mt_slow_free(void *p);
MT_HIDDEN COLD void *mt_slow_realloc(int fn, void *old, size_t n);
/* Records block P, if glibc gave it a mapping of its own (hooks.c:
 * NOTE_BLOCK), as that mapping. */
MT_HIDDEN COLD void mt_note_block(void *p);

/* glibc's malloc and free move the program break with libc's internal
 * sbrk, which the shim's sbrk (mmaps.c) never sees.  glibc exports its
 * break (__curbrk, since 2.2.5), so each hook compares it, after the
 * allocator's call, with the last break seen (mt_brk_known, shim.h); a
 * move is recorded as the allocator's, with the call's stack.  Two loads
 * on the fast path; weak, for a C library without it. */
extern void *__curbrk __attribute__((weak));
MT_HIDDEN COLD void mt_note_brk(void);
#define WATCH_BRK()                                                                       \
	do {                                                                              \
		if (unlikely(mt_next_glibc > 0 && &__curbrk && __curbrk != mt_brk_known)) \
			mt_note_brk();                                                    \
	} while (0)

/* Starts recording an event: the thread is inside the shim.  Returns its
 * slot, NULL when the thread has none. */
INLINE struct mt_tslot *begin(void)
{
	t_busy = 1;
	if (unlikely(!*mt_channel_live))
		mt_check_process();
	struct mt_tslot *s = mt_t_slot;
	if (unlikely(!s))
		s = mt_new_slot();
	return s;
}

/* A realloc releases its old block and takes its new one inside one call,
 * before its record is written: it holds the realloc gate across the call,
 * and either the channel lock too (when events go out one by one, so that
 * no other record comes between), or its slot holds merges back to its
 * stamp (tbuf.c).  Returns whether it holds the lock. */
INLINE int realloc_begin(struct mt_tslot *s, uint64_t *ts)
{
	mt_gate_lock();
	int locked = !mt_tbuf_multi();
	if (locked)
		mt_channel_lock();
	*ts = mt_stamp();
	if (likely(s))
		s->hold = *ts;
	return locked;
}

/* FN < 0: only the free of OLD is recorded (sampled: the new block is not). */
INLINE void realloc_end(struct mt_tslot *s, int locked, int fn, void *old, void *p, size_t n,
			const uint64_t *pcs, int depth, uint64_t ts)
{
	int kind = fn < 0 ? MT_EV_FREE : MT_EV_REALLOC;
	void *was = fn < 0 ? NULL : old, *is = fn < 0 ? old : p;
	if (locked) {
		if (p) /* a failed realloc leaves the old block live: nothing to record */
			mt_tbuf_event_locked(kind, fn < 0 ? 0 : fn, was, is, n, pcs, depth, ts,
					     tid());
		mt_channel_unlock();
		mt_gate_unlock();
	} else {
		mt_gate_unlock();
		if (p)
			mt_tbuf_event(s, kind, fn < 0 ? 0 : fn, was, is, n, pcs, depth, ts, tid());
	}
	if (likely(s))
		__atomic_store_n(&s->hold, 0, __ATOMIC_RELEASE);
}
/* Leaving the shim's recording: busy off, then what a handler held back
 * meanwhile is written (a handler arriving in between finds the queue and
 * writes it first itself). */
INLINE void leave(void)
{
	t_busy = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(t_held_n))
		mt_flush_held();
}
/* Sampled recording (sample.c): 1 when an allocation of N bytes is not to
 * be recorded.  Recording every call, a load and a branch. */
INLINE int sample_skip(size_t n)
{
	if (likely(!mt_sample_mean))
		return 0;
	mt_t_left -= (int64_t)n;
	if (likely(mt_t_left > 0)) {
		if (unlikely(mt_t_touch))
			mt_sample_touch();
		return 1;
	}
	return mt_sample_draw();
}

/* Records an allocation made by the hook this is inlined into: the stack
 * starts at that hook's caller.  EARLY is a stamp read before the block
 * was obtained, good enough when events go out one by one (the lock
 * orders them; the counter's latency hides behind the allocator's work);
 * buffered events read theirs now, in order (tbuf.c). */
#define RECORD_ALLOC_AT(fn, p, n, early)                           \
	do {                                                       \
		if (likely(mt_enabled) && likely(!mt_t_in.any)) {  \
			if (!sample_skip(n))                       \
				RECORD_ALLOC_NOW(fn, p, n, early); \
		} else {                                           \
			mt_slow_alloc(fn, p, n);                   \
			NO_TAIL_CALL();                            \
		}                                                  \
	} while (0)
/* The fast path's record itself (sampled, when sampling). */
#define RECORD_ALLOC_NOW(fn, p, n, early)                                   \
	do {                                                                \
		uint64_t pcs_[MT_MAX_FRAMES];                               \
		struct mt_tslot *s_ = begin();                              \
		uint64_t ts_ = mt_tbuf_multi() ? mt_stamp_raw(1) : (early); \
		int depth_ = mt_unwind(pcs_, MT_MAX_FRAMES, 0);             \
		put_alloc(s_, fn, p, n, pcs_, depth_, ts_);                 \
		if (unlikely(mt_sample_mean))                               \
			mt_sample_add(p);                                   \
		leave();                                                    \
	} while (0)
#define RECORD_ALLOC(fn, p, n) RECORD_ALLOC_AT(fn, p, n, mt_stamp_raw(0))

/* Records the realloc of live block OLD to N bytes by FN that the hook this
 * is expanded in makes as P = CALL (the stack starts at that hook's
 * caller).  Held across the call, and the stamp read inside it (tbuf.c):
 * the blocks it takes and gives back are ordered around it. */
#define RECORD_REALLOC(fn, old, n, p, call)                                             \
	do {                                                                            \
		uint64_t pcs_[MT_MAX_FRAMES];                                           \
		struct mt_tslot *s_ = begin();                                          \
		int new_ = 1;                                                           \
		if (unlikely(mt_sample_mean)) {                                         \
			new_ = !sample_skip(n);                                         \
			if (!mt_sample_take(old)) {                                     \
				/* the old block was not sampled */                     \
				leave();                                                \
				p = call;                                               \
				if (p && new_)                                          \
					RECORD_ALLOC_NOW(fn, p, n, mt_stamp_raw(0));    \
				break;                                                  \
			}                                                               \
		}                                                                       \
		int depth_ = mt_unwind(pcs_, MT_MAX_FRAMES, 0);                         \
		uint64_t ts_;                                                           \
		int locked_ = realloc_begin(s_, &ts_);                                  \
		p = call;                                                               \
		realloc_end(s_, locked_, new_ ? fn : -1, old, p, n, pcs_, depth_, ts_); \
		if (unlikely(mt_sample_mean) && (!p || new_))                           \
			mt_sample_add(p ? p : old); /* a failed one keeps it */         \
		leave();                                                                \
	} while (0)

/* Records a free before the block is released; returns 0 when the caller
 * must not release it (a signal handler's free, held back). */
INLINE int record_free(void *p)
{
	if (unlikely(!p))
		return 1;
	if (likely(mt_enabled) && likely(!mt_t_in.any)) {
		if (unlikely(mt_sample_mean) && likely(!mt_sample_maybe(p))) {
			if (unlikely(mt_t_touch))
				mt_sample_touch();
			return 1; /* not a sampled block */
		}
		struct mt_tslot *s = begin();
		if (unlikely(mt_sample_mean) && !mt_sample_take(p)) {
			leave();
			if (unlikely(mt_t_touch))
				mt_sample_touch();
			return 1;
		}
		uint64_t ts = mt_stamp_raw(mt_tbuf_multi());
		put_free(s, p, ts);
		/* a realloc under way may be about to take this block */
		mt_gate_wait(ts);
		leave();
		return 1;
	}
	int held = mt_slow_free(p);
	NO_TAIL_CALL();
	return !held;
}

#endif
