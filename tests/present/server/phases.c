/*
 * phases.c - a program whose recording grows in two steps, for the server's
 * test of a recording still being written (test_growing.py).
 *
 *   phases GOFILE
 *
 * Phase one: 100 blocks of 1,000 bytes from phase_one, the odd ones freed:
 * 100 allocations, 50 frees, 50 blocks (50,000 bytes) live.  Then it waits,
 * allocating nothing, until GOFILE exists (the test has seen phase one in
 * the server by then).  Phase two: 300 blocks of 2,000 bytes from
 * phase_two, every one freed.  So at the end: 400 allocations, 350 frees,
 * 700,000 bytes allocated, 50 blocks of 50,000 bytes leaked.  No stdio
 * (gt.h): nothing else allocates.
 */
#include "gt.h"

static void *kept[100];

static NOINLINE void phase_one(void)
{
	for (int i = 0; i < GT_N(100); i++) {
		void *p = malloc(1000);
		gt_keep(p);
		if (i % 2)
			free(p);
		else
			kept[i] = p;
	}
}

static NOINLINE void phase_two(void)
{
	for (int i = 0; i < GT_N(300); i++) {
		void *p = malloc(2000);
		gt_keep(p);
		free(p);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	phase_one();
	/* at most 60 s: a test that went away does not leave it running */
	for (int i = 0; i < 3000 && access(argv[1], F_OK) != 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000000 }, NULL);
	phase_two();
	gt_keep(kept[0]);
	return 0;
}
