/*
 * zlibuser.c - a program that loads zlib itself, as Python's `import zlib`
 * does: the shim must not have loaded it before (issue 34).
 *
 * gt-zlibuser: asks the loader whether libz.so.1 is in the process already
 * (RTLD_NOLOAD) and says so ("zlib before: no"), dlopens it and compresses
 * 64 KiB with compress2 through it, which allocates deflate's state,
 * window, hash chains and pending buffer (5 blocks, freed at once).  The
 * loader's allocations for the dlopen are the ones a zlib the shim needed
 * took away (it found the library loaded and only counted a reference):
 * the test counts them with valgrind, running the program alone.
 */
#include "gt.h"

#include <dlfcn.h>

typedef int (*compress2_fn)(unsigned char *, unsigned long *, const unsigned char *,
			    unsigned long, int);

static unsigned char in[65536], out[70000];

int main(void)
{
	int before = dlopen("libz.so.1", RTLD_LAZY | RTLD_NOLOAD) != NULL;
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	GT_REQUIRE(h);
	compress2_fn compress2 = (compress2_fn)dlsym(h, "compress2");
	GT_REQUIRE(compress2);
	for (size_t i = 0; i < sizeof in; i++)
		in[i] = (unsigned char)(i * 7 / 13);
	unsigned long n = sizeof out;
	GT_REQUIRE(compress2(out, &n, in, sizeof in, 6) == 0);
	gt_say("zlib before: %s\ncompressed: %lu\n", before ? "yes" : "no", n);
	return 0;
}
