/*
 * bpf_capture_elf.c - which allocator functions an ELF object defines, and
 * the exact place each one is probed.
 *
 * A uprobe replaces an instruction with a breakpoint.  When the breakpoint
 * is hit the kernel runs our BPF program and then has to execute the
 * original instruction: a few (push of a register, jumps, calls) it emulates
 * in a fraction of a microsecond; anything else it single-steps out of line,
 * which costs about ten times more in a virtual machine (design.md:
 * 0.9 us against 10 us).  glibc 2.36 starts free with `test %rdi,%rdi` and
 * posix_memalign, aligned_alloc, valloc and pvalloc with
 * `cmpb $0,...(%rip)`, all single-stepped.  So the probe goes past such
 * leading instructions when that is provably harmless:
 *
 * - only instructions of a small table are stepped over, each of which
 *   changes at most the flags and %rax: never an argument register (rdi,
 *   rsi, rdx, rcx, r8, r9) nor %rsp, so that at the probe the arguments are
 *   the caller's and the return address is still at (%rsp), which the
 *   return probe needs;
 * - the instruction the probe lands on must be one the kernel emulates;
 * - for free only (NULL_ARG_EXITS), `test %rdi,%rdi; je` is stepped over
 *   too: the jump is taken only by free(NULL), which frees nothing;
 * - no direct jump or call anywhere in the object's code may land on the
 *   chosen place (it would run the probe a second time or with other
 *   registers); if one does, the next earlier candidate is used.
 *
 * Anything else is probed at its first instruction.  Other architectures
 * are always probed at the entry.
 */
#include "bpf_capture_int.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mtb_fn_symbol[MTB_FN_COUNT] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "free",
};

#define MAX_PLACES 4

#if defined(__x86_64__)

static int32_t le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/* Length of the instruction at P if the kernel emulates it instead of
 * single-stepping it (arch/x86/kernel/uprobes.c: push of a register,
 * relative jumps, conditional jumps and calls); 0 otherwise. */
static unsigned x86_emulated(const uint8_t *p, size_t n)
{
	if (n >= 1 && p[0] >= 0x50 && p[0] <= 0x57)
		return 1; /* push %rax..%rdi */
	if (n >= 2 && p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57)
		return 2; /* push %r8..%r15 */
	if (n >= 2 && ((p[0] >= 0x70 && p[0] <= 0x7f) || p[0] == 0xeb))
		return 2; /* jcc rel8, jmp rel8 */
	if (n >= 5 && (p[0] == 0xe8 || p[0] == 0xe9))
		return 5; /* call rel32, jmp rel32 */
	if (n >= 6 && p[0] == 0x0f && p[1] >= 0x80 && p[1] <= 0x8f)
		return 6; /* jcc rel32 */
	return 0;
}

/* Length of the instruction at P if it is in the table of instructions that
 * leave every argument register and %rsp unchanged (flags and %rax only);
 * 0 otherwise.  *TEST_RDI is set for `test %rdi,%rdi`. */
static unsigned x86_skippable(const uint8_t *p, size_t n, int *test_rdi, const char **name)
{
	unsigned i = 0;
	uint8_t rex = 0;

	*test_rdi = 0;
	if (n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) {
		*name = "endbr64";
		return 4;
	}
	if (n >= 1 && (p[0] & 0xf0) == 0x40) {
		rex = p[0];
		i = 1;
	}
	if (n < i + 2)
		return 0;
	uint8_t op = p[i], modrm = p[i + 1], mod = modrm >> 6;

	if ((op == 0x84 || op == 0x85) && mod == 3) {
		/* test reg,reg: flags */
		*test_rdi = op == 0x85 && rex == 0x48 && modrm == 0xff;
		*name = "test";
		return i + 2;
	}
	if (op >= 0x38 && op <= 0x3b && mod == 3) {
		*name = "cmp"; /* cmp reg,reg: flags */
		return i + 2;
	}
	if ((op == 0x80 || op == 0x83) && modrm == 0x3d && n >= i + 7) {
		*name = "cmp"; /* cmp $imm8,disp32(%rip): flags */
		return i + 7;
	}
	if (op == 0x81 && modrm == 0x3d && n >= i + 10) {
		*name = "cmp"; /* cmp $imm32,disp32(%rip): flags */
		return i + 10;
	}
	if (op == 0x89 && mod == 3 && (modrm & 7) == 0 && !(rex & 1)) {
		*name = "mov"; /* mov reg,%eax/%rax: %rax */
		return i + 2;
	}
	return 0;
}

static unsigned probe_places(const uint8_t *code, size_t n, int null_arg_exits,
			     unsigned places[MAX_PLACES], char why[MAX_PLACES][48])
{
	unsigned off = 0, np = 0, len;
	int after_test_rdi = 0;
	char skipped[32] = "";

	for (int step = 0; step < 4 && off < n; step++) {
		len = x86_emulated(code + off, n - off);
		if (len) {
			unsigned next = off + len;
			int is_jz = code[off] == 0x74 || (code[off] == 0x0f && code[off + 1] == 0x84);

			if (null_arg_exits && after_test_rdi && is_jz && x86_emulated(code + next, n - next)) {
				places[np] = next;
				snprintf(why[np++], 48, "+%u past %s, je (NULL)", next, skipped);
			}
			places[np] = off;
			if (off)
				snprintf(why[np++], 48, "+%u past %s", off, skipped);
			else
				snprintf(why[np++], 48, "entry (emulated)");
			break;
		}
		const char *name = "";
		int test_rdi;

		len = x86_skippable(code + off, n - off, &test_rdi, &name);
		if (!len)
			break;
		after_test_rdi = test_rdi;
		if (strlen(skipped) + strlen(name) + 2 < sizeof(skipped)) {
			if (skipped[0])
				strcat(skipped, ",");
			strcat(skipped, name);
		}
		off += len;
	}
	if (np == 0 || places[np - 1] != 0) {
		places[np] = 0;
		snprintf(why[np], 48, "entry (single-stepped)");
		np++;
	}
	return np;
}

/* Does any direct jump or call in the executable segments of E land on one
 * of the N virtual addresses in T?  Sets hit[i].  Byte-wise, not decoded: a
 * false alarm only costs a less good probe place. */
static void branch_targets(Elf *e, const uint8_t *file, size_t fsize, const uint64_t *t, int *hit, unsigned n)
{
	size_t nph;

	if (elf_getphdrnum(e, &nph))
		return;
	for (size_t k = 0; k < nph; k++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, k, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_offset > fsize || ph.p_filesz > fsize - ph.p_offset)
			continue;
		const uint8_t *p = file + ph.p_offset;
		size_t len = ph.p_filesz;

		for (size_t i = 0; i + 2 <= len; i++) {
			uint64_t at = ph.p_vaddr + i, dst[3];
			unsigned nd = 0;
			uint8_t b = p[i];

			if ((b >= 0x70 && b <= 0x7f) || b == 0xeb)
				dst[nd++] = at + 2 + (int8_t)p[i + 1];
			if ((b == 0xe8 || b == 0xe9) && i + 5 <= len)
				dst[nd++] = at + 5 + (int64_t)le32(p + i + 1);
			if (b == 0x0f && p[i + 1] >= 0x80 && p[i + 1] <= 0x8f && i + 6 <= len)
				dst[nd++] = at + 6 + (int64_t)le32(p + i + 2);
			for (unsigned d = 0; d < nd; d++)
				for (unsigned j = 0; j < n; j++)
					if (dst[d] == t[j])
						hit[j] = 1;
		}
	}
}

unsigned mtb_probe_skip(const uint8_t *code, size_t n, int null_arg_exits, char *why, size_t whylen)
{
	unsigned places[MAX_PLACES];
	char w[MAX_PLACES][48];

	probe_places(code, n, null_arg_exits, places, w);
	snprintf(why, whylen, "%s", w[0]);
	return places[0];
}

#else /* not x86_64: always the entry */

unsigned mtb_probe_skip(const uint8_t *code, size_t n, int null_arg_exits, char *why, size_t whylen)
{
	snprintf(why, whylen, "entry");
	return 0;
}

#endif

static int host_machine(void)
{
#if defined(__x86_64__)
	return EM_X86_64;
#elif defined(__aarch64__)
	return EM_AARCH64;
#else
	return -1;
#endif
}

static int fn_by_name(const char *name)
{
	for (int f = 0; f < MTB_FN_COUNT; f++)
		if (!strcmp(name, mtb_fn_symbol[f]))
			return f;
	return -1;
}

/* Looks up our functions in one symbol table; earlier tables win. */
static void scan_symtab(Elf *e, Elf_Scn *scn, GElf_Shdr *sh, struct mtb_elf_syms *out)
{
	Elf_Data *d = elf_getdata(scn, NULL);

	if (!d || !sh->sh_entsize)
		return;
	size_t n = sh->sh_size / sh->sh_entsize;

	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;

		if (!gelf_getsym(d, (int)i, &s))
			continue;
		if (GELF_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		if (GELF_ST_BIND(s.st_info) != STB_GLOBAL && GELF_ST_BIND(s.st_info) != STB_WEAK)
			continue;
		const char *name = elf_strptr(e, sh->sh_link, s.st_name);
		int f = name ? fn_by_name(name) : -1;

		if (name && !strcmp(name, "main"))
			out->executable = 1;
		if (f < 0 || out->found[f])
			continue;
		out->found[f] = 1;
		out->vaddr[f] = s.st_value;
		out->size[f] = s.st_size;
	}
}

int mtb_elf_analyze(int fd, struct mtb_elf_syms *out)
{
	memset(out, 0, sizeof(*out));
	for (int f = 0; f < MTB_FN_COUNT; f++)
		out->alias_of[f] = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (!e)
		return -1;
	int ret = 0;
	GElf_Ehdr eh;

	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || eh.e_machine != host_machine() ||
	    eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32))
		goto out;

	/* .dynsym first (what the object exports), then .symtab (static
	 * executables have nothing else). */
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) &&
			    sh.sh_type == (pass == 0 ? SHT_DYNSYM : SHT_SYMTAB))
				scan_symtab(e, scn, &sh, out);
		}
	}
	if (!out->found[MTB_FN_MALLOC] && !out->found[MTB_FN_FREE])
		goto out;
	if (eh.e_type == ET_EXEC)
		out->executable = 1;

	/* Symbol value -> file offset, through the executable PT_LOAD. */
	size_t nph;

	if (elf_getphdrnum(e, &nph)) {
		ret = -1;
		goto out;
	}
	for (size_t k = 0; k < nph; k++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, k, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (!out->text_hi || ph.p_vaddr < out->text_lo)
			out->text_lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > out->text_hi)
			out->text_hi = ph.p_vaddr + ph.p_memsz;
	}
	for (int f = 0; f < MTB_FN_COUNT; f++) {
		int ok = 0;

		for (size_t k = 0; out->found[f] && k < nph; k++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, k, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
				continue;
			if (out->vaddr[f] >= ph.p_vaddr && out->vaddr[f] < ph.p_vaddr + ph.p_filesz) {
				out->offset[f] = out->vaddr[f] - ph.p_vaddr + ph.p_offset;
				ok = 1;
				break;
			}
		}
		out->found[f] = ok;
		out->probe[f] = out->offset[f];
	}
	for (int f = 0; f < MTB_FN_COUNT; f++)
		for (int g = 0; g < f && out->found[f]; g++)
			if (out->found[g] && out->alias_of[g] < 0 && out->vaddr[g] == out->vaddr[f]) {
				out->alias_of[f] = g;
				break;
			}
	if (!out->found[MTB_FN_MALLOC] && !out->found[MTB_FN_FREE])
		goto out;
	ret = 1;

#if defined(__x86_64__)
	size_t fsize;
	const uint8_t *file = (const uint8_t *)elf_rawfile(e, &fsize);
	unsigned places[MTB_FN_COUNT][MAX_PLACES], nplaces[MTB_FN_COUNT] = { 0 };
	char why[MTB_FN_COUNT][MAX_PLACES][48];
	uint64_t targets[MTB_FN_COUNT * MAX_PLACES];
	int hit[MTB_FN_COUNT * MAX_PLACES] = { 0 };
	unsigned nt = 0;

	/* For measuring what the chosen places save (bench-bpf). */
	const char *at_entry = getenv("MEMTRACE_BPF_PROBE_AT_ENTRY");

	for (int f = 0; f < MTB_FN_COUNT; f++) {
		if (!out->found[f] || out->alias_of[f] >= 0)
			continue;
		if (!file || out->offset[f] >= fsize || (at_entry && *at_entry && strcmp(at_entry, "0"))) {
			snprintf(out->why[f], sizeof(out->why[f]), "entry");
			continue;
		}
		size_t n = fsize - out->offset[f];

		if (out->size[f] && n > out->size[f])
			n = out->size[f]; /* never past the function's end */
		if (n > 32)
			n = 32;
		nplaces[f] = probe_places(file + out->offset[f], n, f == MTB_FN_FREE, places[f], why[f]);
		for (unsigned k = 0; k < nplaces[f]; k++)
			targets[nt++] = out->vaddr[f] + places[f][k];
	}
	if (nt)
		branch_targets(e, file, fsize, targets, hit, nt);
	nt = 0;
	for (int f = 0; f < MTB_FN_COUNT; f++) {
		unsigned chosen = nplaces[f] ? nplaces[f] - 1 : 0;

		for (unsigned k = 0; k < nplaces[f]; k++)
			if (places[f][k] == 0 || !hit[nt + k]) {
				chosen = k;
				break;
			}
		if (nplaces[f]) {
			out->probe[f] = out->offset[f] + places[f][chosen];
			snprintf(out->why[f], sizeof(out->why[f]), "%s%s", why[f][chosen],
				 chosen ? " (jump target further)" : "");
		}
		nt += nplaces[f];
	}
#else
	for (int f = 0; f < MTB_FN_COUNT; f++)
		if (out->found[f])
			snprintf(out->why[f], sizeof(out->why[f]), "entry");
#endif
out:
	elf_end(e);
	return ret;
}

int mtb_elf_deps(int fd, struct mtb_elf_deps *out)
{
	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (!e)
		return -1;
	int ret = -1;
	GElf_Ehdr eh;
	size_t nph;

	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || eh.e_machine != host_machine() ||
	    elf_getphdrnum(e, &nph))
		goto out;
	for (size_t k = 0; k < nph; k++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, k, &ph) && ph.p_type == PT_INTERP)
			out->dynamic = 1;
	}
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = sh.sh_size / sh.sh_entsize;

		for (size_t i = 0; d && i < n; i++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(d, (int)i, &dyn))
				continue;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
				continue;
			const char *s = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);

			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED && out->nneeded < MTB_MAX_NEEDED)
				snprintf(out->needed[out->nneeded++], sizeof(out->needed[0]), "%s", s);
			else if (dyn.d_tag == DT_RUNPATH)
				snprintf(out->runpath, sizeof(out->runpath), "%s", s);
			else if (dyn.d_tag == DT_RPATH)
				snprintf(out->rpath, sizeof(out->rpath), "%s", s);
		}
	}
	ret = 0;
out:
	elf_end(e);
	return ret;
}
