/*
 * gt_loop.c - a process that keeps allocating while tracers come and go:
 * every round allocates 200 blocks of known sizes, fills each with a
 * pattern, checks it, frees them, and prints "ok ROUND SUM" where SUM is
 * the same every round (or "BAD ..." if a block was wrong).  Runs until
 * stdin closes.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	fcntl(0, F_SETFL, O_NONBLOCK);
	for (long round = 0;; round++) {
		void *p[200];
		uint64_t sum = 0;
		char line[128];
		int bad = 0;

		for (int i = 0; i < 200; i++) {
			size_t n = 16 + (size_t)i * 37;
			p[i] = i % 3 == 0 ? malloc(n) : i % 3 == 1 ? calloc(1, n) : realloc(NULL, n);
			memset(p[i], i, n);
		}
		for (int i = 0; i < 200; i++) {
			size_t n = 16 + (size_t)i * 37;
			const unsigned char *c = p[i];
			for (size_t k = 0; k < n; k++) {
				bad |= c[k] != (unsigned char)i;
				sum += c[k];
			}
			free(p[i]);
		}
		int len = snprintf(line, sizeof(line), "%s %ld %llu\n", bad ? "BAD" : "ok", round,
				   (unsigned long long)sum);
		if (write(1, line, len) != len)
			return 1;
		char b[16];
		if (read(0, b, sizeof(b)) == 0)
			return 0;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
}
