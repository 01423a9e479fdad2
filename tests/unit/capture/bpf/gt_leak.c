/*
 * gt_leak.c - ground truth for aggregation on a running process: prints
 * "ready base ADDR" (ADDR: where main is), waits for a line on stdin, then
 *   leak_a:    10 x malloc(1000), kept             -> 10000 bytes outstanding
 *   leak_b:     5 x calloc(3, 111), kept           ->  1665 bytes outstanding
 *   churn:    100 x malloc(64), freed at once      ->     0 outstanding, 100 culled
 *   grow:      malloc(10) then realloc to 20000    -> 20000 outstanding at grow_realloc
 * prints "done" and waits for stdin to close (then exits 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
static void *volatile keep[64];
static int nkeep;

NOINLINE static void leak_a(void) { for (int i = 0; i < 10; i++) keep[nkeep++] = malloc(1000); }
NOINLINE static void leak_b(void) { for (int i = 0; i < 5; i++) keep[nkeep++] = calloc(3, 111); }
NOINLINE static void churn(void) { for (int i = 0; i < 100; i++) { void *p = malloc(64); keep[63] = p; free(p); } }
NOINLINE static void *grow_malloc(void) { return malloc(10); }
NOINLINE static void *grow_realloc(void *p) { return realloc(p, 20000); }

static void say(const char *s) { if (write(1, s, strlen(s)) < 0) _exit(1); }

int main(void)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "ready base %p\n", (void *)main);
	say(buf);
	if (read(0, buf, sizeof(buf)) <= 0)
		return 1;
	leak_a();
	leak_b();
	churn();
	keep[nkeep++] = grow_realloc(grow_malloc());
	say("done\n");
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}
