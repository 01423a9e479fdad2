/*
 * segv.c - dies of SIGSEGV after one allocation.
 *
 * before_crash: malloc(4321), kept; then a write through a null pointer.
 * `memtrace record` must exit with 128 + 11 = 139, and the recording must
 * hold the one block, leaked.  Core dumps are turned off first.
 */
#include "gt.h"

#include <sys/resource.h>

static void *kept;

NOINLINE void before_crash(void)
{
	kept = malloc(4321); /* @site:before_crash */
	gt_keep(kept);
}

int main(void)
{
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	before_crash();
	*(volatile int *)GT_HIDE((int *)NULL) = 1;
	return 0;
}
