/*
 * gt_cxx.cpp - ground truth for the events test in C++: every variant of
 * operator new (new, new[]; nothrow, aligned, both) and of operator delete
 * (plain, sized, array, aligned), each new from its own function, and the
 * cases that throw: a nothrow new that fails (libstdc++'s nothrow new calls
 * the throwing one and catches) and a throwing new caught here.  Neither
 * may change what the program does under the tracer: operator new has no
 * return probe, whose trampoline would stop the unwinder.
 *
 * Built like gt_alloc.c (no frame pointers, -O1; the test also runs a build
 * with them).  Writes what the tracer must see, one line per event, in the
 * format of gt_alloc.c, plus
 *   X SIZE                 an exception object: allocated by libstdc++
 *                          (__cxa_allocate_exception, SIZE bytes) and freed
 *                          when the catch ends, at an address we cannot
 *                          know (the catch is libstdc++'s)
 *   leak SIZE CALLER FN    the one block left outstanding, by whom, how
 * operator new calls malloc (aligned_alloc for over-aligned types) for its
 * caller: the events are those functions', with frames[0] in the function
 * that called new; delete frees with free().
 */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
#include <unistd.h>

static char out[16384];
static size_t outlen;
static void *volatile sink;
static volatile size_t huge = SIZE_MAX / 4;

#define LOG(...) (outlen += snprintf(out + outlen, sizeof(out) - outlen, __VA_ARGS__))
#define NOINLINE __attribute__((noinline))

struct Widget {
	long v[6];
};
static_assert(sizeof(Widget) == 48, "Widget is 48 bytes");

struct Tracked {
	long a, b;
	~Tracked() { sink = this; }
};

struct alignas(64) Aligned {
	char c[128];
};

/* The Itanium ABI's exception header before the thrown object (x86-64). */
static const size_t exc_header = 128;

/* extern "C": the test looks them up by these names */
extern "C" {
NOINLINE Widget *do_new(void) { Widget *p = new Widget(); sink = p; return p; }
NOINLINE int *do_new_array(size_t n) { int *p = new int[n]; sink = p; return p; }
NOINLINE Tracked *do_new_tracked(size_t n) { Tracked *p = new Tracked[n]; sink = p; return p; }
NOINLINE Widget *do_new_nothrow(void) { Widget *p = new (std::nothrow) Widget(); sink = p; return p; }
NOINLINE Widget *do_new_nothrow_array(size_t n) { Widget *p = new (std::nothrow) Widget[n]; sink = p; return p; }
NOINLINE Aligned *do_new_aligned(void) { Aligned *p = new Aligned(); sink = p; return p; }
NOINLINE Aligned *do_new_aligned_array(size_t n) { Aligned *p = new Aligned[n]; sink = p; return p; }
NOINLINE Aligned *do_new_aligned_nothrow(void) { Aligned *p = new (std::nothrow) Aligned(); sink = p; return p; }
NOINLINE char *do_new_nothrow_fail(void) { char *p = new (std::nothrow) char[huge]; sink = p; return p; }
NOINLINE char *do_new_fail(void) { char *p = new char[huge]; sink = p; return p; }

NOINLINE void do_delete(Widget *p) { delete p; }
NOINLINE void do_delete_array(int *p) { delete[] p; }
NOINLINE void do_delete_tracked(Tracked *p) { delete[] p; }
NOINLINE void do_delete_widgets(Widget *p) { delete[] p; }
NOINLINE void do_delete_aligned(Aligned *p) { delete p; }
NOINLINE void do_delete_aligned_array(Aligned *p) { delete[] p; }
NOINLINE void do_delete_raw(void *p) { ::operator delete(p); }
}

int main()
{
	LOG("base %p\n", (void *)main);

	Widget *w = do_new();
	LOG("A malloc 48 %p do_new\n", (void *)w);
	do_delete(w); /* sized: operator delete(void *, size_t) */
	LOG("F free %p\n", (void *)w);
	for (int i = 0; i < 3; i++) { /* one call site, one stack */
		w = do_new();
		LOG("A malloc 48 %p do_new\n", (void *)w);
		do_delete_raw(w);
		LOG("F free %p\n", (void *)w);
	}

	int *ints = do_new_array(1000);
	LOG("A malloc 4000 %p do_new_array\n", (void *)ints);
	do_delete_array(ints);
	LOG("F free %p\n", (void *)ints);

	/* A destructor: the element count is stored before the array. */
	Tracked *t = do_new_tracked(10);
	char *tblock = (char *)t - sizeof(size_t);
	LOG("A malloc %zu %p do_new_tracked\n", 10 * sizeof(Tracked) + sizeof(size_t), (void *)tblock);
	do_delete_tracked(t);
	LOG("F free %p\n", (void *)tblock);

	Widget *nw = do_new_nothrow();
	LOG("A malloc 48 %p do_new_nothrow\n", (void *)nw);
	do_delete(nw);
	LOG("F free %p\n", (void *)nw);

	/* nothrow new[] calls new[], which jumps to new */
	Widget *nwa = do_new_nothrow_array(3);
	LOG("A malloc 144 %p do_new_nothrow_array\n", (void *)nwa);
	do_delete_widgets(nwa);
	LOG("F free %p\n", (void *)nwa);

	Aligned *a = do_new_aligned();
	LOG("A aligned_alloc 128 %p do_new_aligned\n", (void *)a);
	do_delete_aligned(a);
	LOG("F free %p\n", (void *)a);

	Aligned *aa = do_new_aligned_array(2);
	LOG("A aligned_alloc 256 %p do_new_aligned_array\n", (void *)aa);
	do_delete_aligned_array(aa);
	LOG("F free %p\n", (void *)aa);

	Aligned *an = do_new_aligned_nothrow();
	LOG("A aligned_alloc 128 %p do_new_aligned_nothrow\n", (void *)an);
	do_delete_aligned(an);
	LOG("F free %p\n", (void *)an);

	/* Fails: the throwing new inside throws bad_alloc, caught inside. */
	if (do_new_nothrow_fail() != nullptr)
		LOG("unexpected: new (nothrow) char[%zu] succeeded\n", (size_t)huge);
	LOG("X %zu\n", sizeof(std::bad_alloc) + exc_header);

	/* Throws, caught here. */
	try {
		do_new_fail();
		LOG("unexpected: new char[%zu] succeeded\n", (size_t)huge);
	} catch (const std::bad_alloc &e) {
		LOG("A malloc %zu %p -\n", sizeof(std::bad_alloc) + exc_header, (const char *)&e - exc_header);
		sink = (void *)((const char *)&e - exc_header);
	}
	LOG("F free %p\n", sink);

	Widget *leak = do_new();
	LOG("A malloc 48 %p do_new\n", (void *)leak);
	LOG("leak 48 do_new malloc\n");

	if (write(1, out, outlen) != (ssize_t)outlen)
		return 1;
	return 0;
}
