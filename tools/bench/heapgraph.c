/*
 * heapgraph.c - a heap for the leak scan's benchmark (bench-scan.sh): MB
 * megabytes of blocks of 32 to 2,048 bytes whose words are one in PER
 * (default 4) a pointer to another block (one pointer in 64 into its
 * middle) and the rest small numbers; a global table holds one block in
 * eight, the others are reached through the graph or lost.
 *
 *   heapgraph MB [PER]         builds it and exits (the scan at record's exit)
 *   heapgraph MB PER hold      builds it, says "ready", waits to be attached
 *                              to and killed; with SIGUSR1 it builds it again
 *                              (blocks allocated while attached)
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void **table;
static size_t ntable;
static volatile sig_atomic_t again;
static uint64_t per = 4;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void on_usr1(int sig)
{
	(void)sig;
	again = 1;
}

static void build(size_t mb, uint64_t seed)
{
	size_t budget = mb << 20, n = 0, cap = budget / 512 + 16;
	void **v = malloc(cap * sizeof *v);
	size_t *sz = malloc(cap * sizeof *sz);
	uint64_t s = seed;
	while (budget > 2048 && n < cap) {
		size_t size = 32 + (rnd(&s) % 2017);
		v[n] = malloc(size);
		sz[n++] = size;
		budget -= size;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t *w = v[i];
		for (size_t k = 0; k < sz[i] / 8; k++) {
			uint64_t r = rnd(&s);
			if (r % per == 0 && i > 0) {
				size_t j = rnd(&s) % n;
				w[k] = (uint64_t)(uintptr_t)v[j] + (r % 64 == 0 ? 8 : 0);
			} else {
				w[k] = r % 100000;
			}
		}
	}
	table = realloc(table, (ntable + n / 8 + 1) * sizeof *table);
	for (size_t i = 0; i < n; i += 8)
		table[ntable++] = v[i];
	free(v);
	free(sz);
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 256;
	per = argc > 2 && atol(argv[2]) > 0 ? (uint64_t)atol(argv[2]) : 4;
	int hold = argc > 3 && !strcmp(argv[3], "hold");
	build(mb, 88172645463325252ull);
	if (!hold)
		return 0;
	signal(SIGUSR1, on_usr1);
	printf("ready\n");
	fflush(stdout);
	for (uint64_t seed = 2;; seed++) {
		pause();
		if (again) {
			again = 0;
			build(mb, seed * 0x9e3779b97f4a7c15ull);
			printf("built\n");
			fflush(stdout);
		}
	}
}
