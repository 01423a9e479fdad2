/*
 * sample.c - sampled recording (MEMTRACE_SAMPLE=R): which allocations the
 * shim records, and which frees it must then record.
 *
 * Bytes are sampled as a Poisson process of mean R along each thread's
 * allocated bytes (as jemalloc's prof and tcmalloc sample): each thread
 * counts down the bytes left to its next sample point (mt_t_left), drawn
 * from an exponential distribution; an allocation that reaches it is
 * recorded and a new distance drawn.  An allocation of S bytes is then
 * recorded with probability 1 - exp(-S/R), and the reader weighs it by the
 * inverse (analyse/figures.c); the recording says R (MT_EXT_SAMPLED).
 *
 * A sampled block's free must be recorded, every other free not: the
 * addresses of the sampled blocks live in an open-addressing set under a
 * lock, with a filter in front of it (a bit per hash bucket, 8 KB, read
 * without the lock) so that the free of an unsampled block costs a hash
 * and a load.  The set is taken only by a thread marked busy
 * (fastpath.h: begin), whose signal handlers' calls are held back
 * rather than recorded: a handler never waits for a lock its own thread
 * holds.  Its memory comes from mmap (arena.c), never from the heap
 * measured.
 */
#include "shim.h"

#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

uint64_t mt_sample_mean;
__thread int64_t mt_t_left;
__thread uint8_t mt_t_touch;
uint64_t mt_sample_bits[MT_SAMPLE_FILTER / 64];
/* How many sampled blocks each bucket holds (under the lock): its bit is
 * set while this is not 0. */
static uint16_t bucket_count[MT_SAMPLE_FILTER];

static __thread uint64_t t_rng; /* 0: the thread has not drawn yet */
static uint64_t seed;

/* The set: addresses, complemented (key()), 0 empty, 1 a removed entry.
 * Complemented, so that the set holds no pointer to a block: the leak
 * scan reads the process's memory, this table's too, and the blocks it
 * names would all seem reachable. */
enum { EMPTY = 0, GONE = 1, FIRST_CAP = 4096 };
static uint64_t *set;
static size_t cap, used, gone; /* used counts GONE entries too */
static int lock;

static void set_lock(void)
{
	for (unsigned spins = 0; __atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE); spins++)
		if (spins > 64)
			sched_yield();
}

static void set_unlock(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

void mt_sample_init(uint64_t mean, uint64_t seed_)
{
	mt_sample_mean = mean;
	seed = seed_;
}

/* xorshift64*: the thread's own generator, seeded apart per thread. */
static uint64_t next_random(void)
{
	if (!t_rng) {
		/* with a seed, the threads in the order they first allocate:
		 * a single-threaded program's samples are the same every run */
		static uint64_t threads;
		uint64_t nth = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
		uint64_t s = seed ? seed + nth * 0x9e3779b97f4a7c15ull :
				    (uint64_t)mt_now() ^ (uint64_t)(uintptr_t)&t_rng ^
					     ((uint64_t)syscall(SYS_gettid) << 32);
		t_rng = mt_sample_hash(s ^ (s >> 31)) | 1;
	}
	t_rng ^= t_rng >> 12;
	t_rng ^= t_rng << 25;
	t_rng ^= t_rng >> 27;
	return t_rng * 0x2545f4914f6cdd1dull;
}

/* The natural logarithm of X in (0, 1], without libm: a library the shim
 * needed would be loaded into every traced program (gt-zlibuser).  X is
 * 2^E * M with M in [1, 2); ln M = 2 atanh((M - 1) / (M + 1)), whose series
 * in S = (M - 1) / (M + 1) <= 1/3 is within 1e-10 after ten terms. */
static double ln(double x)
{
	union {
		double d;
		uint64_t u;
	} v = { .d = x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	v.u = (v.u & ~(0x7ffull << 52)) | (1023ull << 52);
	double s = (v.d - 1) / (v.d + 1), s2 = s * s, term = s, sum = 0;
	for (int k = 1; k < 20; k += 2) {
		sum += term / k;
		term *= s2;
	}
	return e * 0.69314718055994530942 + 2 * sum;
}

/* Bytes to the next sample point: exponential, of mean R. */
static int64_t draw(void)
{
	/* 1 - U with U in [0, 1): (0, 1] */
	double u = 1.0 - (double)(next_random() >> 11) * 0x1p-53;
	double d = -ln(u) * (double)mt_sample_mean;
	return d >= 0x1p62 ? (int64_t)1 << 62 : (int64_t)d + 1;
}

int mt_sample_draw(void)
{
	if (!t_rng) {
		/* the thread's first allocation: it starts a fresh distance */
		mt_t_left += draw();
		if (mt_t_left > 0)
			return 1;
	}
	mt_t_left = draw();
	return 0;
}

static uint64_t key(const void *p)
{
	return ~(uint64_t)(uintptr_t)p;
}

static size_t slot_of(uint64_t a, size_t mask)
{
	return (size_t)(mt_sample_hash(a) >> 20) & mask;
}

static void put(uint64_t *t, size_t mask, uint64_t a)
{
	size_t i = slot_of(a, mask);
	while (t[i] > GONE)
		i = (i + 1) & mask;
	t[i] = a;
}

/* Room for one more: a table twice the live entries (GONE ones dropped),
 * kept at most half full. */
static int make_room(void)
{
	if (set && (used + 1) * 2 <= cap)
		return 0;
	size_t live = used - gone, ncap = cap ? cap : FIRST_CAP;
	while ((live + 1) * 4 > ncap)
		ncap *= 2;
	uint64_t *t = mt_map(ncap * sizeof *t);
	if (!t)
		return -1;
	for (size_t i = 0; i < cap; i++)
		if (set[i] > GONE)
			put(t, ncap - 1, set[i]);
	if (set)
		mt_sys_munmap(set, cap * sizeof *set);
	set = t;
	cap = ncap;
	used = live;
	gone = 0;
	return 0;
}

/* The entry of A, or NULL. */
static uint64_t *find(uint64_t a)
{
	if (!set)
		return NULL;
	size_t mask = cap - 1;
	for (size_t i = slot_of(a, mask);; i = (i + 1) & mask) {
		if (set[i] == a)
			return &set[i];
		if (set[i] == EMPTY)
			return NULL;
	}
}

void mt_sample_add(void *p)
{
	uint64_t a = key(p);
	mt_t_touch = 1;
	if (a <= GONE)
		return;
	set_lock();
	/* already there: a free that bypassed the hooks left it (libc's own) */
	if (!find(a) && !make_room()) {
		put(set, cap - 1, a);
		used++;
		unsigned b = mt_sample_bucket((uintptr_t)p);
		if (bucket_count[b]++ == 0)
			__atomic_fetch_or(&mt_sample_bits[b / 64], 1ull << (b % 64),
					  __ATOMIC_RELEASE);
	}
	set_unlock();
}

int mt_sample_take(void *p)
{
	uint64_t a = key(p);
	if (!mt_sample_maybe(p))
		return 0;
	set_lock();
	uint64_t *e = find(a);
	if (e) {
		*e = GONE;
		gone++;
		unsigned b = mt_sample_bucket((uintptr_t)p);
		if (--bucket_count[b] == 0)
			__atomic_fetch_and(&mt_sample_bits[b / 64], ~(1ull << (b % 64)),
					   __ATOMIC_RELAXED);
	}
	set_unlock();
	return e != NULL;
}

void mt_sample_before_fork(void)
{
	if (mt_sample_mean)
		set_lock();
}

void mt_sample_after_fork(int child)
{
	if (!mt_sample_mean)
		return;
	set_unlock();
	if (child && t_rng) /* not the parent's draws again */
		t_rng = mt_sample_hash(t_rng ^ (uint64_t)getpid()) | 1;
}
