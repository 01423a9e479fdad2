/*
 * test-unwind-arm-signal (ARMv7, the shim's libgcc unwinder): a stack taken
 * in a signal handler ends at the instruction the signal interrupted, even
 * when that instruction comes before its function's prologue.
 *
 * interrupted() (Thumb-2, below) sets up a frame pointer, and its
 * .ARM.exidx entry says so: `vsp = r7; pop {r4, r7, lr}`, true only once
 * its prologue has run.  Its caller poisons r7 (16: the page at 0 is never
 * mapped) and calls it; it traps (udf, SIGILL) before its prologue, the
 * way a timer's signal often lands at a function's first instructions
 * under qemu-user.  The handler takes a stack with mt_unwind and jumps
 * back.  Unwinding interrupted() as if its prologue had run reads r4, r7
 * and lr from address 16: the test dies of SIGSEGV.  The stack must be:
 *   [0] a return address in on_ill (mt_unwind drops itself and take()),
 *   [1] the signal's return trampoline (SIGILL's sa_restorer),
 *   [2] the trapping instruction in interrupted(),
 * and nothing past it.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capture/shim/unwind.h"
#include "check.h"

/* interrupted: `nop; udf` before the prologue (the nop keeps the trap
 * inside the function for an unwinder that looks up pc - 2, as libgcc
 * does), then the prologue its table entry describes.  call_poisoned:
 * calls it with r7 = 16. */
__asm__(".syntax unified\n"
	".thumb\n"
	".text\n"
	".p2align 2\n"
	".globl mt_test_interrupted\n"
	".type mt_test_interrupted, %function\n"
	".thumb_func\n"
	"mt_test_interrupted:\n"
	".fnstart\n"
	"nop\n"
	".globl mt_test_trap\n"
	"mt_test_trap:\n"
	"udf #0\n"
	".save {r4, r7, lr}\n"
	"push {r4, r7, lr}\n"
	".setfp r7, sp\n"
	"mov r7, sp\n"
	"movs r0, #0\n"
	"pop {r4, r7, pc}\n"
	".fnend\n"
	".size mt_test_interrupted, .-mt_test_interrupted\n"
	".globl mt_test_call_poisoned\n"
	".type mt_test_call_poisoned, %function\n"
	".thumb_func\n"
	"mt_test_call_poisoned:\n"
	".fnstart\n"
	".save {r7, lr}\n"
	"push {r7, lr}\n"
	"movs r7, #16\n"
	"bl mt_test_interrupted\n"
	"pop {r7, pc}\n"
	".fnend\n"
	".size mt_test_call_poisoned, .-mt_test_call_poisoned\n");

void mt_test_interrupted(void);
void mt_test_trap(void);
void mt_test_call_poisoned(void);

static sigjmp_buf back;
static uint64_t pcs[32];
static volatile int depth = -1;

__attribute__((noinline)) static void take(void)
{
	depth = mt_unwind(pcs, 32, 0);
}

static void on_ill(int sig)
{
	(void)sig;
	take();
	siglongjmp(back, 1);
}

int main(void)
{
	struct sigaction sa, cur;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_ill;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGILL, &sa, NULL) == 0);
	CHECK(sigaction(SIGILL, NULL, &cur) == 0);
	if (sigsetjmp(back, 1) == 0)
		mt_test_call_poisoned();

	uintptr_t trap = (uintptr_t)&mt_test_trap & ~(uintptr_t)1;
	uintptr_t restorer = (uintptr_t)cur.sa_restorer & ~(uintptr_t)1;
	fprintf(stderr, "%d frames:", depth);
	for (int i = 0; i < depth; i++)
		fprintf(stderr, " %#llx", (unsigned long long)pcs[i]);
	fprintf(stderr, " (trampoline %#lx, trap %#lx)\n", (unsigned long)restorer,
		(unsigned long)trap);
	CHECK_EQ(depth, 3);
	if (depth == 3) {
		CHECK_EQ(pcs[1], restorer);
		CHECK_EQ(pcs[2], trap);
	}
	return failures ? 1 : 0;
}
