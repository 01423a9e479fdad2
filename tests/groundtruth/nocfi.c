/*
 * nocfi.c - allocations made from functions written in assembly without
 * unwind information (CFI), whose %rbp points at a pair of words a
 * frame-pointer walk takes for a frame: 0 for the caller's %rbp, and for
 * the return address an address that is no code.  libffi's ffi_call_unix64
 * does much the same (python3's ctypes): a walk that trusted the guess
 * invented a frame "0x7ffc..." after it.  (x86-64 only: the assembly is.)
 *
 * gt_nocfi_stack(n) keeps a stack address there, gt_nocfi_data(n) the
 * address of a word of the program's data (mapped, not executable); each
 * calls malloc(n) and returns the block, which main keeps.  main calls
 * gt_nocfi_stack(555) 3 times and gt_nocfi_data(444) 2 times, each from
 * one call site: 5 allocations, 1,665 + 888 bytes, all leaked, two sites.
 * Their stacks cannot go past the assembly function (no rule says where
 * its caller's frame is): the shim's unwinder ends them there, and the BPF
 * unwinder must too, counting each of the 5 stacks as cut, never taking
 * the word for a frame.
 */
#include "gt.h"

#if defined(__x86_64__)
void *gt_nocfi_stack(size_t n);
void *gt_nocfi_data(size_t n);
long gt_nocfi_word;

/* push %rbp; room for the pair; the pair [0, FAKE]; %rbp at it; malloc(n)
 * (%rdi is n already); back.  %rsp is 16-aligned at the call.  No .cfi_*
 * directives: no FDE covers it. */
#define NOCFI_FN(name, fake)                  \
	".text\n"                             \
	".globl " name "\n"                   \
	".type " name ", @function\n"         \
	name ":\n"                            \
	"	push %rbp\n"                    \
	"	sub $16, %rsp\n"                \
	"	movq $0, (%rsp)\n"              \
	"	lea " fake ", %rax\n"           \
	"	mov %rax, 8(%rsp)\n"            \
	"	mov %rsp, %rbp\n"               \
	"	call malloc@PLT\n"              \
	"	add $16, %rsp\n"                \
	"	pop %rbp\n"                     \
	"	ret\n"                          \
	".size " name ", .-" name "\n"

__asm__(NOCFI_FN("gt_nocfi_stack", "8(%rsp)") NOCFI_FN("gt_nocfi_data", "gt_nocfi_word(%rip)"));

int main(void)
{
	for (int i = 0; i < GT_N(3); i++)
		gt_keep(gt_nocfi_stack(555));
	for (int i = 0; i < GT_N(2); i++)
		gt_keep(gt_nocfi_data(444));
	return 0;
}
#else
int main(void)
{
	gt_say("gt-nocfi: x86-64 assembly, not built for this machine\n");
	return 77;
}
#endif
