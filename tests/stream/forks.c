/*
 * forks.c - a program that forks while the shim serves its recording
 * (MEMTRACE_ENABLE_SERVER), driven by the test through its stdin.
 *
 * By construction: the parent allocates 10 x 1000 bytes (leaked), reads
 * one byte (the test has seen the shim serve), forks; the child allocates
 * 5 x 2000 bytes (leaked) and reads stdin to its end; the parent, with
 * "wait", reads stdin to its end too, else exits at once.  So a followed
 * child's recording holds 5 allocations and 10,000 bytes leaked, the
 * parent's 10 allocations and 10,000 bytes leaked.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep[15];

static void drain(void)
{
	char c;
	while (read(0, &c, 1) > 0) {
	}
}

int main(int argc, char **argv)
{
	for (int i = 0; i < 10; i++)
		if (!(keep[i] = malloc(1000)))
			return 1;
	char go;
	if (read(0, &go, 1) != 1)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (int i = 10; i < 15; i++)
			if (!(keep[i] = malloc(2000)))
				return 1;
		drain();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "wait"))
		drain();
	return keep[0] ? 0 : 1;
}
