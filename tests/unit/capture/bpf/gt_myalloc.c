/*
 * gt_myalloc.c - a tiny allocator library that exports malloc, calloc,
 * realloc and free, standing in for jemalloc/tcmalloc/mimalloc: an object
 * other than libc that defines malloc.  Its realloc calls its own malloc
 * and free, bound locally (-Bsymbolic-functions), so those inner calls hit
 * the probes too and must not be counted twice.  Its malloc starts the way
 * mimalloc's does (x86-64): the size moved from %rdi to %rsi and %rdi
 * reused, then a compare and a conditional jump; the probe goes on the
 * jump and must read the size from %rsi.  Bump allocation from a static
 * arena; free only marks the header.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA (8u << 20)
static _Alignas(16) unsigned char arena[ARENA];
static size_t used;

struct hdr {
	size_t size;
	size_t freed;
};

__attribute__((visibility("hidden"), noinline, used)) void *my_malloc(size_t n)
{
	size_t need = (sizeof(struct hdr) + n + 15) & ~(size_t)15;

	if (n > ARENA || __atomic_load_n(&used, __ATOMIC_RELAXED) + need > ARENA)
		return NULL;
	size_t at = __atomic_fetch_add(&used, need, __ATOMIC_RELAXED);
	if (at + need > ARENA)
		return NULL;
	struct hdr *h = (struct hdr *)(arena + at);
	h->size = n;
	h->freed = 0;
	return h + 1;
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl malloc\n"
	".type malloc, @function\n"
	"malloc:\n"
	"	mov %rdi, %rsi\n"
	"	mov $0x5a5a, %edi\n"      /* the argument register is reused */
	"	cmp $0x800000, %rsi\n"
	"	ja 1f\n"                  /* emulated: the probe lands here */
	"	mov %rsi, %rdi\n"
	"	jmp my_malloc\n"
	"1:	xor %eax, %eax\n"
	"	ret\n"
	".size malloc, .-malloc\n");
#else
void *malloc(size_t n)
{
	return my_malloc(n);
}
#endif

void free(void *p)
{
	if (p)
		((struct hdr *)p - 1)->freed = 1;
}

void *calloc(size_t n, size_t m)
{
	if (m && n > SIZE_MAX / m)
		return NULL;
	void *p = malloc(n * m);
	if (p)
		memset(p, 0, n * m);
	return p;
}

void *realloc(void *p, size_t n)
{
	if (!p)
		return malloc(n);
	size_t old = ((struct hdr *)p - 1)->size;
	void *q = malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	free(p);
	return q;
}
