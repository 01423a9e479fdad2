/*
 * sites.c - a program with many call sites, for tools/bench/bench-gui.sh: a walk
 * down a binary tree of calls, DEPTH levels deep, whose every level calls
 * one of two functions, so that each of its 2^DEPTH leaves allocates from
 * a stack of its own (2^17 = 131,072 call sites by default).  The walk runs ROUNDS times (allocations: ROUNDS x 2^DEPTH);
 * every other block is freed at once, the rest when the round ends, so
 * that the heap rises and falls.  Built with -O0: each call stays a call
 * instruction of its own.
 *
 *   sites [DEPTH [ROUNDS]]
 */
#include <stdlib.h>

static void **kept;
static size_t nkept;

static void leaf(unsigned path)
{
	void *p = malloc(16 + (path & 1023));
	__asm__ volatile("" : : "r"(p) : "memory");
	if (path & 1)
		free(p);
	else
		kept[nkept++] = p;
}

/* Level K of the walk: two functions, a_K and b_K, so that each path down
 * the tree is a stack of its own and each node of a flamegraph a frame of
 * its own name; level K calls level K - 1's a or b by bit K - 1. */
typedef void level_fn(int depth, unsigned path, unsigned bits);
static level_fn *const *levels_a, *const *levels_b;

#define LEVEL(k)                                                                 \
	static void a_##k(int depth, unsigned path, unsigned bits)               \
	{                                                                        \
		if (depth == 0) {                                                \
			leaf(path);                                              \
			return;                                                  \
		}                                                                \
		(bits & 1 ? levels_b : levels_a)[depth - 1](depth - 1, path * 2 + (bits & 1), \
							    bits >> 1);  \
	}                                                                        \
	static void b_##k(int depth, unsigned path, unsigned bits)               \
	{                                                                        \
		if (depth == 0) {                                                \
			leaf(path);                                              \
			return;                                                  \
		}                                                                \
		(bits & 1 ? levels_b : levels_a)[depth - 1](depth - 1, path * 2 + (bits & 1), \
							    bits >> 1);  \
	}
LEVEL(0) LEVEL(1) LEVEL(2) LEVEL(3) LEVEL(4) LEVEL(5) LEVEL(6) LEVEL(7) LEVEL(8) LEVEL(9)
LEVEL(10) LEVEL(11) LEVEL(12) LEVEL(13) LEVEL(14) LEVEL(15) LEVEL(16) LEVEL(17) LEVEL(18)
LEVEL(19) LEVEL(20) LEVEL(21) LEVEL(22) LEVEL(23)
static level_fn *const all_a[] = { a_0,	 a_1,  a_2,  a_3,  a_4,	 a_5,  a_6,  a_7,
				   a_8,	 a_9,  a_10, a_11, a_12, a_13, a_14, a_15,
				   a_16, a_17, a_18, a_19, a_20, a_21, a_22, a_23 };
static level_fn *const all_b[] = { b_0,	 b_1,  b_2,  b_3,  b_4,	 b_5,  b_6,  b_7,
				   b_8,	 b_9,  b_10, b_11, b_12, b_13, b_14, b_15,
				   b_16, b_17, b_18, b_19, b_20, b_21, b_22, b_23 };

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 17;
	long rounds = argc > 2 ? atol(argv[2]) : 1;
	if (depth < 1 || depth > 24 || rounds < 1)
		return 2;
	kept = malloc(sizeof *kept << depth);
	levels_a = all_a;
	levels_b = all_b;
	for (long r = 0; r < rounds; r++) {
		nkept = 0;
		for (unsigned i = 0; i < 1u << depth; i++)
			(i & 1 ? all_b : all_a)[depth - 1](depth - 1, i & 1, i >> 1);
		for (size_t k = 0; k < nkept; k++)
			free(kept[k]);
	}
	free(kept);
	return 0;
}
