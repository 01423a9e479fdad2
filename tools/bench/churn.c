/*
 * churn.c - an allocation-bound microbenchmark for tools/bench/bench.sh and
 * tools/bench/bench-export.sh: N (default 1,000,000) allocations of mixed sizes
 * (16 to 4,015 bytes), each freed 64 allocations later, made three calls
 * deep so that unwinding costs what it costs in real programs, plus one
 * leak of about 1 KB every 100,000 allocations.  Known figures: N + N/100,000
 * (rounded up) allocations, N frees, 10 leaks for the default N.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 64

static volatile unsigned long sink;

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

__attribute__((noinline)) static void leak(long k)
{
	sink += (unsigned long)malloc(1000 + (size_t)k);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	void *ring[RING] = { 0 };

	for (long i = 0; i < n; i++) {
		void **slot = &ring[i % RING];

		free(*slot);
		*slot = outer(16 + (size_t)(i * 7919 % 4000));
		if (i % 100000 == 0)
			leak(i / 100000);
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	printf("done %ld\n", n);
	return 0;
}
