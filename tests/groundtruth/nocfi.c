/*
 * nocfi.c - an allocation made from a function written in assembly without
 * unwind information (CFI), whose %rbp points at a pair of words a
 * frame-pointer walk takes for a frame: 0 for the caller's %rbp, and a
 * stack address for the return address.  libffi's ffi_call_unix64 does
 * much the same (python3's ctypes): a walk that trusted the guess invented
 * a frame "0x7ffc..." after it.  (x86-64 only: the assembly is.)
 *
 * main calls gt_nocfi_alloc(555) 3 times from one call site; it calls
 * malloc(555) and returns the block, which main keeps: 3 allocations,
 * 1,665 bytes, all leaked, one site.  Its stack cannot go past
 * gt_nocfi_alloc (no rule says where its caller's frame is): the shim's
 * unwinder ends it there, and the BPF unwinder must too, counting each of
 * the 3 stacks as cut, never taking the stack address for a frame.
 */
#include "gt.h"

#if defined(__x86_64__)
void *gt_nocfi_alloc(size_t n);

/* push %rbp; room for the pair; the pair [0, its own address + 8]; %rbp at
 * it; malloc(n) (%rdi is n already); back.  %rsp is 16-aligned at the
 * call.  No .cfi_* directives: no FDE covers it. */
__asm__(".text\n"
	".globl gt_nocfi_alloc\n"
	".type gt_nocfi_alloc, @function\n"
	"gt_nocfi_alloc:\n"
	"	push %rbp\n"
	"	sub $16, %rsp\n"
	"	movq $0, (%rsp)\n"
	"	lea 8(%rsp), %rax\n"
	"	mov %rax, 8(%rsp)\n"
	"	mov %rsp, %rbp\n"
	"	call malloc@PLT\n" /* @site:gt_nocfi_alloc */
	"	add $16, %rsp\n"
	"	pop %rbp\n"
	"	ret\n"
	".size gt_nocfi_alloc, .-gt_nocfi_alloc\n");

int main(void)
{
	for (int i = 0; i < GT_N(3); i++)
		gt_keep(gt_nocfi_alloc(555));
	return 0;
}
#else
int main(void)
{
	gt_say("gt-nocfi: x86-64 assembly, not built for this machine\n");
	return 77;
}
#endif
