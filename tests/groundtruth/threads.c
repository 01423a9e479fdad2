/*
 * threads.c - 4 threads allocating at once, half of each thread's blocks
 * freed by another thread.
 *
 * Thread t (0..3) allocates from its own functions, so each has sites of
 * its own; s_t = 104 + 32 t bytes (104, 136, 168, 200; sum S = 608):
 *
 *   phase 1: alloc_tT: N = 2000 blocks of s_t bytes.            barrier
 *   phase 2: N/2 times: free an even-numbered block of thread (t+1) % 4
 *            (a cross-thread free), then more_tT: malloc(s_t).   barrier
 *   phase 3: free its own N/2 phase-2 blocks.
 *
 * During phase 2 thread t+1 allocates while thread t returns blocks to
 * t+1's arena, so addresses freed by one thread are handed out again to
 * another: the order of the events in the recording must follow the order
 * in which the C library handed the addresses out.
 *
 * Per thread: alloc_tT 2000 allocations, 1000 frees (by another thread),
 * 1000 leaked (the odd-numbered ones); more_tT 1000 allocations, 1000 frees.
 * Own totals: 12000 allocations, 3000 * S = 1824000 bytes, 8000 frees,
 * 4000 leaked, 1000 * S = 608000 bytes.  No temporary: every free of phase
 * 2 follows the allocation of a different block (or nothing), and phase 3
 * starts by freeing the first block of phase 2, not the last.
 *
 * The peak is not fixed, as the threads race in phase 2, but it is bounded:
 * at the first barrier exactly the 8000 phase-1 blocks are live (2000 * S),
 * and never more than those plus all of phase 2 (3000 * S).
 *
 * pthread_create allocates in the C library (each thread's TLS vector): those
 * sites are the library's own, and the test adds them to what it expects.
 */
#include "gt.h"

#include <pthread.h>

#define NT 4
#define N 2000

static void *blocks[NT][N];
static void *mine[NT][N / 2];
static pthread_barrier_t barrier;

/* the marker of each function is on the line that defines it */
#define ALLOC_FN(name, size)                    \
	NOINLINE void *name(void)               \
	{                                       \
		void *p = malloc(size);         \
		gt_keep(p);                     \
		return p;                       \
	}

ALLOC_FN(alloc_t0, 104) /* @site:alloc_t0 */
ALLOC_FN(alloc_t1, 136) /* @site:alloc_t1 */
ALLOC_FN(alloc_t2, 168) /* @site:alloc_t2 */
ALLOC_FN(alloc_t3, 200) /* @site:alloc_t3 */
ALLOC_FN(more_t0, 104) /* @site:more_t0 */
ALLOC_FN(more_t1, 136) /* @site:more_t1 */
ALLOC_FN(more_t2, 168) /* @site:more_t2 */
ALLOC_FN(more_t3, 200) /* @site:more_t3 */

static void *(*const allocs[NT])(void) = {alloc_t0, alloc_t1, alloc_t2, alloc_t3};
static void *(*const mores[NT])(void) = {more_t0, more_t1, more_t2, more_t3};

static void *worker(void *arg)
{
	int t = (int)(long)arg, other = (t + 1) % NT;
	for (int i = 0; i < GT_N(N); i++)
		blocks[t][i] = allocs[t](); /* @call:alloc */
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < GT_N(N / 2); i++) {
		free(blocks[other][2 * i]);
		mine[t][i] = mores[t](); /* @call:more */
	}
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < GT_N(N / 2); i++)
		free(mine[t][i]);
	return NULL;
}

int main(void)
{
	pthread_t th[NT];
	GT_REQUIRE(pthread_barrier_init(&barrier, NULL, NT) == 0);
	for (long t = 0; t < NT; t++)
		GT_REQUIRE(pthread_create(&th[t], NULL, worker, (void *)t) == 0);
	for (int t = 0; t < NT; t++)
		GT_REQUIRE(pthread_join(th[t], NULL) == 0);
	return 0;
}
