/*
 * tbuf.c - per-thread event buffers, merged into the channel in time order.
 *
 * A single-threaded process writes each event straight into the channel
 * under its lock.  So do several threads on a machine of fewer than four
 * CPUs, where taking turns at the lock costs less than what follows
 * (MEMTRACE_THREAD_BUFFERS=1 or 0 forces the choice).  Otherwise, once
 * several threads record, each writes its events, raw (stamp, addresses,
 * size, return addresses), into a buffer of its own without any lock, and
 * whoever merges takes the channel lock once for hundreds of events: the
 * thread whose buffer fills, the flusher thread (channel.c) every 20 ms, a
 * thread that exits, the process at exit or exec.  A merge interns the
 * stacks and encodes the events of all buffers into the channel, oldest
 * stamp first, so the stream is one sequence as before and nothing
 * downstream changes.
 *
 * Why the stamp order is the true order for any address: an allocation is
 * stamped after the allocator handed the block out and a free before the
 * block goes back, and stamps are read with RDTSCP (or clock_gettime) on a
 * clock the kernel keeps in step across CPUs (stamp.c), RDTSCP waiting for
 * the instructions before it, the loads that brought the block included;
 * so when a block passes from one thread to another, through the allocator
 * or the program, the earlier event has the earlier stamp.  A realloc is the exception: it
 * releases its old block and takes its new one inside one call.  It holds
 * the realloc gate across the call and is stamped once it holds it, and a
 * free, once stamped, waits while the gate is held before it releases its
 * block: so a block the realloc takes was freed (and stamped) before it,
 * and one it releases is handed out (and stamped) after it.
 *
 * What may be merged: an event whose stamp is older than the moment T the
 * merge looked at the buffers (less SLACK, for the CPUs' counters to
 * differ).  Whatever happened to a block before such an event was in its
 * thread's buffer before the event was stamped (a thread records an
 * allocation before it returns the block, and a free before it releases
 * it), so it is in the merge too, with an older stamp.  An event stamped
 * before T but written to its buffer after the merge looked goes out with
 * the next merge, later in the stream than its stamp says; that is safe,
 * since nothing can happen to its block before it is written.  A realloc
 * is the exception again (it releases the old block before its record is
 * written): while one is under way its thread's slot holds merges back to
 * its stamp.
 */
#include "shim.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

#define MAX_SLOTS 4096
#define WORDS MT_TSLOT_WORDS
#define MASK (WORDS - 1)
/* In stamp units: up to a few ticks per ns (the counter) or 1 (ns). */
#define SLACK_NS 20000ull
/* A full buffer that cannot be merged because a realloc under way holds
 * the bound back (its thread stopped, or a handler that jumped out of the
 * shim) stops waiting after this long and merges anyway. */
#define STALL_NS 200000000ull

enum { KIND_PAD, KIND_ALLOC, KIND_FREE, KIND_REALLOC };
enum { SLOT_FREE, SLOT_LIVE, SLOT_DEAD };

static struct mt_tslot *slots[MAX_SLOTS]; /* [0, mt_tbuf_nslots) mapped; the lock held */
uint32_t mt_tbuf_nslots;
volatile int mt_tbuf_dirty;
volatile int mt_tbuf_nlive; /* LIVE slots: at most 1, and events go straight out */
volatile uintptr_t mt_realloc_gate;
__thread struct mt_tslot *mt_t_slot;
static __thread char t_exiting; /* past its slot's destructor */
static pthread_key_t key;
static int have_key;
static uint64_t slack;

static void slot_exit(void *arg);

int mt_tbuf_on;

void mt_tbuf_init(void)
{
	/* Auto: with fewer than four CPUs (the process may run on), the lock
	 * costs less than the buffers: threads take it in turns, each for a
	 * long run, while the buffers need ordered stamps (RDTSCP, 15-30 ns
	 * an event) and a merge that reads every event again (on two CPUs,
	 * 4 threads: a third more CPU time than the lock).  With more CPUs,
	 * threads waiting for each other's lock are what limits them. */
	cpu_set_t cpus;
	int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
	mt_tbuf_on = mt_cfg.thread_buffers >= 0 ? mt_cfg.thread_buffers : ncpu >= 4;
	have_key = pthread_key_create(&key, slot_exit) == 0;
	slack = mt_stamp_tsc ? (uint64_t)((double)SLACK_NS / mt_stamp_ns_per_tick()) : SLACK_NS;
}

/* ---- writing into the channel (the lock held) ----------------------- */

static void emit(uint32_t tid, int kind, int fn, uint64_t old, uint64_t p, uint64_t n,
		 const uint64_t *pcs, unsigned depth, uint64_t stamp)
{
	if (kind == KIND_FREE)
		mt_emit_free(tid, p, stamp);
	else
		mt_emit_block(tid, kind == KIND_REALLOC, fn, old, p, n, pcs, depth, stamp);
}

/* ---- merging (the lock held) ----------------------------------------- */

static inline uint64_t hdr_words(uint64_t h)
{
	return h >> 32;
}

/* The first record of S at or after its tail, PADs stepped over; NULL if
 * none before HEAD. */
static uint64_t *peek(struct mt_tslot *s, uint64_t head)
{
	while (s->tail < head) {
		uint64_t *r = s->buf + (s->tail & MASK);
		if ((r[1] & 0xff) != KIND_PAD)
			return r;
		s->tail += hdr_words(r[1]);
	}
	return NULL;
}

/* Emits every buffered event stamped at most BOUND that no thread can
 * still precede (all of them with FORCE), oldest first.  SELF, if not NULL,
 * is the caller's slot, with an event stamped BOUND under way.  Returns how
 * many buffers still hold an event stamped at most BOUND (held back by a
 * realloc under way, or younger than SLACK). */
static unsigned merge(uint64_t bound, int force, const struct mt_tslot *self)
{
	struct mt_tslot *act[64];
	uint64_t heads[64];
	unsigned left = 0;
	uint64_t now = mt_stamp();
	mt_stamp_recalibrate(now);
	mt_stamp_fence(); /* the buffers are read after the stamp */
	uint64_t w = force ? UINT64_MAX : now > slack ? now - slack : 0;
	if (bound < w)
		w = bound;
	for (uint32_t i = 0; i < mt_tbuf_nslots && !force; i++) {
		struct mt_tslot *s = slots[i];
		uint64_t hold = __atomic_load_n(&s->hold, __ATOMIC_ACQUIRE);
		if (s != self && hold && hold < w)
			w = hold;
	}
	for (uint32_t base = 0; base < mt_tbuf_nslots; base += 64) {
		unsigned na = 0;
		for (uint32_t i = base; i < mt_tbuf_nslots && i < base + 64; i++) {
			struct mt_tslot *s = slots[i];
			uint64_t h = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
			if (s->state != SLOT_FREE && s->tail != h) {
				act[na] = s;
				heads[na++] = h;
			}
		}
		for (;;) {
			/* the oldest first record; stamps are per-thread monotonic */
			int best = -1;
			uint64_t bt = w;
			uint64_t *br = NULL;
			for (unsigned k = 0; k < na; k++) {
				uint64_t *r = peek(act[k], heads[k]);
				if (r && r[0] <= bt) {
					bt = r[0];
					best = (int)k;
					br = r;
				}
			}
			if (best < 0)
				break;
			struct mt_tslot *s = act[best];
			uint64_t h = br[1];
			unsigned kind = h & 0xff, fn = (h >> 8) & 0xff, depth = (h >> 16) & 0xffff;
			if (kind == KIND_FREE)
				emit(s->tid, kind, 0, 0, br[2], 0, NULL, 0, br[0]);
			else if (kind == KIND_ALLOC)
				emit(s->tid, kind, (int)fn, 0, br[2], br[3], br + 4, depth, br[0]);
			else
				emit(s->tid, kind, (int)fn, br[4], br[2], br[3], br + 5, depth,
				     br[0]);
			s->tail += hdr_words(h);
		}
		for (unsigned k = 0; k < na; k++) {
			struct mt_tslot *s = act[k];
			uint64_t *r = peek(s, heads[k]);
			__atomic_store_n(&s->tail, s->tail, __ATOMIC_RELEASE);
			left += r && r[0] <= bound;
		}
	}
	/* the slots of threads that exited, once empty, are free for others */
	int dirty = 0;
	for (uint32_t i = 0; i < mt_tbuf_nslots; i++) {
		struct mt_tslot *s = slots[i];
		int empty = s->tail == __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
		if (s->state == SLOT_DEAD && empty)
			s->state = SLOT_FREE;
		dirty |= !empty;
	}
	/* (a live thread that writes into its empty buffer meanwhile sets it
	 * again; until it exits, events do not go out one by one anyway) */
	mt_tbuf_dirty = dirty;
	return left;
}

/* ---- the thread's slot ----------------------------------------------- */

struct mt_tslot *mt_tbuf_slot_new(uint32_t tid)
{
	if (t_exiting)
		return NULL; /* its events go out one by one */
	mt_channel_lock();
	struct mt_tslot *s = NULL;
	for (uint32_t i = 0; i < mt_tbuf_nslots && !s; i++)
		if (slots[i]->state == SLOT_FREE)
			s = slots[i];
	if (!s && mt_tbuf_nslots < MAX_SLOTS) {
		uint64_t *buf = mt_map(WORDS * sizeof(uint64_t) + sizeof *s);
		if (buf) {
			s = (struct mt_tslot *)(buf + WORDS);
			s->buf = buf;
			slots[mt_tbuf_nslots++] = s;
		}
	}
	if (s) {
		s->tid = tid;
		s->hold = 0;
		__atomic_store_n(&s->state, SLOT_LIVE, __ATOMIC_RELEASE);
		mt_tbuf_nlive++;
	}
	mt_channel_unlock();
	if (s && have_key)
		pthread_setspecific(key, s);
	return mt_t_slot = s;
}

/* The thread exits: what it buffered is merged now or later, and its slot
 * freed once empty.  Calls it makes after this (other destructors, the C
 * library's own) go out one by one. */
static void slot_exit(void *arg)
{
	struct mt_tslot *s = arg;
	if (!s || mt_channel_held_here())
		return;
	mt_channel_lock();
	s->state = SLOT_DEAD;
	mt_tbuf_nlive--;
	merge(UINT64_MAX, 0, NULL);
	mt_channel_unlock();
	mt_t_slot = NULL;
	t_exiting = 1;
}

/* ---- recording an event ---------------------------------------------- */

/* Event out of S's buffer: S's events and everyone's older ones are merged
 * first, or, if some are held back, the event joins S's buffer. */
static int put_direct(struct mt_tslot *s, int kind, int fn, uint64_t old, uint64_t p, uint64_t n,
		      const uint64_t *pcs, unsigned depth, uint64_t stamp, uint32_t tid)
{
	mt_channel_lock();
	if (unlikely(mt_tbuf_on && mt_tbuf_dirty)) {
		/* a thread without a slot waits for the older events to be
		 * merged (a few us: SLACK), bounded */
		uint64_t start = 0;
		for (unsigned i = 0; merge(stamp, 0, s); i++) {
			if (s) {
				mt_channel_unlock();
				return 0;
			}
			if (!start)
				start = mt_now();
			if (mt_now() - start > STALL_NS)
				break;
			mt_channel_unlock();
			if (i < 64)
				mt_cpu_relax();
			else
				sched_yield();
			mt_channel_lock();
		}
	}
	emit(tid, kind, fn, old, p, n, pcs, depth, stamp);
	mt_channel_unlock();
	return 1;
}

void mt_tbuf_event_locked(int kind, int fn, void *old, void *p, size_t n, const uint64_t *pcs,
			  int depth, uint64_t stamp, uint32_t tid)
{
	if (unlikely(mt_tbuf_on && mt_tbuf_dirty))
		merge(stamp, 0, mt_t_slot);
	emit(tid, kind, fn, (uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)p, n, pcs,
	     depth < 0 ? 0 : (unsigned)depth, stamp);
}

/* Makes room for WORDS more in S's buffer, merging (and waiting for a
 * realloc under way, bounded) while there is none.  Returns where to write. */
static uint64_t *room(struct mt_tslot *s, uint64_t words, uint64_t stamp)
{
	uint64_t start = 0;
	for (unsigned i = 0;; i++) {
		uint64_t pos = s->head & MASK, to_end = WORDS - pos;
		uint64_t need = words + (to_end < words ? to_end : 0);
		if (WORDS - (s->head - __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE)) >= need) {
			if (to_end < words) {
				uint64_t *r = s->buf + pos;
				r[0] = 0;
				r[1] = KIND_PAD | to_end << 32;
				__atomic_store_n(&s->head, s->head + to_end, __ATOMIC_RELEASE);
				pos = 0;
			}
			return s->buf + pos;
		}
		if (!start)
			start = mt_now();
		int stalled = mt_now() - start > STALL_NS;
		mt_channel_lock();
		merge(stamp, stalled, s);
		mt_channel_unlock();
		if (i > 0) {
			if (i < 64)
				mt_cpu_relax();
			else
				sched_yield();
		}
	}
}

void mt_tbuf_event(struct mt_tslot *s, int kind, int fn, void *old, void *p, size_t n,
		   const uint64_t *pcs, int depth, uint64_t stamp, uint32_t tid)
{
	if (depth < 0)
		depth = 0;
	if (!s || !mt_tbuf_multi()) {
		if (put_direct(s, kind, fn, (uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)p, n,
			       pcs, (unsigned)depth, stamp, tid))
			return;
	}
	uint64_t words = kind == KIND_FREE  ? 3 :
			 kind == KIND_ALLOC ? 4 + (uint64_t)depth :
					      5 + (uint64_t)depth;
	words = (words + 1) & ~1ull; /* even: a PAD always fits the end */
	if (s->head == __atomic_load_n(&s->tail, __ATOMIC_RELAXED))
		mt_tbuf_dirty = 1; /* a buffer no longer empty */
	uint64_t *r = room(s, words, stamp);
	r[0] = stamp;
	r[1] = (uint64_t)kind | (uint64_t)fn << 8 | (uint64_t)depth << 16 | words << 32;
	r[2] = (uint64_t)(uintptr_t)p;
	if (kind != KIND_FREE) {
		r[3] = n;
		uint64_t *f = r + 4;
		if (kind == KIND_REALLOC)
			*f++ = (uint64_t)(uintptr_t)old;
		memcpy(f, pcs, (size_t)depth * sizeof *pcs);
	}
	uint64_t head = s->head + words;
	__atomic_store_n(&s->head, head, __ATOMIC_RELEASE);
	/* Half full: merge if nobody else is at it; three quarters: wait for
	 * the lock. */
	uint64_t used = head - __atomic_load_n(&s->tail, __ATOMIC_RELAXED);
	if (unlikely(used >= WORDS / 2)) {
		if (used >= WORDS / 4 * 3)
			mt_channel_lock();
		else if (!mt_channel_trylock())
			return;
		merge(UINT64_MAX, 0, s);
		mt_channel_unlock();
	}
}

void mt_tbuf_sync_locked(uint64_t bound, int force)
{
	if (mt_tbuf_nslots)
		merge(bound, force, NULL);
}

void mt_tbuf_sync(int force)
{
	if (!mt_tbuf_nslots || mt_channel_held_here())
		return;
	mt_channel_lock();
	merge(UINT64_MAX, force, NULL);
	mt_channel_unlock();
}

int mt_tbuf_pending(void)
{
	for (uint32_t i = 0; i < __atomic_load_n(&mt_tbuf_nslots, __ATOMIC_ACQUIRE); i++) {
		struct mt_tslot *s = slots[i];
		if (s->state != SLOT_FREE && __atomic_load_n(&s->head, __ATOMIC_ACQUIRE) !=
						     __atomic_load_n(&s->tail, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

/* ---- the realloc gate -------------------------------------------------- */

static __thread char t_gate_token;

void mt_gate_lock(void)
{
	uintptr_t self = (uintptr_t)&t_gate_token;
	for (unsigned spins = 0;; spins++) {
		uintptr_t free_ = 0;
		if (!__atomic_load_n(&mt_realloc_gate, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&mt_realloc_gate, &free_, self, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			return;
		if (spins < 64)
			mt_cpu_relax();
		else
			sched_yield();
	}
}

void mt_gate_wait_slow(void)
{
	uintptr_t self = (uintptr_t)&t_gate_token;
	for (unsigned spins = 0;; spins++) {
		uintptr_t g = __atomic_load_n(&mt_realloc_gate, __ATOMIC_ACQUIRE);
		if (!g || g == self)
			return;
		if (spins < 64)
			mt_cpu_relax();
		else
			sched_yield();
	}
}

/* ---- fork --------------------------------------------------------------- */

void mt_tbuf_after_fork_child(void)
{
	/* One thread is left, and what any thread buffered is the parent's. */
	mt_realloc_gate = 0;
	mt_tbuf_nlive = 0;
	for (uint32_t i = 0; i < mt_tbuf_nslots; i++) {
		struct mt_tslot *s = slots[i];
		s->tail = s->head;
		s->hold = 0;
		s->state = SLOT_FREE;
	}
	if (mt_t_slot) {
		mt_t_slot->state = SLOT_LIVE;
		mt_tbuf_nlive = 1;
	}
}
