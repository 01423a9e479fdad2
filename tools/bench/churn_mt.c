/*
 * churn_mt.c - the threaded churn of tools/bench/bench-threads.sh: T threads
 * (first argument, default 4), each doing the work of churn.c with N
 * allocations (second argument, default 500,000): mixed sizes from 16 to
 * 4,015 bytes, each freed 64 allocations later, made three calls deep.
 * The threads start together (a barrier) and do the same work, so with
 * enough cores the run takes as long as one thread's share; any lock the
 * threads share shows as time beyond that.  Known figures: T * N
 * allocations, T * N frees, no leaks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 64
#define MAX_THREADS 256

static long per_thread;
static pthread_barrier_t start;

/* Each level is a frame of its own: the stack depth is part of the cost. */
__attribute__((noinline)) static void *touch_alloc(size_t n)
{
	char *p = malloc(n);

	if (p)
		memset(p, 1, n < 64 ? n : 64);
	return p;
}

__attribute__((noinline)) static void *middle(size_t n)
{
	return touch_alloc(n);
}

__attribute__((noinline)) static void *outer(size_t n)
{
	return middle(n);
}

static void *worker(void *arg)
{
	void *ring[RING] = { 0 };
	long seed = (long)(size_t)arg;

	pthread_barrier_wait(&start);
	for (long i = 0; i < per_thread; i++) {
		void **slot = &ring[i % RING];

		free(*slot);
		*slot = outer(16 + (size_t)((i + seed) * 7919 % 4000));
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = argc > 1 ? atol(argv[1]) : 4;
	pthread_t t[MAX_THREADS];

	per_thread = argc > 2 ? atol(argv[2]) : 500000;
	if (threads < 1 || threads > MAX_THREADS || per_thread < 0) {
		fprintf(stderr, "usage: churn_mt [THREADS (1-%d)] [ALLOCATIONS PER THREAD]\n",
			MAX_THREADS);
		return 2;
	}
	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (long i = 1; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(size_t)i) != 0) {
			perror("pthread_create");
			return 1;
		}
	worker(NULL);
	for (long i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("done %ld x %ld\n", threads, per_thread);
	return 0;
}
