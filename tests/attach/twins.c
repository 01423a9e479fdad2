/*
 * twins.c - two call sites that read the same for four frames, for top's
 * screen: both leak through node_alloc < pool_get < pool_fill < pool_grow,
 * one called from build_index, the other from load_config.
 *
 * Every 50 ms: build_index leaks 30 blocks of 64 bytes (1,920 bytes),
 * load_config 10 blocks of 256 bytes (2,560 bytes).  By outstanding bytes
 * load_config's site ranks first; by blocks and by allocation rate,
 * build_index's.  It prints "ready pid=N", then runs until killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

NOINLINE static void node_alloc(size_t n)
{
	sink = malloc(n);
	__asm__ volatile("" : : : "memory"); /* no tail call: a frame each */
}

NOINLINE static void pool_get(size_t n)
{
	node_alloc(n);
	__asm__ volatile("" : : : "memory");
}

NOINLINE static void pool_fill(size_t n, int k)
{
	for (int i = 0; i < k; i++)
		pool_get(n);
	__asm__ volatile("" : : : "memory");
}

NOINLINE static void pool_grow(size_t n, int k)
{
	pool_fill(n, k);
	__asm__ volatile("" : : : "memory");
}

NOINLINE static void build_index(void)
{
	pool_grow(64, 30);
	__asm__ volatile("" : : : "memory");
}

NOINLINE static void load_config(void)
{
	pool_grow(256, 10);
	__asm__ volatile("" : : : "memory");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	for (;;) {
		build_index();
		load_config();
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
}
