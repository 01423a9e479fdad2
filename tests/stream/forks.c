/*
 * forks.c - a program that forks while the shim serves its recording
 * (MEMTRACE_ENABLE_SERVER), driven by the test through its stdin.
 *
 * By construction: the parent allocates 5 x 1000 bytes (leaked), reads
 * one byte (the test has seen the shim serve), vforks a child that calls
 * _exit at once (as one whose exec failed: it shares the parent's memory,
 * server included, and must leave both alone), allocates 5 x 1000 bytes
 * more (leaked), forks; the child allocates 5 x 2000 bytes (leaked), reads
 * stdin to its end and ends by _exit; the parent, with "wait", reads stdin
 * to its end too, else exits at once.  So a followed child's recording
 * holds 5 allocations and 10,000 bytes leaked, the parent's 10 allocations
 * and 10,000 bytes leaked.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
	for (int i = 0; i < 5; i++)
		if (!(keep[i] = malloc(1000)))
			return 1;
	char go;
	if (read(0, &go, 1) != 1)
		return 1;
	pid_t v = vfork();
	if (v == 0)
		_exit(0);
	if (v < 0 || waitpid(v, NULL, 0) != v)
		return 1;
	for (int i = 5; i < 10; i++)
		if (!(keep[i] = malloc(1000)))
			return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (int i = 10; i < 15; i++)
			if (!(keep[i] = malloc(2000)))
				return 1;
		drain();
		_exit(0);
	}
	if (argc > 1 && !strcmp(argv[1], "wait"))
		drain();
	return keep[0] ? 0 : 1;
}
