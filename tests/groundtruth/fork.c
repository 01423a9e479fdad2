/*
 * fork.c - a parent and a forked child, each with its own allocations.
 *
 *   parent: parent_alloc: 3 x malloc(1111), leaked;      fork
 *   child:  child_alloc:  5 x malloc(2222), leaked
 *           child_temp:   malloc(999) then free: temporary
 *           exit(7)
 *   parent: waits for the child (requires status 7),
 *           parent_after: malloc(3333), leaked; exit 0
 *
 * The parent: 4 allocations, 6666 bytes, no free, all leaked.  The child's
 * own events: 6 allocations, 11110 + 999 = 12109 bytes, 1 free (temporary),
 * 5 leaked = 11110 bytes.  The child inherits the parent's three blocks but
 * did not allocate them: they are the parent's, not the child's.
 *
 * Both print their pid on stdout (parent=PID, child=PID).
 */
#include "gt.h"

#include <sys/wait.h>

static void *kept[8];

NOINLINE void parent_alloc(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		kept[i] = malloc(1111); /* @site:parent_alloc */
		gt_keep(kept[i]);
	}
}

NOINLINE void child_alloc(void)
{
	for (int i = 0; i < GT_N(5); i++) {
		kept[3 + i] = malloc(2222); /* @site:child_alloc */
		gt_keep(kept[3 + i]);
	}
}

NOINLINE void child_temp(void)
{
	void *p = malloc(999); /* @site:child_temp */
	gt_keep(p);
	free(p);
}

NOINLINE void parent_after(void)
{
	kept[3] = malloc(3333); /* @site:parent_after */
	gt_keep(kept[3]);
}

int main(void)
{
	parent_alloc();
	gt_say("parent=%d\n", (int)getpid());
	pid_t pid = fork();
	GT_REQUIRE(pid >= 0);
	if (pid == 0) {
		gt_say("child=%d\n", (int)getpid());
		child_alloc();
		child_temp();
		exit(7);
	}
	int st;
	GT_REQUIRE(waitpid(pid, &st, 0) == pid);
	GT_REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	parent_after();
	return 0;
}
