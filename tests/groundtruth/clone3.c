/*
 * clone3.c - a child made by the raw clone3 system call (no glibc fork, so
 * no atfork handler runs in it), allocating while its parent does.
 *
 *   parent: parent_alloc: 30000 x malloc(100); the child is started first
 *           and allocates at the same time; then parent_free frees the
 *           first 10000 (oldest first: none is temporary); waits for the
 *           child (requires exit status 9); exit 0.
 *   child:  child_alloc: 20000 x malloc(200); child_free frees the first
 *           5000; _exit(9).
 *
 * The parent: 30000 allocations, 3,000,000 bytes, 10000 frees, 20000
 * leaked (2,000,000 bytes), peak 3,000,000 bytes in 30000 blocks.  The
 * child: 20000 allocations, 4,000,000 bytes, 5000 frees, 15000 leaked
 * (3,000,000 bytes), peak 4,000,000.  Without -f only the parent is
 * recorded, with exactly its figures; with -f the child is an entry of its
 * own with exactly its figures and exit status 9.
 *
 * Both print their pid (parent=PID, child=PID).
 */
#include "gt.h"

#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static void *kept[30000];

NOINLINE void parent_alloc(int n)
{
	for (int i = 0; i < n; i++) {
		kept[i] = malloc(100); /* @site:parent_alloc */
		gt_keep(kept[i]);
	}
}

NOINLINE void parent_free(int n)
{
	for (int i = 0; i < n; i++)
		free(kept[i]);
}

NOINLINE void child_alloc(int n)
{
	for (int i = 0; i < n; i++) {
		kept[i] = malloc(200); /* @site:child_alloc */
		gt_keep(kept[i]);
	}
}

NOINLINE void child_free(int n)
{
	for (int i = 0; i < n; i++)
		free(kept[i]);
}

int main(void)
{
	gt_say("parent=%d\n", (int)getpid());
	struct clone_args args;
	memset(&args, 0, sizeof args);
	args.exit_signal = SIGCHLD;
	long pid = syscall(SYS_clone3, &args, sizeof args);
	GT_REQUIRE(pid >= 0);
	if (pid == 0) {
		gt_say("child=%d\n", (int)getpid());
		child_alloc(GT_N(20000));
		child_free(GT_N(5000));
		_exit(9);
	}
	parent_alloc(GT_N(30000));
	parent_free(GT_N(10000));
	int st;
	GT_REQUIRE(waitpid((pid_t)pid, &st, 0) == pid);
	GT_REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 9);
	return 0;
}
