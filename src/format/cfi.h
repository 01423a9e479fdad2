/*
 * cfi.h - x86-64 call frame information (.eh_frame) compiled into unwind
 * rules: how to find a frame's CFA, return address and saved %rbp at a PC.
 *
 * One compiler for both unwinders: the shim's (capture/shim/unwind_x86_64.c,
 * one rule at a time, from the .eh_frame_hdr of a module mapped in its own
 * process) and the BPF backend's tables (capture/bpf/unwind.c, every row of
 * an object's .eh_frame read from its file, for the kernel to search).  So
 * it allocates nothing and calls no libc function that may (the shim runs
 * it inside the traced program).
 *
 * Only what the x86-64 ABI needs is kept: the CFA (rsp+off, rbp+off,
 * *(rbp+off) for gcc's realigned frames, and the PLT expression), the return
 * address (must be at CFA-8, else the rule is STOP) and %rbp, the only
 * callee-saved register a CFA rule depends on.  An AArch64 version would
 * track x29 (the frame pointer) in %rbp's place and x30 (the link register)
 * as the return address, whose rule at a leaf is "in the register" rather
 * than "at CFA+off": a kind for the return address would then be added to
 * struct mt_cfi_rule.
 */
#ifndef MEMTRACE_FORMAT_CFI_H
#define MEMTRACE_FORMAT_CFI_H

#include <stddef.h>
#include <stdint.h>

/* How the CFA is found (struct mt_cfi_rule.kind).  The values are part of
 * the shim's cache words (3 bits) and of the BPF tables (memtrace.h). */
enum {
	MT_CFI_NONE = 0,      /* no rule (never in a table) */
	MT_CFI_RSP = 1,	      /* CFA = rsp + off */
	MT_CFI_RBP = 2,	      /* CFA = rbp + off */
	MT_CFI_DEREF_RBP = 3, /* CFA = *(rbp + off)  (gcc DRAP realigned frame) */
	MT_CFI_STOP = 4,      /* outermost frame (rip undefined) or unsupported */
	MT_CFI_SIGNAL = 5,    /* sigreturn trampoline: registers in the ucontext */
	MT_CFI_PLT = 6,	      /* CFA = rsp + off, + 8 if (pc & 15) >= plt_thr */
};
/* Where the caller's %rbp is (struct mt_cfi_rule.bhow). */
enum {
	MT_CFI_B_SAME = 0, /* unchanged */
	MT_CFI_B_AT_CFA,   /* *(CFA + boff) */
	MT_CFI_B_AT_RBP,   /* *(rbp + boff) */
	MT_CFI_B_UNDEF,	   /* unknown from here on */
};

struct mt_cfi_rule {
	int kind, bhow;
	int64_t off, boff;
	int plt_thr;
};

/* A parsed CIE.  ADJ is added to the address of a pc-relative pointer:
 * 0 when the section is read where it is mapped, (its address) - (where it
 * was read into) when it was read from a file. */
struct mt_cfi_cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int signal, has_z;
	intptr_t adj;
	const uint8_t *insn, *end;
};

/* The rule at Q (a PC; for a return address, the address before it) of
 * the module whose .eh_frame_hdr is at HDR in this process's memory.  PC is
 * the frame's exact PC (the PLT form depends on it).  Returns 1 with R set
 * (STOP when there is no FDE or its CFI is not understood). */
int mt_cfi_rule_from_hdr(const uint8_t *hdr, uintptr_t q, uintptr_t pc, struct mt_cfi_rule *r);

/* Every row of the .eh_frame section read into DATA[0..SIZE), which is at
 * address VADDR: FN(CTX, LO, HI, RULE) for each address range [LO, HI) and
 * its rule, FDE by FDE in the section's order (not sorted; ranges of
 * different FDEs do not overlap in sane objects).  A FDE whose CFI is not
 * understood gives one STOP row over its whole range.  Returns the number of
 * FDEs, or -1 if the section is malformed before its end (the rows given so
 * far stand). */
typedef void (*mt_cfi_row_fn)(void *ctx, uint64_t lo, uint64_t hi, const struct mt_cfi_rule *r);
long mt_cfi_rows(const uint8_t *data, size_t size, uint64_t vaddr, mt_cfi_row_fn fn, void *ctx);

#endif
