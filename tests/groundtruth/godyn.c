/*
 * godyn.c - looks like a Go program that uses cgo: dynamically linked, with
 * the .go.buildinfo section the Go linker writes, and three C allocations
 * of 300 bytes (kept): what memtrace sees of such a program.
 */
#include "gt.h"

__attribute__((section(".go.buildinfo"), used)) static const char buildinfo[32] = "\xff Go buildinf:";

int main(void)
{
	for (int i = 0; i < GT_N(3); i++)
		gt_keep(malloc(300));
	return 0;
}
