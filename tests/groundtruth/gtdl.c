/*
 * gtdl.c - libgt-dl.so, the library that dlopen.c loads at run time.
 *
 *   gtdl_leak():  3 x malloc(777), leaked             (2331 bytes)
 *   gtdl_temp():  malloc(888) then free: temporary
 */
#include "gt.h"

static void *kept[3];

NOINLINE void gtdl_leak(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		kept[i] = malloc(777); /* @site:gtdl_leak */
		gt_keep(kept[i]);
	}
}

NOINLINE void gtdl_temp(void)
{
	void *p = malloc(888); /* @site:gtdl_temp */
	gt_keep(p);
	free(p);
}
