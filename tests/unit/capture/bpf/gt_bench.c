/*
 * gt_bench.c - the design notes' malloc/free loop: N pairs of malloc and
 * free of mixed sizes (16..1039 bytes).  Waits for a line on stdin, runs,
 * and prints "ns TOTAL_NS pairs N".
 * Usage: gt-bpf-bench [N] [MODE]; MODE "posix_memalign" or "calloc" to use
 * that function in place of malloc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	const char *mode = argc > 2 ? argv[2] : "malloc";
	int m = !strcmp(mode, "posix_memalign") ? 1 : !strcmp(mode, "calloc") ? 2 : 0;
	char buf[16];
	struct timespec a, b;

	if (read(0, buf, sizeof(buf)) < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		size_t size = 16 + (size_t)(i * 7919) % 1024;
		void *p;
		if (m == 1) {
			if (posix_memalign(&p, 16, size))
				return 1;
		} else if (m == 2) {
			p = calloc(1, size);
		} else {
			p = malloc(size);
		}
		sink = p;
		free(p);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	char line[96];
	int len = snprintf(line, sizeof(line), "ns %lld pairs %ld\n",
			   (long long)(b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec), n);
	return write(1, line, len) == len ? 0 : 1;
}
