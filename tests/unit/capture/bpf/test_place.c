/*
 * test_place.c - the instruction decoder that moves probes past a
 * function's first instructions (src/capture/bpf/place.c) against objdump:
 * a probe in the middle of an instruction would corrupt the traced program,
 * so every instruction boundary it finds must be one objdump finds, and
 * every register it says an instruction writes must be the one objdump
 * names as destination.  Checked over the first instructions of every
 * function symbol of each ELF file given (libc, the test's allocator, and
 * jemalloc/mimalloc/tcmalloc when installed), then the probe places of the
 * allocator functions are printed with their reasons.  Needs no privileges.
 *
 * Usage: test-bpf-place FILE...
 */
#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/bpf/capture_int.h"

static int failures;

/* Instructions objdump finds: address -> index into the text lines. */
struct insn {
	uint64_t addr;
	char text[96]; /* mnemonic and operands */
};
static struct insn *insns;
static size_t ninsns, capinsns;

static int by_addr(const void *a, const void *b)
{
	uint64_t x = ((const struct insn *)a)->addr, y = ((const struct insn *)b)->addr;
	return x < y ? -1 : x > y;
}

static const struct insn *find(uint64_t addr)
{
	struct insn k = { .addr = addr };
	return bsearch(&k, insns, ninsns, sizeof(*insns), by_addr);
}

static int load_objdump(const char *file)
{
	char cmd[1024], line[1024];
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn -w '%s' 2>/dev/null", file);
	FILE *p = popen(cmd, "r");

	ninsns = 0;
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a;
		int pos = 0;
		if (sscanf(line, " %llx:%n", &a, &pos) != 1 || line[0] != ' ' || !pos)
			continue;
		char *t = line + pos;
		while (isspace((unsigned char)*t))
			t++;
		t[strcspn(t, "\n#<")] = 0;
		if (ninsns == capinsns) {
			capinsns = capinsns ? capinsns * 2 : 1 << 16;
			insns = realloc(insns, capinsns * sizeof(*insns));
			if (!insns)
				abort();
		}
		insns[ninsns].addr = a;
		snprintf(insns[ninsns].text, sizeof(insns[ninsns].text), "%s", t);
		ninsns++;
	}
	int st = pclose(p);
	qsort(insns, ninsns, sizeof(*insns), by_addr);
	return st == 0 && ninsns ? 0 : -1;
}

/* x86 number of the register family an AT&T register name belongs to. */
static int reg_family(const char *r)
{
	static const char *const names[16][4] = {
		{ "rax", "eax", "ax", "al" }, { "rcx", "ecx", "cx", "cl" }, { "rdx", "edx", "dx", "dl" },
		{ "rbx", "ebx", "bx", "bl" }, { "rsp", "esp", "sp", "spl" }, { "rbp", "ebp", "bp", "bpl" },
		{ "rsi", "esi", "si", "sil" }, { "rdi", "edi", "di", "dil" },
	};
	if (r[0] == '%')
		r++;
	if (!strcmp(r, "ah"))
		return 0;
	if (!strcmp(r, "ch"))
		return 1;
	if (!strcmp(r, "dh"))
		return 2;
	if (!strcmp(r, "bh"))
		return 3;
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++)
			if (!strcmp(r, names[i][k]))
				return i;
	if (r[0] == 'r' && isdigit((unsigned char)r[1])) {
		int n = atoi(r + 1);
		if (n >= 8 && n <= 15)
			return n;
	}
	return -1;
}

/* The register objdump names as destination (last operand), or -1 for
 * memory or none. */
static int dest_of(const char *text)
{
	const char *ops = strchr(text, ' ');
	if (!ops)
		return -1;
	const char *last = strrchr(ops, ',');
	last = last ? last + 1 : ops;
	while (isspace((unsigned char)*last))
		last++;
	if (last[0] != '%')
		return -1;
	char r[16];
	size_t n = strcspn(last, " \t,)");
	if (n >= sizeof(r))
		return -1;
	memcpy(r, last, n);
	r[n] = 0;
	return reg_family(r);
}

static void check_file(const char *file)
{
#if defined(__x86_64__)
	int fd = open(file, O_RDONLY);
	if (fd < 0) {
		printf("%s: not there, skipped\n", file);
		return;
	}
	if (load_objdump(file)) {
		printf("%s: no objdump output, decoder not checked\n", file);
		close(fd);
		return;
	}
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t fsize, nph;
	const uint8_t *raw = (const uint8_t *)elf_rawfile(e, &fsize);
	unsigned long fns = 0, decoded = 0, bad = 0;

	elf_getphdrnum(e, &nph);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value ||
			    s.st_shndx == SHN_UNDEF || !find(s.st_value))
				continue;
			/* file offset of the symbol */
			uint64_t off = 0;
			for (size_t k = 0; k < nph; k++) {
				GElf_Phdr ph;
				if (gelf_getphdr(e, k, &ph) && ph.p_type == PT_LOAD && s.st_value >= ph.p_vaddr &&
				    s.st_value < ph.p_vaddr + ph.p_filesz)
					off = s.st_value - ph.p_vaddr + ph.p_offset;
			}
			if (!off || off >= fsize)
				continue;
			fns++;
			uint64_t at = s.st_value;
			size_t avail = fsize - off, pos = 0;
			if (s.st_size && avail > s.st_size)
				avail = s.st_size;
			for (int step = 0; step < MTB_PLACE_MAX_STEPS && pos < avail; step++) {
				struct mtb_x86_insn in;
				unsigned len = mtb_x86_decode(raw + off + pos, avail - pos, &in);
				if (!len)
					break;
				decoded++;
				const struct insn *o = find(at + pos), *next = find(at + pos + len);
				if (!o || (!next && pos + len < avail)) {
					if (bad++ < 20)
						fprintf(stderr, "%s: %s+%zu: length %u is not objdump's (%s)\n", file,
							elf_strptr(e, sh.sh_link, s.st_name), pos, len, o ? o->text : "?");
					failures++;
					break;
				}
				int dst = dest_of(o->text);
				int flags_only = !strncmp(o->text, "cmp", 3) || !strncmp(o->text, "test", 4) ||
						 !strncmp(o->text, "nop", 3) || !strncmp(o->text, "endbr", 5);
				uint16_t want = flags_only || in.emulated || dst < 0 ? 0 : (uint16_t)(1u << dst);
				if (!in.emulated && in.writes != want && !(in.stop && dst == 4)) {
					if (bad++ < 20)
						fprintf(stderr, "%s: %s+%zu: '%s' writes 0x%x by the decoder, 0x%x by objdump\n",
							file, elf_strptr(e, sh.sh_link, s.st_name), pos, o->text, in.writes,
							want);
					failures++;
				}
				if (in.emulated)
					break;
				pos += len;
			}
		}
	}
	printf("%s: %lu functions, %lu instructions decoded, %lu disagreements with objdump\n", file, fns,
	       decoded, bad);

	struct mtb_elf_syms syms;
	if (mtb_elf_analyze(fd, &syms) == 1) {
		for (int f = 0; f < MTB_SYM_COUNT; f++) {
			if (!syms.found[f])
				continue;
			printf("  %-15s +%-3llu %s\n", mtb_sym_name[f],
			       (unsigned long long)(syms.probe[f] - syms.offset[f]),
			       syms.alias_of[f] >= 0 ? "(same address as an earlier one)" : syms.why[f]);
			if (syms.alias_of[f] < 0 && !find(syms.vaddr[f] + syms.probe[f] - syms.offset[f])) {
				fprintf(stderr, "%s: probe of %s is not at an instruction\n", file, mtb_sym_name[f]);
				failures++;
			}
		}
	}
	elf_end(e);
	close(fd);
#else
	printf("%s: not x86_64, probes stay at the entry\n", file);
#endif
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		check_file(argv[i]);
	free(insns);
	return failures ? 1 : 0;
}
