/*
 * dlopen.c - allocations from a library loaded at run time.
 *
 * gt-dlopen LIB [close|settle]: dlopens LIB (libgt-dl.so, from gtdl.c), calls its
 * gtdl_leak() (3 x 777 bytes, leaked) and gtdl_temp() (888 bytes, freed at
 * once: temporary); with "close", dlcloses it again (the leaked blocks stay
 * allocated, the library's code is gone by the time of the report); then
 * main_after() allocates 123 bytes, leaked.  With "settle", it sleeps 300 ms
 * between the dlopen and the calls: time for the BPF backend to read the
 * library's unwind table once it sees the library mapped (a dlopen), which it
 * must not leave to its next scan a second later (the stacks through the
 * library then stopped at its frame).  A call right after the dlopen can
 * still beat the table: the kernel does not wait for it.
 *
 * Own figures: 5 allocations (2331 + 888 + 123 = 3342 bytes), 1 free,
 * 4 leaked (2454 bytes), 1 temporary.  dlopen and dlclose allocate and free
 * inside the dynamic loader: those sites are the loader's, and the test adds
 * them to the totals it expects.
 */
#include "gt.h"

#include <dlfcn.h>
#include <time.h>

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
	if (argc > 2 && !strcmp(argv[2], "settle")) {
		struct timespec ts = { 0, 300000000 };
		nanosleep(&ts, NULL);
	}
	leak(); /* @call:gtdl_leak */
	temp(); /* @call:gtdl_temp */
	if (argc > 2 && !strcmp(argv[2], "close"))
		GT_REQUIRE(dlclose(h) == 0);
	main_after(); /* @call:main_after */
	return 0;
}
