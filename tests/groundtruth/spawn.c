/*
 * spawn.c - children made by vfork + exec and by posix_spawn, which run no
 * atfork handler (glibc makes both with clone(CLONE_VM | CLONE_VFORK)).
 *
 *   gt-spawn:          parent_alloc: 3 x malloc(1000), leaked; vfork, the
 *                      child execv's "gt-spawn vforked"; waits (status 4);
 *                      posix_spawn "gt-spawn spawned"; waits (status 6);
 *                      parent_after: malloc(2000), leaked; exit 0
 *   gt-spawn vforked:  vforked_alloc: 4 x malloc(3000), leaked; exit(4)
 *   gt-spawn spawned:  spawned_alloc: 6 x malloc(500), 2 freed (oldest
 *                      first: not temporary); exit(6)
 *
 * The parent: 4 allocations, 5000 bytes, no free, all leaked.  Without -f
 * it is the only entry; with -f the two children are entries of their own:
 * vforked 4 allocations (12000 bytes, leaked), spawned 6 (3000 bytes, 2
 * freed, 4 = 2000 bytes leaked), with their exit statuses.
 *
 * Each prints its pid (parent=, vforked=, spawned=).
 */
#include "gt.h"

#include <spawn.h>
#include <sys/wait.h>

extern char **environ;
static void *kept[8];

NOINLINE void parent_alloc(void)
{
	for (int i = 0; i < GT_N(3); i++) {
		kept[i] = malloc(1000); /* @site:parent_alloc */
		gt_keep(kept[i]);
	}
}

NOINLINE void parent_after(void)
{
	kept[3] = malloc(2000); /* @site:parent_after */
	gt_keep(kept[3]);
}

NOINLINE void vforked_alloc(void)
{
	for (int i = 0; i < GT_N(4); i++) {
		kept[i] = malloc(3000); /* @site:vforked_alloc */
		gt_keep(kept[i]);
	}
}

NOINLINE void spawned_alloc(void)
{
	for (int i = 0; i < GT_N(6); i++) {
		kept[i] = malloc(500); /* @site:spawned_alloc */
		gt_keep(kept[i]);
	}
	for (int i = 0; i < GT_N(2); i++)
		free(kept[i]);
}

static void wait_for(pid_t pid, int status)
{
	int st;
	GT_REQUIRE(waitpid(pid, &st, 0) == pid);
	GT_REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == status);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "vforked")) {
		gt_say("vforked=%d\n", (int)getpid());
		vforked_alloc();
		exit(4);
	}
	if (argc > 1 && !strcmp(argv[1], "spawned")) {
		gt_say("spawned=%d\n", (int)getpid());
		spawned_alloc();
		exit(6);
	}
	gt_say("parent=%d\n", (int)getpid());
	parent_alloc();
	char *vargs[] = { argv[0], "vforked", NULL };
	pid_t pid = vfork();
	GT_REQUIRE(pid >= 0);
	if (pid == 0) {
		execv("/proc/self/exe", vargs);
		_exit(99);
	}
	wait_for(pid, 4);
	char *sargs[] = { argv[0], "spawned", NULL };
	GT_REQUIRE(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, sargs, environ) == 0);
	wait_for(pid, 6);
	parent_after();
	return 0;
}
