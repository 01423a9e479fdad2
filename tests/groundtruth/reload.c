/*
 * reload.c - a library loaded at the very address where another was until
 * its dlclose.
 *
 * gt-reload LIBA LIBB: dlopens LIBA (libgt-reload-a.so), calls its
 * reload_a() (2 x malloc(1111), kept), dlcloses it; dlopens LIBB
 * (libgt-reload-b.so), calls reload_b() (3 x malloc(2222), kept).  Both
 * libraries are built from reloadlib.c, the same code and layout (the
 * names differ only in their letter), so the loader maps LIBB where LIBA
 * was: the program checks that it did (their load addresses, from
 * dladdr, are equal), and fails (exit 3) if not, rather than test
 * nothing.  Both go through the same calls (one in main's loop, one in
 * load_and_call) to code at the same offsets (the sizes and counts have
 * encodings of the same length), so the two stacks are the same
 * addresses: only the library mapped there when each was taken tells
 * them apart.
 */
#include "gt.h"

#include <dlfcn.h>

NOINLINE static void *load_and_call(const char *lib, const char *fn, void **base)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	GT_REQUIRE(h);
	void (*f)(void) = (void (*)(void))dlsym(h, fn);
	GT_REQUIRE(f);
	Dl_info info;
	GT_REQUIRE(dladdr((void *)f, &info) && info.dli_fbase);
	*base = info.dli_fbase;
	f(); /* @call:reload */
	return h;
}

int main(int argc, char **argv)
{
	GT_REQUIRE(argc == 3);
	static const char *const fns[2] = { "reload_a", "reload_b" };
	void *base[2];
	for (int i = 0; i < GT_N(2); i++) {
		void *h = load_and_call(argv[1 + i], fns[i], &base[i]); /* @call:load */
		if (i == 0)
			GT_REQUIRE(dlclose(h) == 0);
	}
	/* the case is about this: B where A was */
	GT_REQUIRE(base[0] == base[1]);
	gt_say("both at %p\n", base[0]);
	return 0;
}
