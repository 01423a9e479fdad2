/*
 * server.c - a long-running "server" for the leak scan of a process
 * attached to (memtrace -p): what it leaks and what it keeps are known.
 *
 * Before the tracer attaches it allocates its session table (8,000 bytes:
 * a block the tracer never sees allocated, which the scan must take as a
 * root) and says "ready".  On each SIGUSR1 it serves 200 requests, each of
 * which allocates
 *   a request buffer of 256 bytes, forgotten when the request ends
 *       (definitely lost: 51,200 bytes per batch),
 *   a cache entry of 128 bytes, linked into a list held by a global
 *       (still reachable), and
 *   a session of 64 bytes, kept in the session table (still reachable,
 *       through a block allocated before the attach),
 * then wipes the stack its calls left and says "served N" (N requests in
 * all).  A batch adds 200 blocks (51,200 B) definitely lost and 400 blocks
 * (38,400 B) still reachable.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BATCH 200

struct entry {
	struct entry *next;
	char data[120];
};

static struct entry *cache;
static void **sessions;
static size_t nsessions;
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go++;
}

static void say(const char *s)
{
	if (write(1, s, strlen(s)) < 0)
		_exit(1);
}

NOINLINE static void serve(int i)
{
	char *buf = malloc(256);
	memset(buf, i & 0xff, 256);
	__asm__ volatile("" : : "r"(buf) : "memory");
	struct entry *e = malloc(sizeof *e);
	memset(e->data, i & 0xff, sizeof e->data);
	e->next = cache;
	cache = e;
	sessions[nsessions++] = malloc(64);
	/* buf is forgotten here */
}

NOINLINE static void wipe_stack(void)
{
	volatile char junk[16384];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = 0;
}

int main(void)
{
	sessions = calloc(1000, sizeof *sessions);
	signal(SIGUSR1, on_usr1);
	say("ready\n");
	int served = 0, batches = 0;
	for (;;) {
		while (go == batches)
			pause();
		batches++;
		if (nsessions + BATCH > 1000)
			_exit(2);
		for (int i = 0; i < BATCH; i++)
			serve(served++);
		wipe_stack();
		char line[32];
		snprintf(line, sizeof line, "served %d\n", served);
		say(line);
	}
}
