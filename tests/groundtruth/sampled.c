/*
 * sampled.c - sites that each allocate hundreds of megabytes, for sampled
 * recording (record --sample): what each allocates is known, so that the
 * estimates can be held to it.
 *
 *   site       calls                                         bytes
 *   temps      10,000,000 x malloc(64), each freed at once   640,000,000
 *   pages      200,000 x malloc(4096), 64 live at a time     819,200,000
 *   mixed      malloc of sizes 256..65536 (a fixed LCG) until
 *              at least 1 GiB, 16 live at a time             see below
 *   big        1,000 x malloc(1 MiB), each freed at once     1,048,576,000
 *   grower     8,000 chains of realloc(NULL, 4096) then 4
 *              doublings to 65536 (5 calls, 126,976 bytes
 *              each chain), then freed                       1,015,808,000
 *   leaky      1,000,000 x malloc(256), never freed          256,000,000
 *
 * mixed's calls and bytes are printed on stdout (calls=N bytes=B), since
 * the LCG decides them; everything else is freed before the exit except
 * leaky's blocks, so 256,000,000 bytes in 1,000,000 blocks are in use at
 * the end.
 *
 * With an argument D, every count is divided by D (the BPF backend's case
 * runs an eighth of it at an eighth of the mean: its probes trap on every
 * call, sampled or not).  With "wait" after it, it says "ready" and waits
 * for SIGUSR1 first (for memtrace -p).
 *
 * Sizes are kept well above a byte or two: a site's count is estimated
 * from its samples, each standing for about MEAN / SIZE calls, so that a
 * few tiny calls in a site of big ones make its count noisy (as with any
 * sampling by bytes), and the case is about the estimator, not that.
 */
#include "gt.h"

#include <signal.h>
#include <stdint.h>

static int scale = 1;
#define TEMPS (10000000 / scale)
#define PAGES (200000 / scale)
#define BIG (1000 / scale)
#define CHAINS (8000 / scale)
#define LEAKY (1000000 / scale)

static void *ring[64];

NOINLINE void temps(void)
{
	for (int i = 0; i < GT_N(TEMPS); i++) {
		void *p = malloc(64); /* @site:temps */
		gt_keep(p);
		free(p);
	}
}

NOINLINE void pages(void)
{
	for (int i = 0; i < GT_N(PAGES); i++) {
		free(ring[i % 64]);
		ring[i % 64] = malloc(4096); /* @site:pages */
		gt_keep(ring[i % 64]);
	}
	for (int i = 0; i < 64; i++) {
		free(ring[i]);
		ring[i] = NULL;
	}
}

NOINLINE void mixed(uint64_t *calls, uint64_t *bytes)
{
	uint32_t x = 12345;
	for (unsigned i = 0; *bytes < (1ull << 30) / (unsigned)scale; i++) {
		x = x * 1103515245u + 12345u;
		size_t n = 256 + (x >> 8) % 65281;
		free(ring[i % 16]);
		ring[i % 16] = malloc(n); /* @site:mixed */
		gt_keep(ring[i % 16]);
		*calls += 1;
		*bytes += n;
	}
	for (int i = 0; i < 16; i++) {
		free(ring[i]);
		ring[i] = NULL;
	}
}

NOINLINE void big(void)
{
	for (int i = 0; i < GT_N(BIG); i++) {
		void *p = malloc(1 << 20); /* @site:big */
		gt_keep(p);
		free(p);
	}
}

NOINLINE void grower(void)
{
	for (int i = 0; i < GT_N(CHAINS); i++) {
		void *p = NULL;
		for (size_t n = 4096; n <= 65536; n *= 2) {
			p = realloc(GT_HIDE(p), n); /* @site:grower */
			gt_keep(p);
		}
		free(p);
	}
}

NOINLINE void leaky(void)
{
	for (int i = 0; i < GT_N(LEAKY); i++)
		gt_keep(malloc(256)); /* @site:leaky */
}

int main(int argc, char **argv)
{
	uint64_t calls = 0, bytes = 0;
	if (argc > 1 && atoi(argv[1]) > 0)
		scale = atoi(argv[1]);
	if (argc > 2 && !strcmp(argv[2], "wait")) {
		sigset_t usr1;
		int sig;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		if (write(1, "ready\n", 6) != 6 || sigwait(&usr1, &sig))
			return 1;
	}
	temps();
	pages();
	mixed(&calls, &bytes);
	big();
	grower();
	leaky();
	char line[64];
	int n = snprintf(line, sizeof line, "calls=%llu bytes=%llu\n", (unsigned long long)calls,
			 (unsigned long long)bytes);
	return write(1, line, (size_t)n) == n ? 0 : 1;
}
