/*
 * dlopen.c - allocations from a library loaded at run time.
 *
 * gt-dlopen LIB [close]: dlopens LIB (libgt-dl.so, from gtdl.c), calls its
 * gtdl_leak() (3 x 777 bytes, leaked) and gtdl_temp() (888 bytes, freed at
 * once: temporary); with "close", dlcloses it again (the leaked blocks stay
 * allocated, the library's code is gone by the time of the report); then
 * main_after() allocates 123 bytes, leaked.
 *
 * Own figures: 5 allocations (2331 + 888 + 123 = 3342 bytes), 1 free,
 * 4 leaked (2454 bytes), 1 temporary.  dlopen and dlclose allocate and free
 * inside the dynamic loader: those sites are the loader's, and the test adds
 * them to the totals it expects.
 */
#include "gt.h"

#include <dlfcn.h>

static void *kept;

NOINLINE void main_after(void)
{
	kept = malloc(123); /* @site:main_after */
	gt_keep(kept);
}

int main(int argc, char **argv)
{
	GT_REQUIRE(argc >= 2);
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	GT_REQUIRE(h);
	void (*leak)(void) = (void (*)(void))dlsym(h, "gtdl_leak");
	void (*temp)(void) = (void (*)(void))dlsym(h, "gtdl_temp");
	GT_REQUIRE(leak && temp);
	leak(); /* @call:gtdl_leak */
	temp(); /* @call:gtdl_temp */
	if (argc > 2 && !strcmp(argv[2], "close"))
		GT_REQUIRE(dlclose(h) == 0);
	main_after(); /* @call:main_after */
	return 0;
}
