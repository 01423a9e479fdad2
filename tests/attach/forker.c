/*
 * forker.c - a process that forks all the time, for the leak scan of a
 * process attached to (memtrace -p) while it forks: a fork comes right as
 * its threads are being stopped, or just after, while it is held.
 *
 * Its main thread forks a child about every half millisecond (the child
 * allocates and frees a block, then exits at once; the parent reaps it)
 * and, on each SIGUSR1, makes a batch after the fork it is in:
 *   100 blocks of 32 words, each dropped at once (definitely lost),
 *   100 blocks of 16 words, linked from a global (still reachable),
 * then says "made N LOST HELD FORKS": N batches, the bytes definitely lost
 * and still reachable in all, the children forked so far.  The blocks a
 * scan must find are known whenever the batch is not being made.
 *
 * `forker vfork`: a second thread also vforks, again and again, a child
 * that waits for a byte the main thread writes every half millisecond.
 * That thread cannot stop while its child waits (a vfork's parent stops
 * only once the child has exec'd or exited), and its child waits on the
 * main thread, held: a scan cannot hold the whole process, and must give
 * up and let it go rather than hang it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define W sizeof(void *)
#define BATCH 100

struct held {
	struct held *next;
	void *pad[15];
};

static struct held *kept;
static volatile sig_atomic_t asked;
static int pipefd[2] = { -1, -1 };

static void on_usr1(int sig)
{
	(void)sig;
	asked++;
}

NOINLINE static void lose(void)
{
	for (int i = 0; i < BATCH; i++) {
		char *p = malloc(32 * W);
		memset(p, 0x5a, 32 * W);
		__asm__ volatile("" : : "r"(p) : "memory");
	}
}

NOINLINE static void hold(void)
{
	for (int i = 0; i < BATCH; i++) {
		struct held *h = calloc(1, sizeof *h);
		h->next = kept;
		kept = h;
	}
}

NOINLINE static void wipe_stack(void)
{
	volatile char junk[16384];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = 0;
}

static void *vforker(void *arg)
{
	(void)arg;
	for (;;) {
		pid_t pid = vfork();
		if (pid == 0) {
			/* (its own copy of the descriptors: a dead parent ends
			 * its read) */
			char c;
			close(pipefd[1]);
			_exit(read(pipefd[0], &c, 1) == 1 ? 0 : 1);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	signal(SIGUSR1, on_usr1);
	if (argc > 1 && !strcmp(argv[1], "vfork")) {
		pthread_t t;
		if (pipe(pipefd) < 0 || pthread_create(&t, NULL, vforker, NULL) != 0)
			return 2;
	}
	printf("ready\n");
	fflush(stdout);
	long forks = 0;
	int made = 0;
	for (;;) {
		pid_t pid = fork();
		if (pid == 0) {
			void *p = malloc(64);
			__asm__ volatile("" : : "r"(p) : "memory");
			free(p);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return 3;
		forks++;
		if (pipefd[1] >= 0 && write(pipefd[1], "x", 1) != 1)
			return 4;
		if (made < asked) {
			made++;
			lose();
			hold();
			wipe_stack();
			printf("made %d %zu %zu %ld\n", made, (size_t)made * BATCH * 32 * W,
			       (size_t)made * BATCH * sizeof(struct held), forks);
			fflush(stdout);
		}
		usleep(500);
	}
}
