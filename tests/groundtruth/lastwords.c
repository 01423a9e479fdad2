/*
 * lastwords.c - what the standalone shim writes before the image ends
 * without passing through exit: an exec glibc makes without the PLT, a
 * posix_spawn followed by SIGKILL, a fatal signal.
 *
 * gt-lastwords MODE: before() makes 4 x malloc(1000), kept, and 1 x
 * malloc(300), freed (5 allocations, 4300 bytes, 1 free, 4 blocks and 4000
 * bytes leaked), then MODE ends the image, at once (well inside the half
 * second the shim's file may lag behind):
 *   execl, execlp, execle, fexecve, execveat: executes /bin/true (execlp:
 *     "true" through PATH; fexecve: a descriptor of /bin/true; execveat:
 *     "true" in a descriptor of /bin);
 *   spawn, spawnp: posix_spawn(p) of /bin/true, then SIGKILL to itself
 *     (nothing can write anything at SIGKILL: only the flush before
 *     posix_spawn saves the events);
 *   abort, segv, term: abort(), a write through NULL, kill(self, SIGTERM);
 *   dfl: sets SIG_DFL for SIGABRT (signal) and SIGSEGV (sigaction), reads
 *     back SIG_DFL for both, then abort();
 *   own: a SIGTERM handler of its own, which runs on raise(SIGTERM) (and
 *     reads back as installed), then SIG_DFL again (signal returns the
 *     handler), then kill(self, SIGTERM): the process dies of it;
 *   ign: SIGTERM ignored, raise(SIGTERM) returns, the program exits 0
 *     (main returns);
 *   exit, _exit: exit(5), _exit(4).
 * The last three end through exit or _exit: the recording says the status
 * (it used to say nothing, and reports took the process for running on).
 * Core dumps are turned off first.  Every requirement is checked by the
 * program (exit 3 otherwise).
 */
#include "gt.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>

extern char **environ;

static void *kept[4];

NOINLINE void before(void)
{
	for (int i = 0; i < GT_N(4); i++) {
		kept[i] = malloc(1000); /* @site:before */
		gt_keep(kept[i]);
	}
	void *p = malloc(300); /* @site:before_freed */
	gt_keep(p);
	free(p);
}

static volatile sig_atomic_t handled;

static void own_handler(int sig)
{
	(void)sig;
	handled++;
}

static void spawn_then_die(int search)
{
	char *argv[] = { "true", NULL };
	pid_t pid;
	int r = search ? posix_spawnp(&pid, "true", NULL, NULL, argv, environ) :
			 posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ);
	GT_REQUIRE(r == 0);
	kill(getpid(), SIGKILL);
}

int main(int argc, char **argv)
{
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	GT_REQUIRE(argc == 2);
	const char *m = argv[1];
	before();
	if (!strcmp(m, "execl")) {
		execl("/bin/true", "true", (char *)NULL);
	} else if (!strcmp(m, "execlp")) {
		execlp("true", "true", (char *)NULL);
	} else if (!strcmp(m, "execle")) {
		execle("/bin/true", "true", (char *)NULL, environ);
	} else if (!strcmp(m, "fexecve")) {
		int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
		GT_REQUIRE(fd >= 0);
		char *args[] = { "true", NULL };
		fexecve(fd, args, environ);
	} else if (!strcmp(m, "execveat")) {
		int dir = open("/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		GT_REQUIRE(dir >= 0);
		char *args[] = { "true", NULL };
		execveat(dir, "true", args, environ, 0);
	} else if (!strcmp(m, "spawn") || !strcmp(m, "spawnp")) {
		spawn_then_die(m[5] == 'p');
	} else if (!strcmp(m, "abort")) {
		abort();
	} else if (!strcmp(m, "segv")) {
		*(volatile int *)GT_HIDE((int *)NULL) = 1;
	} else if (!strcmp(m, "term")) {
		kill(getpid(), SIGTERM);
	} else if (!strcmp(m, "dfl")) {
		GT_REQUIRE(signal(SIGABRT, SIG_DFL) == SIG_DFL);
		struct sigaction dfl = { .sa_handler = SIG_DFL }, old;
		sigemptyset(&dfl.sa_mask);
		GT_REQUIRE(sigaction(SIGSEGV, &dfl, NULL) == 0);
		GT_REQUIRE(sigaction(SIGSEGV, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
			   !(old.sa_flags & SA_SIGINFO));
		GT_REQUIRE(sigaction(SIGABRT, NULL, &old) == 0 && old.sa_handler == SIG_DFL);
		abort();
	} else if (!strcmp(m, "own")) {
		struct sigaction sa = { .sa_handler = own_handler }, old;
		sigemptyset(&sa.sa_mask);
		GT_REQUIRE(sigaction(SIGTERM, &sa, &old) == 0 && old.sa_handler == SIG_DFL);
		raise(SIGTERM);
		GT_REQUIRE(handled == 1);
		GT_REQUIRE(sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == own_handler);
		GT_REQUIRE(signal(SIGTERM, SIG_DFL) == own_handler);
		kill(getpid(), SIGTERM);
	} else if (!strcmp(m, "ign")) {
		GT_REQUIRE(signal(SIGTERM, SIG_IGN) == SIG_DFL);
		raise(SIGTERM);
		GT_REQUIRE(signal(SIGTERM, SIG_DFL) == SIG_IGN);
		return 0;
	} else if (!strcmp(m, "exit")) {
		exit(5);
	} else if (!strcmp(m, "_exit")) {
		_exit(4);
	}
	_exit(3); /* the exec failed, or the signal did not end the process */
}
