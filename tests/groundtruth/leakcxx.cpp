/*
 * leakcxx.cpp - C++ objects for the leak scan, known by construction: an
 * object of a class with two bases is pointed at through its second base,
 * 16 bytes into it on a 64-bit machine (multiple inheritance), which
 * memcheck without its heuristics calls possibly lost, as the scan must.
 *
 *   object (a Both: 40 bytes, its Right part at +16)   kind
 *   a global Right* holds it (this + 16)               possible
 *   a global Left* holds it (its start)                reachable
 *   nothing holds it                                   definite
 *
 * Prints "block ADDR SIZE KIND" for each and "ready", then exits: the
 * scan at the exit, as leakkinds.c's `exit`.
 */
#include "gt.h"

#include <new>
#include <stdint.h>

struct Left {
	virtual ~Left() {}
	long l;
};

struct Right {
	virtual ~Right() {}
	long r;
};

struct Both : Left, Right {
	long b;
};

Right *g_right;
Left *g_left;

static void say_block(const void *p, size_t size, const char *kind)
{
	gt_say("block %lx %zu %s\n", (unsigned long)(uintptr_t)p, size, kind);
}

NOINLINE static Both *make(void)
{
	Both *o = new Both();
	gt_keep(o);
	return o;
}

NOINLINE static void make_blocks(void)
{
	static_assert(sizeof(Both) == 5 * sizeof(void *), "Left 2 words, Right 2, b 1");
	Both *a = make();
	g_right = a;
	if ((uintptr_t)static_cast<Right *>(a) - (uintptr_t)a != sizeof(Left))
		gt_say("unexpected layout\n");
	say_block(a, sizeof *a, "possible");
	Both *b = make();
	g_left = b;
	say_block(b, sizeof *b, "reachable");
	Both *c = make();
	say_block(c, sizeof *c, "definite");
	c = nullptr;
}

int main(int argc, char **argv)
{
	(void)argc, (void)argv;
	make_blocks();
	gt_wipe_stack();
	gt_say("ready\n");
	return 0;
}
