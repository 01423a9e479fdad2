/*
 * timed.c - a fixed amount of allocation work that times itself, for top's
 * continuous profiles: a profile store that is down must not slow it.
 *
 * It prints "ready", waits for SIGUSR1 (the tracer attached), then runs
 * ROUNDS rounds (argv[1], default 2000), each allocating 100 blocks of 100
 * bytes in timed_alloc, freeing 90 and keeping 10, prints "elapsed S" (its
 * own CLOCK_MONOTONIC seconds for the rounds) and exits.  By construction:
 * timed_alloc made ROUNDS * 100 allocations of 10,000 * ROUNDS bytes, and
 * ROUNDS * 10 blocks, ROUNDS * 1,000 bytes, are live at the end.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t go;
static void *volatile sink;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

NOINLINE static void *timed_alloc(size_t n)
{
	return malloc(n);
}

NOINLINE static void timed_round(void)
{
	void *b[100];
	for (int i = 0; i < 100; i++)
		b[i] = timed_alloc(100);
	for (int i = 10; i < 100; i++)
		free(b[i]);
	for (int i = 0; i < 10; i++)
		sink = b[i];
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 2000;
	signal(SIGUSR1, on_usr1);
	char msg[64];
	int len = snprintf(msg, sizeof msg, "ready pid=%d\n", (int)getpid());
	if (write(1, msg, (size_t)len) != len)
		return 1;
	while (!go) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long r = 0; r < rounds; r++)
		timed_round();
	clock_gettime(CLOCK_MONOTONIC, &b);
	len = snprintf(msg, sizeof msg, "elapsed %.6f\n",
		       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	return write(1, msg, (size_t)len) == len ? 0 : 1;
}
