/*
 * leakkinds.c - live blocks of every leak kind, known by construction, for
 * the leak scan and for valgrind's memcheck (--leak-check-heuristics=none).
 *
 *   block                                   bytes  kind
 *   a global points at it                     100  reachable
 *   a global points 10 bytes into it          200  possible
 *   a list head nothing points at              48  definite
 *     its two further nodes                  2x48  indirect
 *   a block whose pointer was dropped         300  definite
 *   a cycle of two nobody holds            64, 72  definite (the lower), indirect
 *   another thread's stack holds it           400  reachable
 *   an mmap'd page holds it                   500  reachable
 *   only a register of a spinning thread      600  reachable (`gt-leakkinds hold` only:
 *                                                   at an exit the thread is gone)
 *   `hold N`: N more threads, each holding     32  reachable
 *     a block on its stack
 *
 * Prints "block ADDR SIZE KIND" for each (hexadecimal address, decimal size)
 * and "ready"; then `hold` waits to be scanned (and killed), `exit` exits.
 * Everything the blocks are made with is out of the main thread's way by
 * then: made in a function that has returned, its stack wiped.
 */
#include "gt.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

void *g_reach;
char *g_interior;
static void *volatile handoff;

static void say_block(const void *p, size_t size, const char *kind)
{
	gt_say("block %lx %zu %s\n", (unsigned long)(uintptr_t)p, size, kind);
}

/* Keeps its block in a stack slot until the process ends. */
static void *stack_holder(void *arg)
{
	(void)arg;
	void *volatile keep = handoff;
	handoff = NULL;
	for (;;)
		pause();
	gt_keep(keep);
	return NULL;
}

/* Moves the block into a register, clears the only other copy, and spins:
 * the block is in that register alone. */
static void *register_holder(void *arg)
{
	(void)arg;
#if defined(__x86_64__)
	__asm__ volatile("mov %0, %%r12\n\t"
			 "movq $0, %0\n\t"
			 "1: pause\n\t"
			 "jmp 1b"
			 : "+m"(handoff)
			 :
			 : "r12", "memory");
#elif defined(__aarch64__)
	__asm__ volatile("ldr x19, %0\n\t"
			 "str xzr, %0\n\t"
			 "1: yield\n\t"
			 "b 1b"
			 : "+m"(handoff)
			 :
			 : "x19", "memory");
#endif
	return NULL;
}

static void hand_to(void *(*fn)(void *), void *block)
{
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	handoff = block;
	pthread_create(&t, &a, fn, NULL);
	pthread_attr_destroy(&a);
	while (handoff)
		sched_yield();
}

NOINLINE static void make_blocks(int with_register, int threads)
{
	g_reach = malloc(100);
	memset(g_reach, 0, 100);
	say_block(g_reach, 100, "reachable");
	char *in = malloc(200);
	memset(in, 0, 200);
	g_interior = in + 10;
	say_block(in, 200, "possible");

	void **head = malloc(48), **n2 = malloc(48), **n3 = malloc(48);
	memset(head, 0, 48);
	memset(n2, 0, 48);
	memset(n3, 0, 48);
	head[0] = n2;
	n2[0] = n3;
	say_block(head, 48, "definite");
	say_block(n2, 48, "indirect");
	say_block(n3, 48, "indirect");

	void *lost = malloc(300);
	memset(lost, 0, 300);
	say_block(lost, 300, "definite");

	void **c1 = malloc(64), **c2 = malloc(72);
	memset(c1, 0, 64);
	memset(c2, 0, 72);
	c1[0] = c2;
	c2[1] = c1;
	int c1_low = (uintptr_t)c1 < (uintptr_t)c2;
	say_block(c1, 64, c1_low ? "definite" : "indirect");
	say_block(c2, 72, c1_low ? "indirect" : "definite");

	void *st = malloc(400);
	memset(st, 0, 400);
	say_block(st, 400, "reachable");
	hand_to(stack_holder, st);

	void **page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	page[5] = malloc(500);
	memset(page[5], 0, 500);
	say_block(page[5], 500, "reachable");

#if defined(__x86_64__) || defined(__aarch64__)
	if (with_register) {
		void *reg = malloc(600);
		memset(reg, 0, 600);
		say_block(reg, 600, "reachable");
		hand_to(register_holder, reg);
	}
#else
	(void)with_register;
#endif
	for (int i = 0; i < threads; i++) {
		void *b = malloc(32);
		memset(b, 0, 32);
		say_block(b, 32, "reachable");
		hand_to(stack_holder, b);
	}
}

int main(int argc, char **argv)
{
	int hold = argc > 1 && !strcmp(argv[1], "hold");
	make_blocks(hold, hold && argc > 2 ? atoi(argv[2]) : 0);
	gt_wipe_stack();
	gt_say("ready\n");
	if (hold)
		for (;;)
			pause();
	return 0;
}
