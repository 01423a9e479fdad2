/*
 * temporary.c - temporary allocations: those whose free is the very next
 * allocator event of the same thread.
 *
 *   solo:   5 x { p = malloc(10); free(p) }
 *           each free directly follows its malloc: 5 temporary.
 *   outer/inner:  3 x { p = malloc(20); q = malloc(30); free(q); free(p) }
 *           q's free follows q's malloc: inner has 3 temporary; p's free
 *           follows q's free: outer has none.
 *   first/second: 2 x { x = malloc(40); y = malloc(50); free(x); free(y) }
 *           x is freed after y was allocated, y after x was freed: none.
 *   thread: a second thread allocates p = malloc(60) (thr_block), then main
 *           allocates 70 bytes (main_between, never freed), then the thread
 *           frees p.  For the thread, the free is its next event: temporary,
 *           although another thread allocated in between.  Pipes order the
 *           three steps.
 *
 * Own totals: 17 allocations (5+3+3+2+2+1+1), 510 bytes
 * (50+60+90+80+100+60+70), 16 frees, 1 leaked (70 bytes), 9 temporary
 * (5 solo + 3 inner + 1 thr_block).  pthread_create itself allocates in the
 * C library (the thread's TLS vector): those sites are the library's, and the
 * test adds them to the totals it expects.
 */
#include "gt.h"

#include <pthread.h>

static int to_main[2], to_thread[2];

NOINLINE void solo(void)
{
	void *p = malloc(10); /* @site:solo */
	gt_keep(p);
	free(p);
}

NOINLINE void *outer(void)
{
	void *p = malloc(20); /* @site:outer */
	gt_keep(p);
	return p;
}

NOINLINE void *inner(void)
{
	void *p = malloc(30); /* @site:inner */
	gt_keep(p);
	return p;
}

NOINLINE void *first(void)
{
	void *p = malloc(40); /* @site:first */
	gt_keep(p);
	return p;
}

NOINLINE void *second(void)
{
	void *p = malloc(50); /* @site:second */
	gt_keep(p);
	return p;
}

NOINLINE void *thr_block(void)
{
	void *p = malloc(60); /* @site:thr_block */
	gt_keep(p);
	return p;
}

NOINLINE void *main_between(void)
{
	void *p = malloc(70); /* @site:main_between */
	gt_keep(p);
	return p;
}

static void *thread_main(void *arg)
{
	char c = 'x';
	void *p = thr_block();
	GT_REQUIRE(write(to_main[1], &c, 1) == 1);
	GT_REQUIRE(read(to_thread[0], &c, 1) == 1);
	free(p);
	return arg;
}

static void *keep_between;

int main(void)
{
	for (int i = 0; i < GT_N(5); i++)
		solo();
	for (int i = 0; i < GT_N(3); i++) {
		void *p = outer();
		void *q = inner();
		free(q);
		free(p);
	}
	for (int i = 0; i < GT_N(2); i++) {
		void *x = first();
		void *y = second();
		free(x);
		free(y);
	}

	GT_REQUIRE(pipe(to_main) == 0 && pipe(to_thread) == 0);
	pthread_t th;
	GT_REQUIRE(pthread_create(&th, NULL, thread_main, NULL) == 0);
	char c;
	GT_REQUIRE(read(to_main[0], &c, 1) == 1);
	keep_between = main_between();
	GT_REQUIRE(write(to_thread[1], &c, 1) == 1);
	GT_REQUIRE(pthread_join(th, NULL) == 0);
	gt_keep(keep_between);
	return 0;
}
