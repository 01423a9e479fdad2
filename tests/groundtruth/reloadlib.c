/*
 * reloadlib.c - libgt-reload-a.so and libgt-reload-b.so (reload.c): the
 * same code, built twice with WHICH a or b, so that both have the same
 * size and layout.
 *
 *   reload_a(): 2 x malloc(1111), kept
 *   reload_b(): 3 x malloc(2222), kept
 * (sizes and counts whose instructions have the same length in both)
 */
#include "gt.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static void *kept[3];

NOINLINE void CAT(reload_, WHICH)(void)
{
	for (int i = 0; i < GT_N(COUNT); i++) {
		kept[i] = malloc(SIZE); /* @site:reload */
		gt_keep(kept[i]);
	}
}
