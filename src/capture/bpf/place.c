/*
 * place.c - where exactly to put a function's uprobe.
 *
 * A uprobe replaces an instruction with a breakpoint.  When the breakpoint
 * is hit the kernel runs our BPF program and then has to carry out the
 * original instruction: a few it emulates in a fraction of a microsecond
 * (push of a register, relative jumps and calls, conditional jumps:
 * arch/x86/kernel/uprobes.c), anything else it single-steps out of line,
 * about ten times dearer in a virtual machine (0.9 against 10 us, measured
 * on the project's VM).  glibc 2.36 starts free with `test %rdi,%rdi` and posix_memalign,
 * aligned_alloc, valloc, pvalloc with `cmpb $0,...(%rip)`; jemalloc,
 * mimalloc and tcmalloc start malloc and free with moves, compares and
 * tests.  All single-stepped, at every call.
 *
 * So the probe goes further into the function, onto the first instruction
 * the kernel emulates, when everything before it is straight-line code this
 * file understands exactly and that leaves the stack pointer alone: the
 * instructions still run, the probe only sees the registers after them.
 * What the probe needs then still holds:
 *
 * - the arguments: where each one is is tracked through the skipped
 *   instructions (mimalloc's malloc copies %rdi to %rsi, then loads %rdi);
 *   an instruction that would destroy the last copy of an argument ends
 *   the walk.  The probe reads them from there (the registers go to the BPF
 *   program in the probe's cookie);
 * - the return address at (%rsp), for the return probe and the caller: no
 *   skipped instruction may change %rsp or write memory through it;
 * - one hit per call: no direct jump or call in the object may land after
 *   the function's entry and up to the probe (elf.c looks);
 *   the walk stops at any branch, so every call passes the probe once.
 *
 * free only: `test` of its argument followed by `je` may be stepped over
 * too; the branch is taken only by free(NULL), which frees nothing.
 *
 * Instruction lengths must be exact: a breakpoint in the middle of an
 * instruction would corrupt it.  The decoder knows a small set of common
 * forms completely (prefixes, ModRM, SIB, displacement, immediate) and
 * refuses everything else; tests/unit/capture/bpf checks its boundaries against
 * objdump's over every exported function of libc.  Other architectures are
 * probed at the entry.
 */
#include "capture_int.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)

#define X86_RSP 4

/* ModRM operand: its length (ModRM, SIB, displacement), the register of
 * a register operand (mod 3) or the base register of a memory operand
 * (-1: none, RIP-relative or absolute). */
static int modrm(const uint8_t *p, size_t n, uint8_t rex, unsigned *len, int *reg, int *rm_reg,
		 int *mem_base)
{
	if (n < 1)
		return -1;
	uint8_t m = p[0], mod = m >> 6, rm = m & 7;
	unsigned l = 1;

	*reg = ((m >> 3) & 7) | ((rex & 4) ? 8 : 0);
	*rm_reg = -1;
	*mem_base = -1;
	if (mod == 3) {
		*rm_reg = rm | ((rex & 1) ? 8 : 0);
		*len = 1;
		return 0;
	}
	if (rm == 4) { /* SIB */
		if (n < 2)
			return -1;
		uint8_t base = p[1] & 7;
		l = 2;
		if (!(mod == 0 && base == 5))
			*mem_base = base | ((rex & 1) ? 8 : 0);
		if (mod == 0 && base == 5)
			l += 4;
	} else if (mod == 0 && rm == 5) {
		l += 4; /* RIP-relative */
	} else {
		*mem_base = rm | ((rex & 1) ? 8 : 0);
	}
	if (mod == 1)
		l += 1;
	else if (mod == 2)
		l += 4;
	if (l > n)
		return -1;
	*len = l;
	return 0;
}

unsigned mtb_x86_decode(const uint8_t *p, size_t n, struct mtb_x86_insn *in)
{
	unsigned i = 0, ml = 0, imm = 0;
	uint8_t rex = 0;
	int opsize16 = 0, nprefix = 0, reg = -1, rm_reg = -1, base = -1, byteop = 0;
	enum { NONE, W_REG, W_RM, W_RAX, W_OPREG } dst = NONE;

	memset(in, 0, sizeof(*in));
	in->test_reg = in->copy_dst = in->copy_src = -1;
	in->name = "?";
	if (n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) {
		in->name = "endbr64";
		return in->len = 4;
	}
	for (; i < n && i < 4; i++) { /* legacy prefixes we know */
		if (p[i] == 0x66)
			opsize16 = 1;
		else if (p[i] != 0x64 && p[i] != 0x65) /* %fs, %gs */
			break;
		nprefix++;
	}
	if (i < n && (p[i] & 0xf0) == 0x40) {
		rex = p[i++];
		nprefix++;
	}
	if (i >= n)
		return 0;
	uint8_t op = p[i++];
	int w64 = (rex & 8) != 0;
	unsigned imm_z = opsize16 ? 2 : 4; /* imm16/32 */

#define MODRM()                                                          \
	do {                                                             \
		if (modrm(p + i, n - i, rex, &ml, &reg, &rm_reg, &base)) \
			return 0;                                        \
		i += ml;                                                 \
	} while (0)

	if (op >= 0x50 && op <= 0x57) {
		/* push: emulated only plain or with REX.B alone */
		if (opsize16 || (rex && rex != 0x41))
			return 0;
		in->name = "push";
		in->emulated = 1;
		return in->len = i;
	}
	if ((op >= 0x70 && op <= 0x7f) || op == 0xeb) {
		if (nprefix || i + 1 > n)
			return 0;
		in->name = op == 0xeb ? "jmp" : "jcc";
		in->emulated = 1;
		in->jz = op == 0x74;
		return in->len = i + 1;
	}
	if (op == 0xe8 || op == 0xe9) {
		if (nprefix || i + 4 > n)
			return 0;
		in->name = op == 0xe8 ? "call" : "jmp";
		in->emulated = 1;
		return in->len = i + 4;
	}
	switch (op) {
	case 0x00:
	case 0x01:
	case 0x08:
	case 0x09:
	case 0x20:
	case 0x21:
	case 0x28:
	case 0x29:
	case 0x30:
	case 0x31:
	case 0x88:
	case 0x89:
		/* add/or/and/sub/xor/mov r/m, r */
		MODRM();
		byteop = !(op & 1);
		dst = W_RM;
		in->name = op >= 0x88 ? "mov" : "alu";
		if (op == 0x89 && w64 && rm_reg >= 0) {
			in->copy_dst = rm_reg;
			in->copy_src = reg;
		}
		break;
	case 0x02:
	case 0x03:
	case 0x0a:
	case 0x0b:
	case 0x22:
	case 0x23:
	case 0x2a:
	case 0x2b:
	case 0x32:
	case 0x33:
	case 0x8a:
	case 0x8b:
	case 0x63:
	case 0x8d:
		/* add/or/and/sub/xor/mov r, r/m; movsxd; lea */
		MODRM();
		byteop = op == 0x02 || op == 0x0a || op == 0x22 || op == 0x2a || op == 0x32 ||
			 op == 0x8a;
		if (op == 0x8d && rm_reg >= 0)
			return 0;
		dst = W_REG;
		in->name = op == 0x8d ? "lea" : op >= 0x8a ? "mov" : "alu";
		if (op == 0x8b && w64 && rm_reg >= 0) {
			in->copy_dst = reg;
			in->copy_src = rm_reg;
		}
		break;
	case 0x38:
	case 0x39:
	case 0x3a:
	case 0x3b:
	case 0x84:
	case 0x85:
		/* cmp, test: flags */
		MODRM();
		in->name = op >= 0x84 ? "test" : "cmp";
		if (op == 0x85 && w64 && rm_reg >= 0 && rm_reg == reg)
			in->test_reg = reg;
		break;
	case 0x04:
	case 0x0c:
	case 0x24:
	case 0x2c:
	case 0x34:
		imm = 1;
		dst = W_RAX;
		in->name = "alu";
		break;
	case 0x05:
	case 0x0d:
	case 0x25:
	case 0x2d:
	case 0x35:
		imm = imm_z;
		dst = W_RAX;
		in->name = "alu";
		break;
	case 0x3c:
	case 0xa8:
		imm = 1;
		in->name = "cmp";
		break;
	case 0x3d:
	case 0xa9:
		imm = imm_z;
		in->name = "cmp";
		break;
	case 0x80:
	case 0x81:
	case 0x83:
		/* group 1 with an immediate: /7 cmp reads, the others write */
		MODRM();
		byteop = op == 0x80;
		imm = op == 0x81 ? imm_z : 1;
		dst = (reg & 7) == 7 ? NONE : W_RM;
		in->name = (reg & 7) == 7 ? "cmp" : "alu";
		break;
	case 0xc0:
	case 0xc1:
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
		/* shifts and rotates */
		MODRM();
		byteop = !(op & 1);
		imm = op <= 0xc1 ? 1 : 0;
		dst = W_RM;
		in->name = "shift";
		break;
	case 0xc6:
	case 0xc7:
		MODRM();
		byteop = op == 0xc6;
		if ((reg & 7) != 0)
			return 0;
		imm = op == 0xc6 ? 1 : imm_z;
		dst = W_RM;
		in->name = "mov";
		break;
	case 0x90:
		if (rex) /* REX.B 90 exchanges %r8 and %rax */
			return 0;
		in->name = "nop";
		break;
	case 0x0f: {
		if (i >= n)
			return 0;
		uint8_t op2 = p[i++];

		if (op2 == 0x1f) {
			MODRM();
			in->name = "nop";
		} else if (op2 >= 0x80 && op2 <= 0x8f) {
			if (nprefix || i + 4 > n)
				return 0;
			in->name = "jcc";
			in->emulated = 1;
			in->jz = op2 == 0x84;
			return in->len = i + 4;
		} else if (op2 == 0xb6 || op2 == 0xb7 || op2 == 0xbe || op2 == 0xbf ||
			   op2 == 0xaf || (op2 >= 0x40 && op2 <= 0x4f)) {
			MODRM(); /* movzx, movsx, imul, cmov */
			dst = W_REG;
			in->name = "mov";
		} else if (op2 >= 0x90 && op2 <= 0x9f) {
			MODRM(); /* setcc */
			byteop = 1;
			dst = W_RM;
			in->name = "set";
		} else {
			return 0;
		}
		break;
	}
	default:
		if (op >= 0xb8 && op <= 0xbf) {
			/* mov $imm, reg (imm64 with REX.W) */
			imm = w64 ? 8 : imm_z;
			reg = (op & 7) | ((rex & 1) ? 8 : 0);
			dst = W_OPREG;
			in->name = "mov";
			break;
		}
		return 0;
	}
#undef MODRM
	if (i + imm > n)
		return 0;
	in->len = i + imm;
	/* Byte operations without REX name %ah, %ch, %dh, %bh as 4..7: parts
	 * of %rax..%rbx. */
	if (byteop && !rex) {
		if (reg >= 4 && reg <= 7 && dst == W_REG)
			reg -= 4;
		if (rm_reg >= 4 && rm_reg <= 7)
			rm_reg -= 4;
	}
	switch (dst) {
	case NONE:
		break;
	case W_REG:
	case W_OPREG:
		in->writes = (uint16_t)(1u << reg);
		break;
	case W_RAX:
		in->writes = 1;
		break;
	case W_RM:
		if (rm_reg >= 0)
			in->writes = (uint16_t)(1u << rm_reg);
		else if (base == X86_RSP)
			in->stop = 1; /* could overwrite the return address */
		break;
	}
	if (in->writes & (1u << X86_RSP))
		in->stop = 1;
	return in->len;
}

/* SysV argument registers: %rdi, %rsi, %rdx. */
static const uint8_t abi_reg[3] = { 7, 6, 2 };
static const char *const reg_name[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};

static int lowest(uint16_t m)
{
	for (int r = 0; r < 16; r++)
		if (m & (1u << r))
			return r;
	return -1;
}

unsigned mtb_probe_places(const uint8_t *code, size_t n, unsigned nargs, int null_arg_exits,
			  struct mtb_place *out, unsigned max)
{
	uint16_t hold[3] = { 0 };
	unsigned off = 0, np = 0;
	char path[40] = "";
	int tested0 = 0; /* the previous instruction tested argument 0 */

	if (nargs > 3)
		nargs = 3;
	for (unsigned a = 0; a < nargs; a++)
		hold[a] = (uint16_t)(1u << abi_reg[a]);

	uint16_t bounds[MTB_PLACE_MAX_STEPS];
	unsigned nb = 0;

	for (int step = 0; step < MTB_PLACE_MAX_STEPS && off < n && np + 1 < max; step++) {
		struct mtb_x86_insn in;
		unsigned len = mtb_x86_decode(code + off, n - off, &in);

		if (!len)
			break;
		if (in.emulated) {
			struct mtb_place *pl = &out[np++];
			pl->off = off;
			pl->nbounds = nb;
			memcpy(pl->bounds, bounds, nb * sizeof(bounds[0]));
			for (unsigned a = 0; a < 3; a++)
				pl->argreg[a] = a >= nargs || (hold[a] & (1u << abi_reg[a])) ?
							abi_reg[a] :
							(uint8_t)lowest(hold[a]);
			if (off == 0)
				snprintf(pl->why, sizeof(pl->why), "entry (%s, emulated)", in.name);
			else
				snprintf(pl->why, sizeof(pl->why), "+%u, past %s", off, path);
			/* The walk goes on only down free's non-NULL path. */
			if (!(null_arg_exits && tested0 && in.jz))
				break;
		} else if (in.stop) {
			break;
		} else {
			uint16_t before[3] = { hold[0], hold[1], hold[2] };
			int lost = 0;

			for (unsigned a = 0; a < nargs; a++) {
				hold[a] &= (uint16_t)~in.writes;
				if (in.copy_dst >= 0 && (before[a] & (1u << in.copy_src)))
					hold[a] |= (uint16_t)(1u << in.copy_dst);
				lost |= !hold[a];
			}
			if (lost)
				break; /* it would destroy an argument's last copy */
		}
		tested0 = nargs && in.test_reg >= 0 && (hold[0] & (1u << in.test_reg));
		if (strlen(path) + strlen(in.name) + 2 < sizeof(path)) {
			if (path[0])
				strcat(path, ",");
			strcat(path, in.name);
		}
		off += len;
		if (nb < MTB_PLACE_MAX_STEPS)
			bounds[nb++] = (uint16_t)off;
	}
	/* Best (furthest) first; the entry, always possible, last. */
	for (unsigned a = 0, b = np ? np - 1 : 0; np && a < b; a++, b--) {
		struct mtb_place t = out[a];
		out[a] = out[b];
		out[b] = t;
	}
	if (np == 0 || out[np - 1].off != 0) {
		struct mtb_place *pl = &out[np++];
		pl->off = 0;
		pl->nbounds = 0;
		memcpy(pl->argreg, abi_reg, 3);
		snprintf(pl->why, sizeof(pl->why), "entry (single-stepped)");
	}
	for (unsigned k = 0; k < np; k++) {
		int moved = 0;
		for (unsigned a = 0; a < nargs; a++)
			moved |= out[k].argreg[a] != abi_reg[a];
		if (moved && strlen(out[k].why) + 12 < sizeof(out[k].why)) {
			strcat(out[k].why, "; arg0 in %");
			strcat(out[k].why, reg_name[out[k].argreg[0]]);
		}
	}
	return np;
}

#else /* not x86_64: always the entry */

unsigned mtb_probe_places(const uint8_t *code, size_t n, unsigned nargs, int null_arg_exits,
			  struct mtb_place *out, unsigned max)
{
	out[0].off = 0;
	out[0].nbounds = 0;
	out[0].argreg[0] = 0;
	out[0].argreg[1] = 1;
	out[0].argreg[2] = 2;
	snprintf(out[0].why, sizeof(out[0].why), "entry");
	return 1;
}

#endif
