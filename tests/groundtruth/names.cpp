/*
 * names.cpp - C++ names a terminal cannot hold and a stack deeper than the
 * recorder's limit, for the text outputs' folding and fitting (report
 * --width, --full-names).  Every function below is named with a type whose
 * demangled spelling runs to about a thousand columns (gt::Deep: maps of
 * vectors of pairs of strings); none of those containers is ever built.
 *
 *   function                                  what                 leaked bytes
 *   gt::Table<gt::Deep, int>::grow(unsigned long)  malloc(1000)        1000
 *   bool gt::operator< <gt::Deep>(Box, Box)    malloc(300)          300
 *   gt::each<gt::Deep>(int)::{lambda(int)#1}   malloc(100 + i),     100 + 101
 *                                              i = 0, 1 (2 blocks)
 *   void gt::descend<gt::Deep>(int)            malloc(700) at the   700
 *                                              end of a 200-deep
 *                                              recursion
 *
 * Totals: 5 allocations, 2201 bytes, none freed: all leaked.  The deep
 * stack is cut at the recorder's limit (128 frames): in a bottom-up tree it
 * is one chain of single callers, each weighing 700 bytes.
 */
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#define NOINLINE __attribute__((noinline))

static inline void keep(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static volatile int hide_depth = 200; /* not a constant: the recursion stays */

namespace gt {

using Deep = std::map<
	std::string,
	std::vector<std::pair<std::string, std::map<int, std::vector<std::pair<std::string, std::string>>>>>>;

template <typename T> struct Box {
	int v;
};

template <typename K, typename V> struct Table {
	NOINLINE static void *grow(unsigned long n)
	{
		void *p = malloc(n); /* @site:grow */
		keep(p);
		return p;
	}
};

template <typename T> NOINLINE bool operator<(const Box<T> &a, const Box<T> &b)
{
	void *p = malloc(300); /* @site:less */
	keep(p);
	return a.v < b.v;
}

template <typename T> NOINLINE void each(int n)
{
	auto f = [](int i) NOINLINE {
		void *p = malloc(100 + (unsigned)i); /* @site:lambda */
		keep(p);
	};
	for (int i = 0; i < n; i++)
		f(i);
}

template <typename T> NOINLINE void descend(int d)
{
	if (d > 0) {
		descend<T>(d - 1); /* @call:recurse */
		keep(&d);	   /* no tail call: one frame a level */
		return;
	}
	void *p = malloc(700); /* @site:descend */
	keep(p);
}

} // namespace gt

int main()
{
	keep(gt::Table<gt::Deep, int>::grow(1000)); /* @call:grow */
	gt::Box<gt::Deep> a{ 1 }, b{ 2 };
	keep(&a);
	bool lt = a < b; /* @call:less */
	keep(&lt);
	gt::each<gt::Deep>(2);		 /* @call:each */
	gt::descend<gt::Deep>(hide_depth); /* @call:descend */
	return 0;
}
