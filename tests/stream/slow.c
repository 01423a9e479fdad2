/*
 * slow.c - a program that allocates for about 1.2 s, so that a gatherer
 * can connect, be killed and come back while it runs.  By construction:
 * STEPS allocations of 100*(i+1) bytes, the odd ones freed at once, so
 * 60 allocations, 30 frees and 90,000 bytes leaked (100 * (1+3+...+59)).
 */
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define STEPS 60

int main(void)
{
	static void *keep[STEPS];
	for (int i = 0; i < STEPS; i++) {
		char *p = malloc(100 * (size_t)(i + 1));
		if (!p)
			return 1;
		p[0] = (char)i;
		if (i % 2)
			free(p);
		else
			keep[i] = p;
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000000 }, NULL);
	}
	/* write(2), not stdio: a stdio buffer would be one more allocation */
	const char done[] = "slow: done\n";
	return write(1, done, strlen(done)) == (ssize_t)strlen(done) && keep[0] ? 0 : 1;
}
