/*
 * paced.c - a program that allocates about 100,000 times a second: each
 * iteration does ~10 us of work and one malloc/free pair.  It prints the
 * iterations it managed each second, so that tools/bench/bench-attach.sh can see
 * how much attaching memtrace slows it down.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void work(unsigned spins)
{
	unsigned long x = sink;
	for (unsigned i = 0; i < spins; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

int main(int argc, char **argv)
{
	unsigned spins = argc > 1 ? (unsigned)atoi(argv[1]) : 9000;
	int seconds = argc > 2 ? atoi(argv[2]) : 12;
	setvbuf(stdout, NULL, _IOLBF, 0);
	double start = now(), mark = start;
	unsigned long n = 0;
	while (mark - start < seconds) {
		char *p = malloc(64 + (n & 255));
		p[0] = (char)n;
		sink += (unsigned long)p[0];
		free(p);
		work(spins);
		n++;
		if ((n & 1023) == 0 && now() - mark >= 1.0) {
			double t = now();
			printf("%.0f\n", (double)n / (t - mark));
			n = 0;
			mark = t;
		}
	}
	return 0;
}
