/*
 * gt_threads.c - ground truth for cross-thread frees: THREADS threads each
 * allocate PER_THREAD blocks (sizes 1..4096 by a fixed sequence); every
 * block is handed to the next thread's queue and freed there, except the
 * last LEAK of each thread, which stay.  Prints, at the end:
 *   threads T allocs A frees F leaked_bytes B
 * Usage: gt-bpf-threads [THREADS [PER_THREAD]]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEAK 7

struct queue {
	pthread_mutex_t lock;
	void **v;
	size_t n, cap;
	int done;
};

static int nthreads = 4;
static long per_thread = 20000;
static struct queue *queues;
static uint64_t leaked_bytes[64];

static void push(struct queue *q, void *p)
{
	pthread_mutex_lock(&q->lock);
	q->v[q->n++] = p; /* capacity set up front: no allocation here */
	pthread_mutex_unlock(&q->lock);
}

static size_t drain(struct queue *q)
{
	void *batch[256];
	size_t n;

	pthread_mutex_lock(&q->lock);
	n = q->n < 256 ? q->n : 256;
	q->n -= n;
	memcpy(batch, q->v + q->n, n * sizeof(void *));
	pthread_mutex_unlock(&q->lock);
	for (size_t i = 0; i < n; i++)
		free(batch[i]);
	return n;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	struct queue *next = &queues[(id + 1) % nthreads], *mine = &queues[id];
	uint32_t x = 2463534242u + (uint32_t)id;
	long freed = 0, expect_free = per_thread - LEAK;

	for (long i = 0; i < per_thread; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		size_t size = 1 + x % 4096;
		char *p = malloc(size);
		p[0] = 1;
		if (i >= per_thread - LEAK)
			leaked_bytes[id] += size;
		else
			push(next, p);
		if ((i & 63) == 0)
			freed += drain(mine);
	}
	while (freed < expect_free)
		freed += drain(mine);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		nthreads = atoi(argv[1]);
	if (argc > 2)
		per_thread = atol(argv[2]);
	if (nthreads < 1 || nthreads > 64)
		return 2;
	queues = calloc(nthreads, sizeof(*queues));
	for (int i = 0; i < nthreads; i++) {
		pthread_mutex_init(&queues[i].lock, NULL);
		queues[i].cap = per_thread;
		queues[i].v = malloc(per_thread * sizeof(void *));
	}
	pthread_t t[64];
	for (long i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	uint64_t leaked = 0;
	for (int i = 0; i < nthreads; i++)
		leaked += leaked_bytes[i];
	/* main's own: calloc(queues) + nthreads mallocs, none freed */
	char line[256];
	int n = snprintf(line, sizeof(line), "threads %d allocs %ld frees %ld leaked_bytes %llu\n", nthreads,
			 (long)nthreads * per_thread, (long)nthreads * (per_thread - LEAK),
			 (unsigned long long)leaked);
	return write(1, line, n) == n ? 0 : 1;
}
