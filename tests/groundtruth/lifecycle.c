/*
 * lifecycle.c - allocations and frees outside main: in a constructor, in a
 * destructor, in an atexit handler and in a thread-specific-data destructor.
 * A profiler that starts late or stops early reports blocks that were in
 * fact freed as leaks (or misses blocks).
 *
 *   gt_ctor (constructor, before main): ctor_leak: malloc(1234), leaked;
 *                                       ctor_kept: malloc(2345)
 *   main: atexit(gt_atexit); main_alloc: malloc(3456);
 *         a thread: tls_alloc: malloc(4567) stored with pthread_setspecific
 *         under a key whose destructor frees it when the thread ends
 *   after main returns: gt_atexit frees the 3456 block, the destructor
 *         gt_dtor frees the 2345 block.
 *
 * Own figures: 4 allocations (1234+2345+3456+4567 = 11602 bytes), 3 frees,
 * 1 leaked (1234 bytes), 1 temporary: the thread's block, whose free
 * by the key's destructor is the thread's next allocator event (the 2345
 * and 3456 blocks are freed after other events of the main thread).  pthread_create allocates in the C library (the
 * thread's TLS vector): the test adds those sites to the totals.
 * atexit and pthread_key_create use static storage for the first entries.
 */
#include "gt.h"

#include <pthread.h>

static void *leak, *kept, *c;
static pthread_key_t key;

NOINLINE void ctor_leak(void)
{
	leak = malloc(1234); /* @site:ctor_leak */
	gt_keep(leak);
}

NOINLINE void ctor_kept(void)
{
	kept = malloc(2345); /* @site:ctor_kept */
	gt_keep(kept);
}

NOINLINE void main_alloc(void)
{
	c = malloc(3456); /* @site:main_alloc */
	gt_keep(c);
}

NOINLINE void *tls_alloc(void)
{
	void *p = malloc(4567); /* @site:tls_alloc */
	gt_keep(p);
	return p;
}

__attribute__((constructor)) NOINLINE void gt_ctor(void)
{
	ctor_leak(); /* @call:ctor_leak */
	ctor_kept(); /* @call:ctor_kept */
}

__attribute__((destructor)) void gt_dtor(void)
{
	free(kept);
}

static void gt_atexit(void)
{
	free(c);
}

static void tls_free(void *p)
{
	free(p);
}

static void *thread_main(void *arg)
{
	GT_REQUIRE(pthread_setspecific(key, tls_alloc()) == 0); /* @call:tls_alloc */
	return arg;
}

int main(void)
{
	GT_REQUIRE(atexit(gt_atexit) == 0);
	GT_REQUIRE(pthread_key_create(&key, tls_free) == 0);
	main_alloc(); /* @call:main_alloc */
	pthread_t th;
	GT_REQUIRE(pthread_create(&th, NULL, thread_main, NULL) == 0);
	GT_REQUIRE(pthread_join(th, NULL) == 0);
	return 0;
}
