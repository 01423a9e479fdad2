/*
 * xthreads.c - blocks handed from thread to thread: allocated in one,
 * reallocated in the next two, freed (or kept) in the last.
 *
 * Four stages, each a thread (stage 0 is main), joined by queues of Q = 8
 * slots (atomics, no locks, no allocation):
 *
 *   stage 0 (main):     born:   p = malloc(100), writes the block's number
 *   stage 1 (thread 1): grow1:  p = realloc(p, 200)
 *   stage 2 (thread 2): grow2:  p = realloc(p, 4000)
 *   stage 3 (thread 3): retire: free(p), except every 10th block (number
 *                       i % 10 == 9), which it keeps: leaked
 *
 * N = 3000 blocks pass through.  With at most 3 x 8 blocks in the queues,
 * the addresses stage 3 frees are handed out again by the C library to
 * stages 0, 1 and 2 (blocks freed by one thread reused by another), and a
 * realloc in one thread takes and releases blocks other threads free and
 * allocate meanwhile: the recording must keep, for every address, the
 * order in which the C library handed it out and took it back, or frees
 * would be unmatched and blocks counted twice.  Each stage checks the
 * block's number, so the blocks really travel.
 *
 * A realloc counts as one allocation at its own site and one free of the
 * old block (at the old block's site).  Per site:
 *   born    N allocations, 100 N bytes, N frees (by grow1), none leaked
 *   grow1   N allocations, 200 N bytes, N frees (by grow2), none leaked
 *   grow2   N allocations, 4000 N bytes, N - N/10 frees, N/10 leaked
 *           (300 blocks, 1,200,000 bytes)
 * Totals: 3 N = 9000 allocations, 4300 N = 12,900,000 bytes, 3 N - N/10 =
 * 8700 frees, 300 leaked (1,200,000 bytes), no unmatched frees.
 *
 * Then, with the threads joined and the pipeline empty, main makes the
 * peak: summit: malloc(10,000,000), freed at once.  Live at that moment:
 * the 300 kept blocks and the summit, 11,200,000 bytes in 301 blocks (plus
 * what the C library keeps of its own from pthread_create, which the test
 * adds); never that much before (at most 24 queued blocks of 4000 bytes
 * and one per stage besides the kept ones).
 */
#include "gt.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define N 3000
#define Q 8

struct queue {
	void *slot[Q];
	_Atomic unsigned head, tail;
};

static struct queue q01, q12, q23;
static void *kept[N / 10];

static void push(struct queue *q, void *p)
{
	unsigned h = atomic_load_explicit(&q->head, memory_order_relaxed);
	while (h - atomic_load_explicit(&q->tail, memory_order_acquire) == Q)
		sched_yield();
	q->slot[h % Q] = p;
	atomic_store_explicit(&q->head, h + 1, memory_order_release);
}

static void *pop(struct queue *q)
{
	unsigned t = atomic_load_explicit(&q->tail, memory_order_relaxed);
	while (atomic_load_explicit(&q->head, memory_order_acquire) == t)
		sched_yield();
	void *p = q->slot[t % Q];
	atomic_store_explicit(&q->tail, t + 1, memory_order_release);
	return p;
}

NOINLINE void *born(int i)
{
	int *p = malloc(100); /* @site:born */
	GT_REQUIRE(p);
	*p = i;
	gt_keep(p);
	return p;
}

NOINLINE void *grow1(void *p)
{
	p = realloc(p, 200); /* @site:grow1 */
	GT_REQUIRE(p);
	gt_keep(p);
	return p;
}

NOINLINE void *grow2(void *p)
{
	p = realloc(p, 4000); /* @site:grow2 */
	GT_REQUIRE(p);
	gt_keep(p);
	return p;
}

NOINLINE void retire(void *p)
{
	free(p);
}

NOINLINE void summit(void)
{
	void *p = malloc(10000000); /* @site:summit */
	GT_REQUIRE(p);
	gt_keep(p);
	free(p);
}

static void *stage1(void *arg)
{
	(void)arg;
	for (int i = 0; i < GT_N(N); i++) {
		int *p = grow1(pop(&q01)); /* @call:grow1 */
		GT_REQUIRE(*p == i);
		push(&q12, p);
	}
	return NULL;
}

static void *stage2(void *arg)
{
	(void)arg;
	for (int i = 0; i < GT_N(N); i++) {
		int *p = grow2(pop(&q12)); /* @call:grow2 */
		GT_REQUIRE(*p == i);
		push(&q23, p);
	}
	return NULL;
}

static void *stage3(void *arg)
{
	(void)arg;
	for (int i = 0; i < GT_N(N); i++) {
		int *p = pop(&q23);
		GT_REQUIRE(*p == i);
		if (i % 10 == 9)
			kept[i / 10] = p;
		else
			retire(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t th[3];
	void *(*stages[3])(void *) = { stage1, stage2, stage3 };
	for (int t = 0; t < 3; t++)
		GT_REQUIRE(pthread_create(&th[t], NULL, stages[t], NULL) == 0);
	for (int i = 0; i < GT_N(N); i++)
		push(&q01, born(i)); /* @call:born */
	for (int t = 0; t < 3; t++)
		GT_REQUIRE(pthread_join(th[t], NULL) == 0);
	summit(); /* @call:summit */
	gt_keep(kept);
	return 0;
}
