/*
 * scale.c - the workloads of tools/bench/bench-read.sh: many allocations,
 * many live blocks, many distinct call stacks, so that what reading a
 * recording costs can be set against the program's own run.  Its options
 * give the stacks, the sizes and the threads other shapes (bench-read.sh's
 * --shape), since a reader fast on one shape can be slow on another.
 *
 *   scale [-n ALLOCATIONS] [-l LIVE] [-s STACKS] [-d DEPTH] [-p TRUNK]
 *         [-R ROOTS] [-z MAXSIZE] [-x REALLOC%] [-t THREADS]
 *
 * Defaults: 10,000,000 allocations of 16 to 1,039 bytes, 500,000 of them
 * live at a time (each block is freed LIVE allocations after its own, just
 * before the one that takes its slot), made from 65,536 distinct call
 * stacks DEPTH (8) frames deep above main.  A stack is a number written in
 * base B (the least B with B^DEPTH >= STACKS, at most the number of
 * functions) whose digits pick, at each level, which of 16 functions calls
 * the next: distinct numbers are distinct stacks of return addresses.
 * Sizes and stacks come from a fixed pseudo-random sequence, so every run
 * makes the same calls.  Every block is freed before the end.  Known
 * figures: ALLOCATIONS allocations and frees (plus its own tables), a peak
 * of LIVE blocks (plus the tables), no leak.
 *
 * The other shapes:
 *   -p TRUNK    the varying levels hang below a trunk of TRUNK more frames,
 *               one of ROOTS (-R, default 4) trunks picked by the stack's
 *               number: deep stacks sharing long prefixes, many leaves
 *               under few roots
 *   -z MAXSIZE  sizes from 1 byte to MAXSIZE, as many of each power of two
 *               (sizes spread widely) rather than 16 to 1,039
 *   -x PCT      PCT in 100 of the allocations after the first LIVE
 *               reallocate the block in their slot (to their own size and
 *               from their own stack) rather than free it and allocate
 *   -t THREADS  THREADS threads, each making ALLOCATIONS / THREADS of them
 *               with LIVE / THREADS live, its own sequence, the same stacks
 * Built with -DSCALE_EXTERN and linked with the objects genfuncs.py writes,
 * the levels pick among that program's functions (scale_fns, thousands of
 * them in several shared objects: symbolizing weighs) rather than its 16,
 * each digit at random rather than by the stack's number.
 *
 * Build: gcc -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS 120 /* trunk and depth: under the recorders' 127 frames */
#define MAX_THREADS 1024

/* (The functions of genfuncs.py's objects take the same structure and call
 * its first member: keep it first.) */
struct call {
	void *(*step)(struct call *c);
	const uint16_t *digits; /* one per level */
	unsigned level, depth;
	size_t size;
	void *old; /* the block to reallocate, if any */
};

typedef void *(*level_fn)(struct call *c);

#ifdef SCALE_EXTERN
extern level_fn const scale_fns[];
extern const unsigned scale_nfns;
#else
static volatile unsigned long sink;
static level_fn const variants[16];
#define scale_fns variants
#define scale_nfns 16u
#endif

/* The next level, or the allocation itself below the last. */
static inline void *step(struct call *c)
{
	if (c->level == c->depth) {
		char *p = c->old ? realloc(c->old, c->size) : malloc(c->size);
		if (p)
			memset(p, 1, c->size < 32 ? c->size : 32);
		return p;
	}
	return scale_fns[c->digits[c->level++]](c);
}

#ifndef SCALE_EXTERN
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

static level_fn const variants[16] = { v0, v1, v2,  v3,  v4,  v5,  v6,  v7,
				       v8, v9, v10, v11, v12, v13, v14, v15 };
#endif

/* xorshift64*: the same sequence on every run, so every run records the same. */
static inline uint64_t rng(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dull;
}

static long n = 10000000, live = 500000, stacks = 65536, depth = 8, trunk = 0, roots = 4;
static long maxsize = 0, realloc_pct = 0, nthreads = 1;
static unsigned levels;
static uint16_t *digits;

/* 1 to MAXSIZE bytes, each power of two as likely; else 16 to 1,039. */
static size_t size_of(uint64_t r)
{
	if (!maxsize)
		return 16 + (size_t)(r >> 54);
	unsigned bits = 0;
	while (bits < 62 && (2ul << bits) <= (unsigned long)maxsize)
		bits++;
	unsigned b = (unsigned)((r >> 32) % (bits + 1));
	size_t s = ((size_t)1 << b) + (size_t)((r >> 8) & (((uint64_t)1 << b) - 1));
	return s > (size_t)maxsize ? (size_t)maxsize : s;
}

struct worker {
	pthread_t thread;
	long n, live;
	uint64_t seed;
	int failed;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t state = w->seed;
	long count = w->n, nlive = w->live;
	void **slots = calloc((size_t)nlive, sizeof *slots);
	if (!slots) {
		w->failed = 1;
		return NULL;
	}
	for (long i = 0; i < count; i++) {
		size_t slot;
		uint64_t r = rng(&state);
		void *old = NULL;
		if (i < nlive) {
			slot = (size_t)i;
		} else {
			slot = (size_t)(i % nlive);
			if (realloc_pct && (long)((r >> 16) % 100) < realloc_pct)
				old = slots[slot];
			else
				free(slots[slot]);
		}
		long s = (long)(r % (uint64_t)stacks);
		struct call c = { step, digits + (size_t)s * levels, 0, levels, size_of(r), old };
		void *p = step(&c);
		if (p || !old)
			slots[slot] = p;
	}
	for (long i = 0; i < nlive && i < count; i++)
		free(slots[i]);
	free(slots);
	return NULL;
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
	static const struct {
		const char *flag;
		long *v, min;
	} opts[] = { { "-n", &n, 1 },	    { "-l", &live, 1 },	   { "-s", &stacks, 1 },
		     { "-d", &depth, 1 },   { "-p", &trunk, 0 },   { "-R", &roots, 1 },
		     { "-z", &maxsize, 1 }, { "-x", &realloc_pct, 0 }, { "-t", &nthreads, 1 } };
	for (int i = 1; i < argc; i++) {
		size_t k = 0;
		while (k < sizeof opts / sizeof *opts && strcmp(argv[i], opts[k].flag))
			k++;
		if (k == sizeof opts / sizeof *opts || i + 1 == argc) {
			fprintf(stderr, "usage: scale [-n ALLOCATIONS] [-l LIVE] [-s STACKS] "
					"[-d DEPTH] [-p TRUNK] [-R ROOTS] [-z MAXSIZE] "
					"[-x REALLOC%%] [-t THREADS]\n");
			return 2;
		}
		*opts[k].v = arg(argv[++i], opts[k].flag, opts[k].min);
	}
	if (depth + trunk > MAX_LEVELS || realloc_pct > 100 || nthreads > MAX_THREADS ||
	    nthreads > live || nthreads > n) {
		fprintf(stderr, "scale: -d plus -p is at most %d, -x at most 100, -t at most %d "
				"and at most -l and -n\n",
			MAX_LEVELS, MAX_THREADS);
		return 2;
	}
	levels = (unsigned)(depth + trunk);
	/* the least base whose DEPTH digits number every stack */
	unsigned base = 1;
	for (;;) {
		base++;
		double room = 1;
		for (long k = 0; k < depth; k++)
			room *= base;
		if (room >= (double)stacks)
			break;
		if (base == scale_nfns) {
			fprintf(stderr, "scale: %ld stacks need more than %ld levels\n", stacks,
				depth);
			return 2;
		}
	}
	digits = malloc((size_t)stacks * levels * sizeof *digits);
	if (!digits) {
		fprintf(stderr, "scale: out of memory\n");
		return 1;
	}
	uint64_t pick = 0x2545f4914f6cdd1dull;
	for (long s = 0; s < stacks; s++) {
		uint16_t *d = digits + (size_t)s * levels;
		/* the trunk: root R's Kth frame is the same in all its stacks */
		for (long k = 0; k < trunk; k++)
			d[k] = (uint16_t)(((s % roots) * 7 + k) % scale_nfns);
		long v = s;
		for (long k = 0; k < depth; k++) {
#ifdef SCALE_EXTERN
			d[trunk + k] = (uint16_t)(rng(&pick) % scale_nfns);
#else
			d[trunk + k] = (uint16_t)(v % base);
#endif
			v /= base;
		}
	}
	(void)pick;
	struct worker w[MAX_THREADS];
	for (long t = 0; t < nthreads; t++) {
		/* thread 0 makes the sequence one thread always made */
		w[t] = (struct worker){ .n = n / nthreads + (t < n % nthreads),
					.live = live / nthreads + (t < live % nthreads),
					.seed = 0x9e3779b97f4a7c15ull + (uint64_t)t * 0x632be59bd9b4e019ull };
		if (nthreads == 1)
			work(&w[0]);
		else if (pthread_create(&w[t].thread, NULL, work, &w[t]))
			w[t].failed = 1;
	}
	int failed = 0;
	for (long t = 0; t < nthreads; t++) {
		if (nthreads > 1 && !w[t].failed)
			pthread_join(w[t].thread, NULL);
		failed |= w[t].failed;
	}
	free(digits);
	if (failed) {
		fprintf(stderr, "scale: out of memory or threads\n");
		return 1;
	}
	printf("scale: %ld allocations, %ld live, %ld stacks of %ld levels (base %u) below a "
	       "trunk of %ld, %ld threads\n",
	       n, live < n ? live : n, stacks, depth, base, trunk, nthreads);
	return 0;
}
