/*
 * demo.c - the bundled demo program: a small "document cache" with a leak,
 * a peak, temporaries and a hot call site, so that every report view of
 * memtrace has something to show.  Figures known by construction:
 *   - load_document() leaks 8 blocks of 4096 bytes (32,768 bytes);
 *   - the peak is reached while build_index() holds 64 blocks of 2048;
 *   - format_line() makes 10,000 temporary allocations (malloc then free).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *cache[8];

__attribute__((noinline)) static char *load_document(int i)
{
	char *doc = malloc(4096);
	snprintf(doc, 4096, "document %d", i);
	return doc;
}

__attribute__((noinline)) static void build_index(void)
{
	void *blocks[64];
	for (int i = 0; i < 64; i++) {
		blocks[i] = malloc(2048);
		memset(blocks[i], i, 2048);
	}
	for (int i = 0; i < 64; i++)
		free(blocks[i]);
}

__attribute__((noinline)) static size_t format_line(int i)
{
	char *line = malloc(64);
	size_t n = (size_t)snprintf(line, 64, "line %d", i);
	free(line);
	return n;
}

int main(void)
{
	size_t total = 0;
	for (int i = 0; i < 8; i++)
		cache[i] = load_document(i);
	build_index();
	for (int i = 0; i < 10000; i++)
		total += format_line(i);
	/* forgets the cache: its 8 documents leak */
	memset(cache, 0, sizeof cache);
	printf("demo: formatted %zu bytes\n", total);
	return 0;
}
