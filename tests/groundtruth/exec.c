/*
 * exec.c - allocations made before an exec stay in the recording.
 *
 *   gt-exec:         before_exec: 4 x malloc(4444); free the first one;
 *                    prints pid=PID; execs itself with the argument "after"
 *   gt-exec after:   after_exec: 2 x malloc(555), leaked; exit(5)
 *
 * The image before the exec: 4 allocations, 17776 bytes, 1 free, 3 blocks
 * (13332 bytes) still allocated when the image was replaced, which is the
 * end of its tracing: leaked.  No temporary (the free follows the 4th
 * allocation, of another block).  The exit status of the whole command is
 * the second image's, 5.
 */
#include "gt.h"

static void *kept[4];

NOINLINE void before_exec(void)
{
	for (int i = 0; i < GT_N(4); i++) {
		kept[i] = malloc(4444); /* @site:before_exec */
		gt_keep(kept[i]);
	}
}

NOINLINE void after_exec(void)
{
	for (int i = 0; i < GT_N(2); i++) {
		kept[i] = malloc(555); /* @site:after_exec */
		gt_keep(kept[i]);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "after")) {
		after_exec();
		exit(5);
	}
	before_exec();
	free(kept[0]);
	gt_say("pid=%d\n", (int)getpid());
	execl("/proc/self/exe", argv[0], "after", (char *)NULL);
	_exit(99);
}
