/*
 * test_cfi.c - unit tests of the .eh_frame compiler (format/cfi.c): every
 * row mt_cfi_rows gives for a loaded object (this program and the C
 * library, their .eh_frame read where it is mapped) must be the rule that
 * mt_cfi_rule_from_hdr, the shim's path (the .eh_frame_hdr search, the
 * interpreter run up to one address), gives at the row's first and last
 * byte; and at the entry of a function the rule must be the ABI's (CFA =
 * rsp + 8, %rbp unchanged), whatever the compiler wrote.  Hostile sections
 * (a traced process can map any file executable, and root's BPF backend
 * compiles it): each is read from a heap block of its exact size, so that
 * the sanitized build sees any read past it, and must give rows that stay
 * inside the FDE's range, or none.
 */
#include "format/cfi.h"
#include "../check.h"

#include <link.h>
#include <stdlib.h>
#include <string.h>

struct obj {
	const uint8_t *hdr;
	unsigned long rows, checked;
};

static int same(const struct mt_cfi_rule *a, const struct mt_cfi_rule *b)
{
	return a->kind == b->kind && a->bhow == b->bhow && a->off == b->off &&
	       (a->bhow == MT_CFI_B_SAME || a->bhow == MT_CFI_B_UNDEF || a->boff == b->boff);
}

/* The rule the shim's path gives at Q, as a row would say it. */
static void check_at(struct obj *o, uint64_t q, const struct mt_cfi_rule *r)
{
	struct mt_cfi_rule want = *r, got;

	mt_cfi_rule_from_hdr(o->hdr, q, q, &got);
	if (want.kind == MT_CFI_PLT) { /* the shim's answer depends on the pc */
		want.kind = MT_CFI_RSP;
		want.off += (int64_t)(q & 15) >= want.plt_thr ? 8 : 0;
	}
	if (!same(&got, &want)) {
		fprintf(stderr, "at 0x%llx: row kind %d off %lld bhow %d boff %lld, shim kind %d off %lld "
				"bhow %d boff %lld\n",
			(unsigned long long)q, want.kind, (long long)want.off, want.bhow,
			(long long)want.boff, got.kind, (long long)got.off, got.bhow, (long long)got.boff);
		failures++;
	}
	o->checked++;
}

static void on_row(void *ctx, uint64_t lo, uint64_t hi, const struct mt_cfi_rule *r)
{
	struct obj *o = ctx;

	o->rows++;
	CHECK(hi > lo);
	if (hi <= lo)
		return;
	check_at(o, lo, r);
	check_at(o, hi - 1, r);
}

static int checked_objects;

static int each_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *want = arg;
	const uint8_t *hdr = NULL;
	const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "(program)";

	(void)size;
	if (strcmp(want, "(program)") ? !strstr(name, want) : strcmp(name, want))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			hdr = (const uint8_t *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	CHECK(hdr != NULL);
	if (!hdr || hdr[0] != 1 || hdr[1] != 0x1b) /* eh_frame_ptr: pcrel sdata4 */
		return 0;
	int32_t rel;
	memcpy(&rel, hdr + 4, 4);
	const uint8_t *eh = hdr + 4 + rel;
	/* .eh_frame ends where its PT_LOAD segment does, at the latest */
	size_t len = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (uintptr_t)eh >= s && (uintptr_t)eh < s + ph->p_filesz)
			len = s + ph->p_filesz - (uintptr_t)eh;
	}
	CHECK(len > 0);
	struct obj o = { .hdr = hdr };
	long fdes = mt_cfi_rows(eh, len, (uint64_t)(uintptr_t)eh, on_row, &o);
	fprintf(stderr, "%s: %ld FDEs, %lu rows, %lu addresses checked\n", name, fdes, o.rows,
		o.checked);
	CHECK(fdes > 0);
	CHECK(o.rows >= (unsigned long)fdes);
	checked_objects++;
	return 1;
}

/* A function whose entry the test looks at (not inlined, not static). */
__attribute__((noinline)) int cfi_probe_fn(int x)
{
	return x * 3 + 1;
}

struct find {
	uintptr_t addr;
	const uint8_t *hdr;
};

static int find_hdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	const uint8_t *hdr = NULL;
	int in = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = (const uint8_t *)s;
		if (ph->p_type == PT_LOAD && f->addr >= s && f->addr < s + ph->p_memsz)
			in = 1;
	}
	if (in)
		f->hdr = hdr;
	return in;
}

/* ---- hostile .eh_frame sections ------------------------------------- */

struct hostile {
	unsigned long rows, bad;
};

static void on_hostile_row(void *ctx, uint64_t lo, uint64_t hi, const struct mt_cfi_rule *r)
{
	struct hostile *h = ctx;

	(void)r;
	h->rows++;
	if (hi <= lo)
		h->bad++;
}

/* Compiles SEC[0..N) from a block of exactly N bytes: the rows it gave. */
static struct hostile compile(const uint8_t *sec, size_t n)
{
	struct hostile h = { 0 };
	uint8_t *copy = malloc(n);

	memcpy(copy, sec, n);
	mt_cfi_rows(copy, n, 0x400000, on_hostile_row, &h);
	free(copy);
	CHECK_EQ(h.bad, 0);
	return h;
}

static size_t put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

/* A CIE with augmentation AUG ("z" and some of 'L', 'R'; version 1, code
 * align 1, data align -8, ra 16) whose augmentation data has length ALEN
 * (ULEB128, padded to 10 bytes), then an FDE for [0x401000, +RANGE) with
 * ENC as its pointer encoding when AUG has 'R' (else absolute 8 bytes) and
 * a def_cfa_offset instruction.  Returns the section's size. */
static size_t make_section(uint8_t *out, const char *aug, uint64_t alen, uint8_t enc,
			   uint32_t range)
{
	uint8_t *p = out;
	uint8_t *cie_len = p;

	p += 4;
	p += put32(p, 0); /* CIE id */
	*p++ = 1;	  /* version */
	memcpy(p, aug, strlen(aug) + 1);
	p += strlen(aug) + 1;
	*p++ = 1;    /* code alignment */
	*p++ = 0x78; /* data alignment -8 */
	*p++ = 16;   /* return address register */
	for (int i = 0; i < 9; i++, alen >>= 7)
		*p++ = (uint8_t)(0x80 | (alen & 0x7f));
	*p++ = (uint8_t)(alen & 0x7f);
	for (const char *a = aug; *a; a++)
		if (*a == 'L')
			*p++ = 0xff; /* no LSDA */
		else if (*a == 'R')
			*p++ = enc;
	while ((p - cie_len) % 4)
		*p++ = 0; /* nop */
	put32(cie_len, (uint32_t)(p - cie_len - 4));

	uint8_t *fde = p;
	int wide = !strchr(aug, 'R');
	p += 4;
	p += put32(p, (uint32_t)(p - out)); /* back to the CIE */
	p += put32(p, 0x401000);
	if (wide)
		p += put32(p, 0);
	p += put32(p, range);
	if (wide)
		p += put32(p, 0);
	*p++ = 0;    /* augmentation data: none */
	*p++ = 0x0e; /* def_cfa_offset */
	*p++ = 16;
	while ((p - fde) % 4)
		*p++ = 0;
	put32(fde, (uint32_t)(p - fde - 4));
	p += put32(p, 0); /* terminator */
	return (size_t)(p - out);
}

static void hostile_sections(void)
{
	uint8_t sec[128];
	size_t n;

	/* The well-formed ones give their rows. */
	n = make_section(sec, "zR", 1, 0x03, 0x100);
	CHECK(compile(sec, n).rows > 0);
	n = make_section(sec, "zL", 1, 0, 0x100);
	CHECK(compile(sec, n).rows > 0);

	/* An augmentation length near 2^64: adding it to the pointer wrapped
	 * below the section and the interpreter ran on whatever lay there. */
	static const char *const augs[] = { "z", "zL", "zR" };
	static const uint64_t huge[] = { UINT64_MAX - 8, UINT64_MAX - 4096, (uint64_t)1 << 63, 200 };
	for (size_t a = 0; a < sizeof augs / sizeof augs[0]; a++)
		for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
			n = make_section(sec, augs[a], huge[h], 0x03, 0x100);
			CHECK_EQ(compile(sec, n).rows, 0);
		}

	/* An FDE encoding that would dereference the pointer: refused. */
	n = make_section(sec, "zR", 1, 0x83, 0x100);
	CHECK_EQ(compile(sec, n).rows, 0);

	/* A range that wraps the address space: no row ends before it starts. */
	n = make_section(sec, "zR", 1, 0x03, 0xffffffffu);
	compile(sec, n);

	/* Every truncation of the section, at every length. */
	n = make_section(sec, "zR", 1, 0x03, 0x100);
	for (size_t k = 0; k < n; k++)
		compile(sec, k);

	/* Every byte of it replaced by a few values of interest. */
	static const uint8_t values[] = { 0x00, 0x01, 0x04, 0x7f, 0x80, 0xff };
	for (size_t k = 0; k < n; k++)
		for (size_t v = 0; v < sizeof values; v++) {
			uint8_t m[sizeof sec];
			memcpy(m, sec, n);
			m[k] = values[v];
			compile(m, n);
		}
}

int main(void)
{
	dl_iterate_phdr(each_object, (void *)"(program)");
	dl_iterate_phdr(each_object, (void *)"libc.so");
	CHECK_EQ(checked_objects, 2);

	/* At a function's first instruction the return address was just
	 * pushed: CFA = rsp + 8, %rbp unchanged, in any code. */
	const void *fns[] = { (const void *)cfi_probe_fn, (const void *)qsort, (const void *)abort };
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
		struct find f = { .addr = (uintptr_t)fns[i] };
		struct mt_cfi_rule r;

		dl_iterate_phdr(find_hdr, &f);
		CHECK(f.hdr != NULL);
		mt_cfi_rule_from_hdr(f.hdr, f.addr, f.addr, &r);
		CHECK_EQ(r.kind, MT_CFI_RSP);
		CHECK_EQ(r.off, 8);
		CHECK_EQ(r.bhow, MT_CFI_B_SAME);
	}
	hostile_sections();
	return failures != 0;
}
