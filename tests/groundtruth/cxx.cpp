/*
 * cxx.cpp - C++ allocations: new/delete, new[]/delete[], nothrow and
 * over-aligned new, and an exception thrown and caught.
 *
 *   function              what                         requested bytes
 *   gt::make_widget()     new Widget, twice, leaked    2 x 48
 *   gt::churn_widget()    new Widget; delete           48, temporary (the
 *                                                      delete is the next event)
 *   gt::make_ints()       new int[1000], leaked        4000
 *   gt::make_doubles()    new double[300]; delete[]    2400 (freed in main)
 *   gt::make_tracked()    new Tracked[10]; delete[]    10 x 16 + 8 = 168: Tracked
 *                                                      has a destructor, so the
 *                                                      Itanium C++ ABI puts the
 *                                                      element count (a size_t
 *                                                      "cookie") before the array
 *   gt::make_nothrow()    new (std::nothrow) Widget    48, leaked
 *   gt::make_aligned()    new Aligned (alignas 64)     128, deleted in main;
 *                                                      operator new(size_t,
 *                                                      align_val_t) uses an
 *                                                      aligned allocator
 *   gt::throw_it(int)     throw Error (48 bytes)       48 + 128: libstdc++'s
 *                                                      __cxa_allocate_exception
 *                                                      allocates the object
 *                                                      behind a 128-byte
 *                                                      __cxa_refcounted_exception
 *                                                      header (x86-64); freed
 *                                                      when the catch ends
 *
 * Own totals: 9 allocations, 96+48+4000+2400+168+48+128+176 = 7064 bytes,
 * 5 frees (churn, doubles, tracked, aligned, the exception), 4 leaked
 * (2 widgets, the ints, the nothrow widget: 4144 bytes).  Each freed block
 * is freed right after it was allocated, with no allocator call in between
 * (a catch does not allocate): 5 temporary.  The two calls of make_widget
 * come from two lines of main: two call stacks, two sites of 1 allocation.
 *
 * Live bytes: 48, 96, 144 -> 96 (churn), 4096 (ints), 6496 (doubles) -> 4096,
 * 4264 (tracked) -> 4096, 4144 (nothrow), 4272 (aligned) -> 4144,
 * 4320 (exception) -> 4144.  Peak 6496 in 4 blocks: the widgets 48 each, the
 * ints 4000, the doubles 2400; the others had nothing live then.
 *
 * operator new/new[] call malloc on the program's behalf: the report must
 * drop their frames, so that frames[0] is the function above, demangled.
 * No iostream: its initialisation would allocate on its own.
 */
#include <cstddef>
#include <cstdlib>
#include <new>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static inline void keep(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

struct Widget {
	long long v[6]; /* long long: the same 48 bytes on 32-bit ABIs */
};
static_assert(sizeof(Widget) == 48, "Widget is 48 bytes");

struct Tracked {
	long long a, b;
	~Tracked() { keep(this); }
};
static_assert(sizeof(Tracked) == 16, "Tracked is 16 bytes");

struct alignas(64) Aligned {
	char c[128];
};
static_assert(sizeof(Aligned) == 128, "Aligned is 128 bytes");

struct Error {
	long long code[6];
};
static_assert(sizeof(Error) == 48, "Error is 48 bytes");

namespace gt {

NOINLINE Widget *make_widget()
{
	Widget *w = new Widget(); /* @site:make_widget */
	keep(w);
	return w;
}

NOINLINE void churn_widget()
{
	Widget *w = new Widget(); /* @site:churn_widget */
	keep(w);
	delete w;
}

NOINLINE int *make_ints()
{
	int *p = new int[1000]; /* @site:make_ints */
	keep(p);
	return p;
}

NOINLINE double *make_doubles()
{
	double *p = new double[300]; /* @site:make_doubles */
	keep(p);
	return p;
}

NOINLINE Tracked *make_tracked()
{
	Tracked *p = new Tracked[10]; /* @site:make_tracked */
	keep(p);
	return p;
}

NOINLINE Widget *make_nothrow()
{
	Widget *w = new (std::nothrow) Widget(); /* @site:make_nothrow */
	keep(w);
	return w;
}

NOINLINE Aligned *make_aligned()
{
	Aligned *a = new Aligned(); /* @site:make_aligned */
	keep(a);
	return a;
}

NOINLINE void throw_it(int code)
{
	Error e = {};
	e.code[0] = code;
	throw e; /* @site:throw_it */
}

} // namespace gt

static Widget *w1, *w2, *w3;
static int *ints;

int main()
{
	w1 = gt::make_widget(); /* @call:make_widget */
	w2 = gt::make_widget(); /* @call:make_widget_again */
	gt::churn_widget();
	ints = gt::make_ints();
	delete[] gt::make_doubles();
	delete[] gt::make_tracked();
	w3 = gt::make_nothrow();
	Aligned *a = gt::make_aligned();
	if (reinterpret_cast<std::size_t>(a) % 64)
		_exit(3);
	delete a;
	int caught = 0;
	try {
		gt::throw_it(42); /* @call:throw_it */
	} catch (const Error &e) {
		caught = (int)e.code[0];
	}
	keep(w1);
	keep(w2);
	keep(w3);
	keep(ints);
	return caught == 42 ? 0 : 4;
}
