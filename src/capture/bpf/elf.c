/*
 * elf.c - which allocator functions an ELF object defines (its
 * dynamic symbols, or .symtab for a static executable), at which file
 * offsets, where each probe goes (place.c chooses, this file
 * checks that no direct jump lands between a function's entry and its
 * probe), and what a dynamically linked program will load (DT_NEEDED).
 */
#include "capture_int.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mtb_sym_name[MTB_SYM_COUNT] = {
#define MTB_FN_NAME(id, name, nargs, layout) name,
	MT_ALLOC_FNS(MTB_FN_NAME) "free",
	/* operator new(size_t) and new[], then with nothrow_t, align_val_t,
	 * both (Itanium C++ ABI, 64-bit size_t) */
	"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
	"_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_ZnamSt11align_val_tRKSt9nothrow_t",
#define MTB_EXT_NAME(name, fn, layout) name,
	MTB_EXT_SYMS(MTB_EXT_NAME)
#undef MTB_EXT_NAME
};
#undef MTB_FN_NAME

const struct mtb_sym_ext mtb_sym_ext[MTB_SYM_EXT_COUNT] = {
#define MTB_EXT_FN(name, fn, layout) { fn, layout },
	MTB_EXT_SYMS(MTB_EXT_FN)
#undef MTB_EXT_FN
};

#define MAX_PLACES 6

/* Arguments of each function (SysV: %rdi, %rsi, %rdx). */
static const unsigned fn_nargs[MTB_FN_COUNT] = {
#define MTB_FN_NARGS(id, name, nargs, layout) nargs,
	MT_ALLOC_FNS(MTB_FN_NARGS) 1, /* free */
};
#undef MTB_FN_NARGS

#if defined(__x86_64__)
static int32_t le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/* Does any direct jump or call in the executable segments of E land on
 * one of the addresses T (instruction starts between a function's entry
 * and its probe place, exclusive and inclusive)?  Sets hit[i].  Byte-wise,
 * not decoded: a false alarm only costs a less good probe place. */
static void branch_targets(Elf *e, const uint8_t *file, size_t fsize, const uint64_t *t, int *hit,
			   unsigned n)
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

static int sym_by_name(const char *name)
{
	for (int f = 0; f < MTB_SYM_COUNT; f++)
		if (!strcmp(name, mtb_sym_name[f]))
			return f;
	return -1;
}

static int any_new(const struct mtb_elf_syms *out)
{
	for (int f = MTB_SYM_NEW; f < MTB_SYM_EXT; f++)
		if (out->found[f])
			return 1;
	return 0;
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
		int f = name ? sym_by_name(name) : -1;

		if (name && !strcmp(name, "main"))
			out->executable = 1;
		if (name && !strcmp(name, "memtrace_marker"))
			out->memtrace_shim = 1;
		if (f < 0 || out->found[f])
			continue;
		out->found[f] = 1;
		out->vaddr[f] = s.st_value;
		out->size[f] = s.st_size;
	}
}

/* Does the object define anything to probe?  (A je_-prefixed jemalloc
 * defines no malloc.) */
static int any_probe(const struct mtb_elf_syms *out)
{
	if (out->found[MTB_FN_MALLOC] || out->found[MTB_FN_FREE] || any_new(out))
		return 1;
	for (int f = MTB_SYM_EXT; f < MTB_SYM_COUNT; f++)
		if (out->found[f] && mtb_sym_fn(f) != MTB_FN_BLOCK)
			return 1;
	return 0;
}

/* The link-time address range of the sections whose name starts with
 * .plt (.plt, .plt.sec, .plt.got), into LO/HI (0, 0 if none). */
static void plt_range(Elf *e, uint64_t *lo, uint64_t *hi)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	*lo = *hi = 0;
	if (elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strncmp(name, ".plt", 4) || !sh.sh_size)
			continue;
		if (!*hi || sh.sh_addr < *lo)
			*lo = sh.sh_addr;
		if (sh.sh_addr + sh.sh_size > *hi)
			*hi = sh.sh_addr + sh.sh_size;
	}
}

/* An allocator library's function that is a jump to another (endbr64
 * aside), through the PLT or to a function probed here, is not probed:
 * the function it jumps to counts the call (extsyms.h). */
static void drop_jumps(Elf *e, struct mtb_elf_syms *out, const uint8_t *file, size_t fsize)
{
#if defined(__x86_64__)
	uint64_t lo, hi;

	plt_range(e, &lo, &hi);
	for (int f = MTB_SYM_EXT; f < MTB_SYM_COUNT; f++) {
		if (!out->found[f] || out->alias_of[f] >= 0 || !file || out->offset[f] + 9 > fsize)
			continue;
		const uint8_t *p = file + out->offset[f];
		uint64_t at = out->vaddr[f], to;

		if (!memcmp(p, "\xf3\x0f\x1e\xfa", 4)) {
			p += 4;
			at += 4;
		}
		if (p[0] == 0xe9)
			to = at + 5 + (int64_t)le32(p + 1);
		else if (p[0] == 0xeb)
			to = at + 2 + (int64_t)(int8_t)p[1];
		else
			continue;
		int probed = to >= lo && to < hi;

		for (int g = 0; g < MTB_SYM_COUNT && !probed; g++)
			probed = g != f && out->found[g] && out->vaddr[g] == to;
		if (probed)
			out->found[f] = 0;
	}
#else
	(void)e;
	(void)out;
	(void)file;
	(void)fsize;
#endif
}

/* Names at the address of an operator delete (or new) are not probed
 * (extsyms.h); the blocking names themselves never are. */
static void block_operators(struct mtb_elf_syms *out)
{
	for (int b = MTB_SYM_NEW; b < MTB_SYM_COUNT; b++) {
		if (!out->found[b] || (b >= MTB_SYM_EXT && mtb_sym_fn(b) != MTB_FN_BLOCK))
			continue;
		for (int f = MTB_SYM_EXT; f < MTB_SYM_COUNT; f++)
			if (out->found[f] && mtb_sym_fn(f) != MTB_FN_BLOCK &&
			    out->vaddr[f] == out->vaddr[b])
				out->found[f] = 0;
	}
	for (int f = MTB_SYM_EXT; f < MTB_SYM_COUNT; f++)
		if (mtb_sym_fn(f) == MTB_FN_BLOCK)
			out->found[f] = 0;
}

/* .dynsym first (what the object exports), then .symtab (static
 * executables have nothing else). */
static void read_symbols(Elf *e, struct mtb_elf_syms *out)
{
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) &&
			    sh.sh_type == (pass == 0 ? SHT_DYNSYM : SHT_SYMTAB))
				scan_symtab(e, scn, &sh, out);
		}
	}
}

/* Symbol value -> file offset, through the executable PT_LOAD; symbols
 * outside them are dropped.  0, or -1 if the program headers cannot be
 * read. */
static int file_offsets(Elf *e, struct mtb_elf_syms *out)
{
	size_t nph;

	if (elf_getphdrnum(e, &nph))
		return -1;
	for (size_t k = 0; k < nph; k++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, k, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (!out->text_hi || ph.p_vaddr < out->text_lo)
			out->text_lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > out->text_hi)
			out->text_hi = ph.p_vaddr + ph.p_memsz;
	}
	for (int f = 0; f < MTB_SYM_COUNT; f++) {
		int ok = 0;

		for (size_t k = 0; out->found[f] && k < nph; k++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, k, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X))
				continue;
			if (out->vaddr[f] >= ph.p_vaddr &&
			    out->vaddr[f] < ph.p_vaddr + ph.p_filesz) {
				out->offset[f] = out->vaddr[f] - ph.p_vaddr + ph.p_offset;
				ok = 1;
				break;
			}
		}
		out->found[f] = ok;
		out->probe[f] = out->offset[f];
	}
	return 0;
}

/* Symbols at the same address as a lower one are its aliases. */
static void find_aliases(struct mtb_elf_syms *out)
{
	for (int f = 0; f < MTB_SYM_COUNT; f++)
		for (int g = 0; g < f && out->found[f]; g++)
			if (out->found[g] && out->alias_of[g] < 0 &&
			    out->vaddr[g] == out->vaddr[f]) {
				out->alias_of[f] = g;
				break;
			}
}

/* Operator new is probed at its entry, where the return address is the
 * caller's (mt_new).  Is the instruction there one where the kernel's stack
 * walk adds it (is_uprobe_at_func_entry)? */
static void new_entry_frames(struct mtb_elf_syms *out, const uint8_t *file, size_t fsize)
{
	for (int f = MTB_SYM_NEW; f < MTB_SYM_EXT; f++) {
		if (!out->found[f] || out->alias_of[f] >= 0)
			continue;
		snprintf(out->why[f], sizeof(out->why[f]), "entry");
#if defined(__x86_64__)
		static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
		const uint8_t *at = file && out->offset[f] + 4 <= fsize ? file + out->offset[f] :
									  NULL;

		out->entry_frame[f] = at && (!memcmp(at, endbr64, 4) || at[0] == 0x55);
#else
		(void)file;
		(void)fsize;
#endif
	}
}

/* The possible places of each allocator function's probe, best first. */
struct places {
	struct mtb_place at[MTB_FN_COUNT][MAX_PLACES];
	unsigned n[MTB_FN_COUNT];
	int jumped_into[MTB_FN_COUNT][MAX_PLACES];
};

static void find_places(const struct mtb_elf_syms *out, const uint8_t *file, size_t fsize,
			struct places *pl)
{
	/* For measuring what the chosen places save (bench-bpf). */
	const char *at_entry = getenv("MEMTRACE_BPF_PROBE_AT_ENTRY");
	int entry_only = at_entry && *at_entry && strcmp(at_entry, "0");

	for (int f = 0; f < MTB_FN_COUNT; f++) {
		if (!out->found[f] || out->alias_of[f] >= 0)
			continue;
		size_t n = file && out->offset[f] < fsize ? fsize - out->offset[f] : 0;

		if (out->size[f] && n > out->size[f])
			n = out->size[f]; /* never past the function's end */
		if (n > 96)
			n = 96;
		pl->n[f] = mtb_probe_places(n ? file + out->offset[f] : NULL, entry_only ? 0 : n,
					    fn_nargs[f], f == MTB_FN_FREE, pl->at[f], MAX_PLACES);
	}
}

/* A jump into the code the probe was moved past would skip the probe or
 * reach it with other registers: such places are out. */
static void find_jumps_into(Elf *e, const struct mtb_elf_syms *out, const uint8_t *file,
			    size_t fsize, struct places *pl)
{
#if defined(__x86_64__)
	uint64_t targets[MTB_FN_COUNT * MAX_PLACES * MTB_PLACE_MAX_STEPS];
	int hit[MTB_FN_COUNT * MAX_PLACES * MTB_PLACE_MAX_STEPS] = { 0 };
	unsigned first[MTB_FN_COUNT][MAX_PLACES], nt = 0;

	for (int f = 0; f < MTB_FN_COUNT; f++)
		for (unsigned k = 0; k < pl->n[f]; k++) {
			first[f][k] = nt;
			for (unsigned b = 0; b < pl->at[f][k].nbounds; b++)
				targets[nt++] = out->vaddr[f] + pl->at[f][k].bounds[b];
		}
	if (nt && file)
		branch_targets(e, file, fsize, targets, hit, nt);
	for (int f = 0; f < MTB_FN_COUNT; f++)
		for (unsigned k = 0; k < pl->n[f]; k++)
			for (unsigned b = 0; b < pl->at[f][k].nbounds; b++)
				pl->jumped_into[f][k] |= hit[first[f][k] + b];
#else
	(void)e;
	(void)out;
	(void)file;
	(void)fsize;
	(void)pl;
#endif
}

/* Each function's probe at its best place that no jump lands in (else at
 * its last, the entry). */
static void choose_places(struct mtb_elf_syms *out, const struct places *pl)
{
	for (int f = 0; f < MTB_FN_COUNT; f++) {
		unsigned chosen = pl->n[f] ? pl->n[f] - 1 : 0;

		for (unsigned k = 0; k < pl->n[f]; k++)
			if (!pl->jumped_into[f][k]) {
				chosen = k;
				break;
			}
		if (!pl->n[f])
			continue;
		const struct mtb_place *p = &pl->at[f][chosen];

		out->probe[f] = out->offset[f] + p->off;
		memcpy(out->argreg[f], p->argreg, 3);
		out->moved[f] = p->argreg[0] != 7 || (fn_nargs[f] > 1 && p->argreg[1] != 6) ||
				(fn_nargs[f] > 2 && p->argreg[2] != 2);
		snprintf(out->why[f], sizeof(out->why[f]), "%s%s", p->why,
			 chosen ? " (a jump lands further)" : "");
	}
}

int mtb_elf_analyze(int fd, struct mtb_elf_syms *out)
{
	memset(out, 0, sizeof(*out));
	for (int f = 0; f < MTB_SYM_COUNT; f++)
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
		goto cleanup;
	read_symbols(e, out);
	if (eh.e_type == ET_EXEC)
		out->executable = 1;
	/* memtrace's own shim exports malloc but is no allocator: it calls
	 * libc's, which is probed.  Probing it would count every call twice
	 * and, worse, its return probe would replace the return address the
	 * shim's unwinder reads with the kernel's trampoline. */
	if (out->memtrace_shim)
		goto cleanup;
	block_operators(out);
	/* An allocator library's own operator new does not call its malloc:
	 * not probed (see capture_int.h). */
	if (out->found[MTB_FN_MALLOC] && !out->executable)
		for (int f = MTB_SYM_NEW; f < MTB_SYM_EXT; f++)
			out->found[f] = 0;
	if (!any_probe(out))
		goto cleanup;
	if (file_offsets(e, out)) {
		ret = -1;
		goto cleanup;
	}
	find_aliases(out);
	if (!any_probe(out))
		goto cleanup;
	ret = 1;

	size_t fsize;
	const uint8_t *file = (const uint8_t *)elf_rawfile(e, &fsize);
	struct places pl = { .n = { 0 } };

	drop_jumps(e, out, file, fsize);
	new_entry_frames(out, file, fsize);
	find_places(out, file, fsize, &pl);
	find_jumps_into(e, out, file, fsize, &pl);
	choose_places(out, &pl);
cleanup:
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
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH &&
			    dyn.d_tag != DT_RPATH)
				continue;
			const char *s = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);

			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED && out->nneeded < MTB_MAX_NEEDED)
				snprintf(out->needed[out->nneeded++], sizeof(out->needed[0]), "%s",
					 s);
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
