/*
 * leaker_lib.c - the library leaker.c dlopens once traced: lib_leak()
 * leaks 10 blocks of 64 bytes a call, from code that was not mapped when
 * the tracer attached (built without frame pointers, like the program).
 */
#include <stdlib.h>

void *volatile lib_sink;

__attribute__((noinline)) void lib_leak(void)
{
	for (int i = 0; i < 10; i++)
		lib_sink = malloc(64);
}
