/*
 * cxxinit_lib.cpp - the shared library of gt-cxxinit (see cxxinit.cpp): a
 * static object whose constructor allocates, run by the loader before main
 * (and before the shim's own constructor, if the shim waited for it).
 */
#include <cstddef>

#define NOINLINE __attribute__((noinline))
#define EXPORT __attribute__((visibility("default")))

static inline void keep(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

namespace gtlib {

char *table[3];

NOINLINE char *lib_init_block()
{
	char *p = new char[1000]; /* @site:lib_init_block */
	keep(p);
	return p;
}

NOINLINE void lib_init_scratch()
{
	char *p = new char[500]; /* @site:lib_init_scratch */
	keep(p);
	delete[] p;
}

struct Registry {
	Registry()
	{
		for (int i = 0; i < 3; i++)
			table[i] = lib_init_block();
		lib_init_scratch();
	}
};

static Registry registry;

EXPORT NOINLINE char *lib_work()
{
	char *p = new char[64]; /* @site:lib_work */
	keep(p);
	return p;
}

} // namespace gtlib
