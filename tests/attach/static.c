/*
 * static.c - a statically linked program for `record --backend=auto`, which
 * must choose BPF for it.  static_leak() leaks 7 blocks of 777 bytes;
 * churn() makes 100 allocations of 64 bytes and frees them.  With "sleep"
 * it prints a line and waits (a process without an allocator, once
 * stripped, for the -p error test).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

NOINLINE static void static_leak(void)
{
	for (int i = 0; i < 7; i++)
		sink = malloc(777);
}

NOINLINE static void churn(void)
{
	for (int i = 0; i < 100; i++) {
		void *p = malloc(64);
		sink = p;
		free(p);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "sleep")) {
		if (write(1, "ready\n", 6) < 0)
			return 1;
		pause();
	}
	static_leak();
	churn();
	return 0;
}
