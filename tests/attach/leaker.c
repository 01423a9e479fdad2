/*
 * leaker.c - a long-running program for attach and sweep.
 *
 * Every 50 ms, leaky_round() allocates 100 blocks of 100 bytes, checks and
 * frees 90 of them and leaks 10 (other_leak() does the same when the program
 * is started with an argument, so that two leakers differ).  It prints
 * "ready", then "round N ok" after every round whose blocks held what was
 * written in them: a probe that corrupted memory or registers would show.
 *
 * With "dlopen LIB": once it gets SIGUSR1 (after a tracer attached), it
 * dlopens LIB (leaker_lib.c) and calls its lib_leak() every round, which
 * leaks 10 blocks of 64 bytes from code mapped after the attachment.
 *
 * With "title": it first sets its title as redis-server does, "leaker
 * title" over its argument area, the rest of which it zeroes.
 *
 * With "once": it waits for SIGUSR1, then runs one leaky_round (100 blocks
 * of 100 bytes allocated, 10 of them leaked: 1,000 bytes) and exits at once,
 * before a tracer's first look at /proc after attaching (once a second).
 * It says "ready" with write(2), so that its first printf, after the signal,
 * allocates stdout's buffer while it is traced: a block the C library holds
 * until exit, which is no leak.
 *
 * With "exit N": it runs rounds until SIGUSR1 (a tracer attached), then
 * exits with status N, by exit(3) from the main thread.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

static int round_of(int salt, void *(*alloc)(size_t))
{
	char *b[100];
	for (int i = 0; i < 100; i++) {
		b[i] = alloc(100);
		memset(b[i], (i + salt) & 0xff, 100);
	}
	int ok = 1;
	for (int i = 0; i < 100; i++)
		for (int k = 0; k < 100; k++)
			ok &= (unsigned char)b[i][k] == ((i + salt) & 0xff);
	for (int i = 10; i < 100; i++)
		free(b[i]);
	for (int i = 0; i < 10; i++)
		sink = b[i];
	return ok;
}

NOINLINE static void *leaky_alloc(size_t n) { return malloc(n); }
NOINLINE static void *other_alloc(size_t n) { return malloc(n); }
NOINLINE static int leaky_round(int salt) { return round_of(salt, leaky_alloc); }
NOINLINE static int other_leak(int salt) { return round_of(salt, other_alloc); }

static volatile sig_atomic_t go_dlopen;

static void on_usr1(int sig)
{
	(void)sig;
	go_dlopen = 1;
}

int main(int argc, char **argv)
{
	int sleeper = argc > 1 && !strcmp(argv[1], "sleep");
	const char *lib = argc > 2 && !strcmp(argv[1], "dlopen") ? argv[2] : NULL;
	void (*lib_leak)(void) = NULL;
	int exit_code = argc > 2 && !strcmp(argv[1], "exit") ? atoi(argv[2]) : -1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGUSR1, on_usr1);
	if (argc > 1 && !strcmp(argv[1], "title")) {
		char *end = argv[argc - 1] + strlen(argv[argc - 1]);
		memset(argv[0], 0, (size_t)(end - argv[0]));
		strcpy(argv[0], "leaker title");
	}
	if (argc > 1 && !strcmp(argv[1], "once")) {
		char msg[64];
		int len = snprintf(msg, sizeof msg, "ready pid=%d\n", (int)getpid());
		if (write(1, msg, (size_t)len) != len)
			return 1;
		while (!go_dlopen) { /* SIGUSR1: the tracer is attached */
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
		int ok = leaky_round(1);
		printf("round 1 %s\n", ok ? "ok" : "CORRUPT");
		return 0;
	}
	printf("ready pid=%d\n", (int)getpid());
	for (int n = 1; !sleeper; n++) {
		if (exit_code >= 0 && go_dlopen)
			exit(exit_code);
		if (lib && go_dlopen && !lib_leak) {
			void *h = dlopen(lib, RTLD_NOW);
			lib_leak = h ? (void (*)(void))dlsym(h, "lib_leak") : NULL;
			if (!lib_leak) {
				printf("dlopen %s failed\n", lib);
				return 1;
			}
		}
		if (lib_leak)
			lib_leak();
		int ok = argc > 1 && !lib ? other_leak(n) : leaky_round(n);
		printf("round %d %s\n", n, ok ? "ok" : "CORRUPT");
		struct timespec ts = {0, 50000000};
		nanosleep(&ts, NULL);
	}
	pause();
	return 0;
}
