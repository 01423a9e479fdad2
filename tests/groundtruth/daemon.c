/*
 * daemon.c - how a daemon starts: it closes every descriptor, points its
 * standard streams at /dev/null, forks, and opens files, expecting the
 * lowest free numbers.  It must behave as it does without memtrace (the
 * shim's own descriptors must not be closed under it, nor take the
 * numbers it expects, nor be reused by it), and its allocations must be
 * recorded, the child's too with --follow-forks.
 *
 * Usage: gt-daemon DIR.  Its report goes to DIR/result.txt (stdout is
 * gone): "parent=PID child=PID status=S".  The parent opens
 * DIR/parent.txt and DIR/spare.txt (descriptors 3 and 4) before it forks;
 * the child appends "inherited" to both through the descriptors it
 * inherited, closes every descriptor but 0, 1 and 2 (the shim's
 * connection too: the recorder must go on reading the child's events), does
 * child_work(), and opens DIR/child.txt (descriptor 3).
 *
 *   before_close   10 x malloc(100), kept         (parent)
 *   after_close    20 x malloc(200), kept         (parent, after the
 *                                                   descriptors are closed)
 *   child_work     30 x malloc(300), the first 5 freed at once
 *                                                  (child: 30 allocations,
 *                                                   5 frees, 25 x 300 leaked)
 *
 * Usage: gt-daemon DIR nofile|nofile-hard: the descriptor limit.  The
 * parent sets RLIMIT_NOFILE's soft limit to 3 (nofile-hard: the hard limit
 * too), forks, and waits; the child does child_work() and checks that its
 * limit is still 3 and that open() fails with EMFILE (0, 1 and 2 are open),
 * as without memtrace, then exits 0.  It prints "parent=PID child=PID
 * status=S".  With --follow-forks the child must be traced (nofile: the
 * shim opens what it needs above the limit) or say on stderr that it is
 * not (nofile-hard: nothing can be opened).
 *
 * Exit status: 0 when every descriptor number was the expected one and the
 * child exited 0; otherwise 16 + the number of the first check that
 * failed (the parent) or 32 + it (the child).
 */
#include "gt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static void *kept[64];

NOINLINE void before_close(void)
{
	for (int i = 0; i < GT_N(10); i++) {
		kept[i] = malloc(100); /* @site:before_close */
		gt_keep(kept[i]);
	}
}

NOINLINE void after_close(void)
{
	for (int i = 0; i < GT_N(20); i++) {
		kept[10 + i] = malloc(200); /* @site:after_close */
		gt_keep(kept[10 + i]);
	}
}

NOINLINE void child_work(void)
{
	void *b[30];
	for (int i = 0; i < GT_N(30); i++) {
		b[i] = malloc(300); /* @site:child_work */
		gt_keep(b[i]);
	}
	for (int i = 0; i < GT_N(5); i++)
		free(b[i]);
}

/* Writes TEXT to DIR/NAME through a descriptor that must be number WANT. */
static int put(const char *dir, const char *name, int want, const char *text)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd != want)
		return 0;
	return write(fd, text, strlen(text)) == (ssize_t)strlen(text);
}

/* Whether descriptor FD is DIR/NAME; appends "inherited" to it. */
static int inherited(const char *dir, const char *name, int fd)
{
	char path[4096];
	struct stat a, b;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev && write(fd, "inherited\n", 10) == 10;
}

static int nofile(int hard)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 16 + 8;
	rl.rlim_cur = 3;
	if (hard)
		rl.rlim_max = 3;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 16 + 9;
	pid_t child = fork();
	if (child == 0) {
		child_work();
		if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur != 3)
			_exit(32 + 3);
		if (open("/dev/null", O_RDONLY) != -1 || errno != EMFILE)
			_exit(32 + 4);
		_exit(0);
	}
	int status = -1;
	if (child < 0 || waitpid(child, &status, 0) != child)
		return 16 + 5;
	int st = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	gt_say("parent=%d child=%d status=%d\n", (int)getpid(), (int)child, st);
	return st ? 16 + 7 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *dir = argv[1];
	if (argc > 2)
		return nofile(strcmp(argv[2], "nofile-hard") == 0);
	before_close();
	/* every descriptor: the classic loop, then whatever lies above it */
	for (int fd = 0; fd <= 1024; fd++)
		close(fd);
	syscall(SYS_close_range, 1025u, ~0u, 0u);
	if (open("/dev/null", O_RDWR) != 0)
		return 16 + 1;
	if (dup2(0, 1) != 1 || dup2(0, 2) != 2)
		return 16 + 2;
	after_close();
	if (!put(dir, "parent.txt", 3, "parent\n") || !put(dir, "spare.txt", 4, "spare\n"))
		return 16 + 3;
	pid_t child = fork();
	if (child < 0)
		return 16 + 4;
	if (child == 0) {
		/* descriptors 3 and 4 are the parent's files, inherited: still
		 * those files */
		if (!inherited(dir, "parent.txt", 3) || !inherited(dir, "spare.txt", 4))
			_exit(32 + 2);
		/* a daemon's child closes all but stdio again, then works */
		syscall(SYS_close_range, 3u, ~0u, 0u);
		gt_sleep_ms(100); /* (time for a recorder to see the hangup first) */
		child_work();
		if (!put(dir, "child.txt", 3, "child\n"))
			_exit(32 + 1);
		_exit(0);
	}
	int status = -1;
	if (waitpid(child, &status, 0) != child)
		return 16 + 5;
	char text[128];
	snprintf(text, sizeof text, "parent=%d child=%d status=%d\n", (int)getpid(), (int)child,
		 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	if (!put(dir, "result.txt", 5, text))
		return 16 + 6;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 16 + 7;
	return 0;
}
