/*
 * gt_alloc.c - ground truth for the events test: one call of every
 * allocator function (and the cases that must produce nothing: failing
 * realloc, reallocarray and calloc overflow, posix_memalign with a bad
 * alignment, malloc(SIZE_MAX), free(NULL)), each from its own function.
 *
 * Built without frame pointers at -O1.  Writes what the tracer must see to
 * stdout, one line per event, in order:
 *   base ADDR                        runtime address of main
 *   A FN SIZE PTR CALLER             allocation by FN from function CALLER
 *   R FN SIZE OLD NEW CALLER         realloc-like replacement
 *   F FN PTR                         free (FN: free, realloc, reallocarray)
 *   leak SIZE CALLER FN              the one block left outstanding
 * Output is built with snprintf into a static buffer and written at the
 * end with write(2), so that the program allocates nothing of its own.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[16384];
static size_t outlen;
static void *volatile sink;
static volatile size_t huge = SIZE_MAX / 2;
/* Through a volatile, or the compiler turns realloc(NULL, n) into malloc(n). */
static void *volatile null_ptr;

#define LOG(...) (outlen += snprintf(out + outlen, sizeof(out) - outlen, __VA_ARGS__))
#define NOINLINE __attribute__((noinline))

NOINLINE static void *do_malloc(size_t n) { void *p = malloc(n); sink = p; return p; }
NOINLINE static void *do_malloc_big(size_t n) { void *p = malloc(n); sink = p; return p; }
NOINLINE static void *do_calloc(size_t n, size_t m) { void *p = calloc(n, m); sink = p; return p; }
NOINLINE static void *do_realloc_grow(void *o, size_t n) { void *p = realloc(o, n); sink = p; return p; }
NOINLINE static void *do_realloc_null(size_t n) { void *p = realloc(null_ptr, n); sink = p; return p; }
NOINLINE static void *do_realloc_zero(void *o) { void *p = realloc(o, 0); sink = p; return p; }
NOINLINE static void *do_realloc_fail(void *o) { void *p = realloc(o, huge); sink = p; return p; }
NOINLINE static void *do_reallocarray(void *o, size_t n, size_t m) { void *p = reallocarray(o, n, m); sink = p; return p; }
NOINLINE static int do_posix_memalign(void **pp, size_t a, size_t n) { int r = posix_memalign(pp, a, n); sink = *pp; return r; }
NOINLINE static void *do_aligned_alloc(size_t a, size_t n) { void *p = aligned_alloc(a, n); sink = p; return p; }
NOINLINE static void *do_memalign(size_t a, size_t n) { void *p = memalign(a, n); sink = p; return p; }
NOINLINE static void *do_valloc(size_t n) { void *p = valloc(n); sink = p; return p; }
NOINLINE static void *do_pvalloc(size_t n) { void *p = pvalloc(n); sink = p; return p; }
NOINLINE static void do_free(void *p) { free(p); sink = p; }

int main(void)
{
	LOG("base %p\n", (void *)main);

	void *p1 = do_malloc(100);
	LOG("A malloc 100 %p do_malloc\n", p1);
	void *big = do_malloc_big(1 << 20); /* mmap'd inside malloc */
	LOG("A malloc %d %p do_malloc_big\n", 1 << 20, big);
	void *p2 = do_calloc(10, 20);
	LOG("A calloc 200 %p do_calloc\n", p2);
	void *p3 = do_realloc_grow(p1, 5000);
	LOG("R realloc 5000 %p %p do_realloc_grow\n", p1, p3);
	void *p4 = do_realloc_null(300);
	LOG("A realloc 300 %p do_realloc_null\n", p4);
	if (do_realloc_zero(p4) == NULL)
		LOG("F realloc %p\n", p4);
	if (do_realloc_fail(p2) != NULL) /* fails: p2 stays */
		LOG("unexpected: realloc of %zu succeeded\n", (size_t)huge);
	void *p5 = do_reallocarray(null_ptr, 7, 11);
	LOG("A reallocarray 77 %p do_reallocarray\n", p5);
	if (do_reallocarray(p5, huge, 4) != NULL) /* overflows: nothing */
		LOG("unexpected: reallocarray overflow succeeded\n");
	void *p6 = do_reallocarray(p5, 3, 50);
	LOG("R reallocarray 150 %p %p do_reallocarray\n", p5, p6);
	void *p7 = NULL, *bad = NULL;
	if (do_posix_memalign(&p7, 64, 1000) == 0)
		LOG("A posix_memalign 1000 %p do_posix_memalign\n", p7);
	if (do_posix_memalign(&bad, 3, 10) == 0) /* EINVAL: nothing */
		LOG("unexpected: posix_memalign(3) succeeded\n");
	void *p8 = do_aligned_alloc(128, 256);
	LOG("A aligned_alloc 256 %p do_aligned_alloc\n", p8);
	void *p9 = do_memalign(32, 96);
	LOG("A memalign 96 %p do_memalign\n", p9);
	void *p10 = do_valloc(4000);
	LOG("A valloc 4000 %p do_valloc\n", p10);
	void *p11 = do_pvalloc(5000);
	LOG("A pvalloc 5000 %p do_pvalloc\n", p11);
	if (do_malloc(SIZE_MAX) != NULL)
		LOG("unexpected: malloc(SIZE_MAX) succeeded\n");
	if (do_calloc(huge, 4) != NULL)
		LOG("unexpected: calloc overflow succeeded\n");
	do_free(NULL);
	void *p12 = do_malloc(0);
	LOG("A malloc 0 %p do_malloc\n", p12);
	void *leak = do_malloc(4242);
	LOG("A malloc 4242 %p do_malloc\n", leak);
	LOG("leak 4242 do_malloc malloc\n");

	void *frees[] = { p3, big, p6, p7, p8, p9, p10, p11, p12, p2 };
	for (size_t i = 0; i < sizeof(frees) / sizeof(frees[0]); i++) {
		do_free(frees[i]);
		LOG("F free %p\n", frees[i]);
	}
	if (write(1, out, outlen) != (ssize_t)outlen)
		return 1;
	return 0;
}
