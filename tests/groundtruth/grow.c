/*
 * grow.c - a program whose leak grows with its argument K, for
 * `memtrace diff` of two runs.
 *
 *   function     per run                                  leaked
 *   leak_grows   K blocks of 1000 B, never freed          K x 1000 B
 *   steady       5 blocks of 300 B, each freed at once    0 (5 allocations, 5 frees)
 *   leak_shrinks 20 - K blocks of 50 B, never freed       (20 - K) x 50 B
 *   keep_one     1 block of 700 B, freed at the end       0
 *
 * So `memtrace diff` of the runs with K = 3 (base) and K = 10 (new) gives,
 * by construction: leak_grows +7 allocations, +7,000 B allocated and leaked;
 * steady 0 in every figure; leak_shrinks -7 allocations, -350 B; keep_one 0.
 * Totals: base 3 + 5 + 17 + 1 = 26 allocations, new 10 + 5 + 10 + 1 = 26;
 * leaked base 3,000 + 850 = 3,850 B, new 10,000 + 500 = 10,500 B.
 * The blocks of steady are freed by the next allocator call (a free right
 * after the malloc): 5 temporaries in each run.
 *
 * The leaked blocks are lost: main forgets the pointers to them before it
 * returns (a leak scan finds them definitely lost, as memcheck does).
 * With a second argument "held", it keeps them in its arrays instead:
 * still reachable, not lost (record's leak gate lets them pass).
 * With "clean", main frees every block before it returns:
 * nothing leaks (the clean case of record's leak gate).  Without it, an
 * argument out of 0..20 fails the program (exit 3: a program failing on
 * its own).
 */
#include "gt.h"

static void *grown[20], *shrunk[20];

NOINLINE void leak_grows(int k)
{
	for (int i = 0; i < GT_N(k); i++)
		gt_keep(grown[i] = malloc(1000)); /* @site:leak_grows */
}

NOINLINE void steady(void)
{
	for (int i = 0; i < GT_N(5); i++) {
		void *p = malloc(300); /* @site:steady */
		gt_keep(p);
		free(p);
	}
}

NOINLINE void leak_shrinks(int k)
{
	for (int i = 0; i < GT_N(20 - k); i++)
		gt_keep(shrunk[i] = malloc(50)); /* @site:leak_shrinks */
}

NOINLINE void *keep_one(void)
{
	return malloc(700); /* @site:keep_one */
}

int main(int argc, char **argv)
{
	GT_REQUIRE(argc == 2 || (argc == 3 && (!strcmp(argv[2], "clean") || !strcmp(argv[2], "held"))));
	int k = atoi(argv[1]);
	GT_REQUIRE(k >= 0 && k <= 20);
	void *kept = keep_one();
	gt_keep(kept);
	leak_grows(k);
	steady();
	leak_shrinks(k);
	free(kept);
	if (argc == 3 && !strcmp(argv[2], "clean"))
		for (int i = 0; i < 20; i++) {
			free(grown[i]); /* free(NULL) past k: no event */
			free(shrunk[i]);
		}
	if (argc == 2) {
		memset(grown, 0, sizeof grown);
		memset(shrunk, 0, sizeof shrunk);
		gt_keep(grown);
		gt_keep(shrunk);
		gt_wipe_stack();
	}
	return 0;
}
