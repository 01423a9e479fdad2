/*
 * test_procscan.c - the leak scan of a running process (scan/procscan.c):
 * runs `gt-leakkinds hold`, takes the blocks and kinds it prints, holds it
 * with ptrace, scans it with those blocks as the live ones, and checks each
 * block's kind and the totals; then the same process with the allocator's
 * gaps as roots (an attach's view), which may only make blocks reachable.
 *
 *   test-procscan GT-LEAKKINDS [THREADS]
 *
 * THREADS: that many more threads, each holding a block on its stack.
 */
#include "scan/procscan.h"
#include "../check.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXB 2048

static int kind_of(const char *name)
{
	for (int k = 0; k < MT_LEAK_KINDS; k++)
		if (!strcmp(name, mt_leak_kind_names[k]))
			return k;
	return -1;
}

static int by_addr(const void *a, const void *b)
{
	const struct mt_scan_block *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test-procscan GT-LEAKKINDS [THREADS]\n");
		return 2;
	}
	const char *threads = argc > 2 ? argv[2] : "0";
	size_t nthreads = (size_t)atoi(threads);
	int out[2];
	if (pipe(out) < 0)
		return 2;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execl(argv[1], argv[1], "hold", threads, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	FILE *f = fdopen(out[0], "r");
	static struct mt_scan_block b[MAXB];
	static int want[MAXB];
	size_t n = 0;
	char line[256], kind[32];
	unsigned long addr;
	unsigned long long size;
	while (fgets(line, sizeof line, f) && strcmp(line, "ready\n"))
		if (n < MAXB && sscanf(line, "block %lx %llu %31s", &addr, &size, kind) == 3) {
			b[n] = (struct mt_scan_block){ addr, size };
			want[n++] = kind_of(kind);
		}
#if defined(__x86_64__) || defined(__aarch64__)
	CHECK_EQ(n, 11 + nthreads);
#else
	CHECK_EQ(n, 10 + nthreads); /* no register-held block */
#endif
	/* sorted, the kinds following their blocks */
	static struct mt_scan_block sorted[MAXB];
	static int wsorted[MAXB];
	memcpy(sorted, b, n * sizeof *b);
	qsort(sorted, n, sizeof *sorted, by_addr);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (b[j].addr == sorted[i].addr)
				wsorted[i] = want[j];

	struct mt_stopped st;
	char why[200] = "";
	if (mt_threads_stop(&st, pid, why, sizeof why) < 0) {
		fprintf(stderr, "cannot stop gt-leakkinds: %s\n", why);
		kill(pid, SIGKILL);
		return 1;
	}
	CHECK(st.n >= 3 + nthreads); /* main, the stack holder, the spinner, the rest */
	static uint8_t kinds[MAXB];
	struct mt_scan_result res;
	struct mt_scan_opts o = { .heap_gaps_are_roots = 0 };
	CHECK(mt_scan_process(&st, sorted, n, &o, kinds, &res) == 0);
	CHECK(res.complete);
	uint64_t want_bytes[MT_LEAK_KINDS] = { 0 };
	for (size_t i = 0; i < n; i++) {
		want_bytes[wsorted[i]] += sorted[i].size;
		if (kinds[i] != wsorted[i]) {
			fprintf(stderr, "block %llx (%llu bytes): %s, expected %s\n",
				(unsigned long long)sorted[i].addr, (unsigned long long)sorted[i].size,
				mt_leak_kind_names[kinds[i]], mt_leak_kind_names[wsorted[i]]);
			failures++;
		}
	}
	for (int k = 0; k < MT_LEAK_KINDS; k++)
		CHECK_EQ(res.bytes[k], want_bytes[k]);
	printf("scanned %llu bytes (%llu of roots) in %.3f ms; definite %llu, indirect %llu, "
	       "possible %llu, reachable %llu bytes\n",
	       (unsigned long long)res.scanned, (unsigned long long)res.roots, res.ns / 1e6,
	       (unsigned long long)res.bytes[0], (unsigned long long)res.bytes[1],
	       (unsigned long long)res.bytes[2], (unsigned long long)res.bytes[3]);

	/* the allocator's gaps as roots: never fewer reachable */
	o.heap_gaps_are_roots = 1;
	static uint8_t k2[MAXB];
	struct mt_scan_result r2;
	CHECK(mt_scan_process(&st, sorted, n, &o, k2, &r2) == 0);
	CHECK(r2.roots > res.roots);
	for (size_t i = 0; i < n; i++)
		CHECK(k2[i] >= kinds[i] || kinds[i] == MT_LEAK_INDIRECT);
	mt_threads_resume(&st);

	/* it runs again after the scan, and a dead process is no scan */
	CHECK(kill(pid, 0) == 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK(mt_threads_stop(&st, pid, why, sizeof why) < 0);
	CHECK(strstr(why, "no process") != NULL);
	return failures ? 1 : 0;
}
