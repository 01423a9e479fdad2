/*
 * scale.c - the scale workload of tools/bench/bench-read.sh: many allocations,
 * many live blocks, many distinct call stacks, so that what reading a
 * recording costs can be set against the program's own run.
 *
 *   scale [-n ALLOCATIONS] [-l LIVE] [-s STACKS] [-d DEPTH]
 *
 * Defaults: 10,000,000 allocations of 16 to 1,039 bytes, 500,000 of them
 * live at a time (each block is freed LIVE allocations after its own, just
 * before the one that takes its slot), made from 65,536 distinct call stacks DEPTH (8) frames deep
 * above main.  A stack is a number written in base B (the least B with
 * B^DEPTH >= STACKS, at most 16) whose digits pick, at each level, which of
 * 16 functions calls the next: distinct numbers are distinct stacks of
 * return addresses.  Sizes and stacks come from a fixed pseudo-random
 * sequence, so every run makes the same calls.  Every block is freed before
 * the end.  Known figures: ALLOCATIONS allocations and frees (plus two of
 * its own tables), a peak of LIVE blocks (plus the tables), no leak.
 *
 * Build: gcc -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

struct call {
	const uint8_t *digits; /* one per level */
	unsigned level, depth;
	size_t size;
};

static volatile unsigned long sink;

typedef void *(*level_fn)(struct call *c);
static level_fn variants[16];

/* The next level, or the allocation itself below the last. */
static inline void *step(struct call *c)
{
	if (c->level == c->depth) {
		char *p = malloc(c->size);
		if (p)
			memset(p, 1, c->size < 32 ? c->size : 32);
		return p;
	}
	return variants[c->digits[c->level++]](c);
}

/* Sixteen functions alike but for their address; the store after the call
 * keeps each one's frame on the stack (no tail call). */
#define VARIANT(k)                                                  \
	__attribute__((noinline)) static void *v##k(struct call *c) \
	{                                                           \
		void *r = step(c);                                  \
		sink += k;                                          \
		return r;                                           \
	}
VARIANT(0)
VARIANT(1)
VARIANT(2)
VARIANT(3)
VARIANT(4)
VARIANT(5)
VARIANT(6)
VARIANT(7)
VARIANT(8)
VARIANT(9)
VARIANT(10)
VARIANT(11)
VARIANT(12)
VARIANT(13)
VARIANT(14)
VARIANT(15)

static level_fn variants[16] = { v0, v1, v2,  v3,  v4,	v5,  v6,  v7,
				 v8, v9, v10, v11, v12, v13, v14, v15 };

/* xorshift64*: the same sequence on every run, so every run records the same. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static inline uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static long arg(const char *s, const char *name, long min)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < min) {
		fprintf(stderr, "scale: %s wants a number >= %ld, not '%s'\n", name, min, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long n = 10000000, live = 500000, stacks = 65536, depth = 8;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "-n"))
			n = arg(argv[++i], "-n", 1);
		else if (i + 1 < argc && !strcmp(argv[i], "-l"))
			live = arg(argv[++i], "-l", 1);
		else if (i + 1 < argc && !strcmp(argv[i], "-s"))
			stacks = arg(argv[++i], "-s", 1);
		else if (i + 1 < argc && !strcmp(argv[i], "-d"))
			depth = arg(argv[++i], "-d", 1);
		else {
			fprintf(stderr, "usage: scale [-n ALLOCATIONS] [-l LIVE] [-s STACKS] "
					"[-d DEPTH]\n");
			return 2;
		}
	}
	if (depth > MAX_DEPTH) {
		fprintf(stderr, "scale: -d is at most %d\n", MAX_DEPTH);
		return 2;
	}
	/* the least base whose DEPTH digits number every stack */
	unsigned base = 1;
	for (;;) {
		base++;
		double room = 1;
		for (long k = 0; k < depth; k++)
			room *= base;
		if (room >= (double)stacks)
			break;
		if (base == 16) {
			fprintf(stderr, "scale: %ld stacks need more than %ld levels\n", stacks,
				depth);
			return 2;
		}
	}
	uint8_t *digits = malloc((size_t)stacks * (size_t)depth);
	void **slots = calloc((size_t)live, sizeof *slots);
	if (!digits || !slots) {
		fprintf(stderr, "scale: out of memory\n");
		return 1;
	}
	for (long s = 0; s < stacks; s++) {
		long v = s;
		for (long k = 0; k < depth; k++) {
			digits[s * depth + k] = (uint8_t)(v % base);
			v /= base;
		}
	}
	for (long i = 0; i < n; i++) {
		size_t slot;
		if (i < live) {
			slot = (size_t)i;
		} else {
			slot = (size_t)(i % live);
			free(slots[slot]);
		}
		uint64_t r = rng();
		long s = (long)(r % (uint64_t)stacks);
		struct call c = { digits + s * depth, 0, (unsigned)depth, 16 + (size_t)(r >> 54) };
		slots[slot] = step(&c);
	}
	for (long i = 0; i < live && i < n; i++)
		free(slots[i]);
	free(slots);
	free(digits);
	printf("scale: %ld allocations, %ld live, %ld stacks of %ld levels (base %u)\n", n,
	       live < n ? live : n, stacks, depth, base);
	return 0;
}
