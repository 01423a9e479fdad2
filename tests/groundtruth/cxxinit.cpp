/*
 * cxxinit.cpp - allocations made before main: a shared library's static
 * initializer (cxxinit_lib.cpp) and the C++ runtime's own; and blocks the
 * C and C++ runtimes keep until exit, which are no leaks.
 *
 * Before main, the loader runs the initializers of the libraries:
 *   libstdc++ allocates its emergency exception pool (one block, its size
 *             set by libstdc++: 72,704 B for GCC 12's), kept until exit:
 *             held by the runtime, not leaked;
 *   gtlib's Registry: lib_init_block()   3 x new char[1000], kept: leaked
 *                     lib_init_scratch() 1 x new char[500], deleted at once
 *                                        (temporary)
 * main:
 *   make_longs()      5 x new long long[10] (80 B), each deleted by main at once
 *                     (temporary)
 *   gtlib::lib_work() 2 x new char[64], kept: leaked
 *   fputs to stdout:  stdio allocates stdout's buffer (one block, its size
 *                     st_blksize of the output), kept until exit by glibc,
 *                     freed only by __libc_freeres: held by the runtime.
 *
 * So: the program's own figures 11 allocations (3000 + 500 + 400 + 128 =
 * 4028 B), 6 frees, 6 temporary, 5 leaked (3128 B); the runtime holds
 * exactly 2 blocks at exit.  valgrind counts the same blocks (it sees
 * allocations from the first): the shim must record those made before its
 * constructor, and both backends must show the runtime's two apart.
 */
#include <cstdio>

#define NOINLINE __attribute__((noinline))

static inline void keep(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

namespace gtlib {
char *lib_work();
}

NOINLINE long long *make_longs()
{
	long long *p = new long long[10]; /* @site:make_longs */
	keep(p);
	return p;
}

int main()
{
	for (int i = 0; i < 5; i++)
		delete[] make_longs();
	char *a = gtlib::lib_work(); /* @call:lib_work */
	char *b = gtlib::lib_work();
	keep(a);
	keep(b);
	fputs("gt-cxxinit done\n", stdout);
	return 0;
}
