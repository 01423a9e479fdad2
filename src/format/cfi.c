/*
 * cfi.c - x86-64 .eh_frame call frame information compiled into unwind
 * rules (see cfi.h): the CIE/FDE parser, the .eh_frame_hdr search the shim
 * uses, and the CFI interpreter, which either stops at one PC (the shim) or
 * reports every row it passes (the BPF backend's tables).
 *
 * Runs inside traced programs (the shim): no heap, no stdio, nothing that
 * could call the allocator being measured.  Reading from a file (mt_cfi_rows)
 * every record is bounded by the section it came from; a pointer encoding
 * that would dereference memory (DW_EH_PE_indirect) is refused there.
 */
#include "format/cfi.h"

#include <string.h>

struct cfistate;
struct emitter;
static void emit_row(struct emitter *em, const struct mt_cfi_cie *ci, uintptr_t lo, uintptr_t hi,
		     const struct cfistate *st);

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_indirect 0x80

static uint64_t rd_uleb(const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	while (p < end) {
		uint8_t b = *p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	*pp = p;
	return v;
}

static int64_t rd_sleb(const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;
	while (p < end) {
		b = *p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*pp = p;
	return (int64_t)v;
}

/* V times the CIE's data alignment, wrapping as the hardware does: hostile
 * CFI can make the product overflow, which signed arithmetic must not. */
static int64_t scaled(uint64_t v, int64_t align)
{
	return (int64_t)(v * (uint64_t)align);
}

#define RD(type, p)                          \
	({                                   \
		type v_;                     \
		memcpy(&v_, (p), sizeof v_); \
		v_;                          \
	})

/* Reads a pointer in encoding ENC; DATAREL is the base for DW_EH_PE_datarel
 * (0 when not allowed).  Returns 0 on unsupported encodings. */
static int rd_ptr(const uint8_t **pp, const uint8_t *end, uint8_t enc, uintptr_t datarel,
		  intptr_t adj, uintptr_t *out)
{
	const uint8_t *p = *pp;
	uintptr_t base, v;
	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x70) {
	case 0x00:
		base = 0;
		break;
	case 0x10:
		base = (uintptr_t)p + (uintptr_t)adj;
		break;
	case 0x30:
		if (!datarel)
			return 0;
		base = datarel;
		break;
	default:
		return 0; /* textrel, funcrel, aligned */
	}
	switch (enc & 0x0f) {
	case 0x00:
	case 0x04:
	case 0x0c:
		if (end - p < 8)
			return 0;
		v = RD(uint64_t, p);
		p += 8;
		break;
	case 0x01:
		v = rd_uleb(&p, end);
		break;
	case 0x09:
		v = (uintptr_t)rd_sleb(&p, end);
		break;
	case 0x02:
		if (end - p < 2)
			return 0;
		v = RD(uint16_t, p);
		p += 2;
		break;
	case 0x03:
		if (end - p < 4)
			return 0;
		v = RD(uint32_t, p);
		p += 4;
		break;
	case 0x0a:
		if (end - p < 2)
			return 0;
		v = (uintptr_t)(int64_t)RD(int16_t, p);
		p += 2;
		break;
	case 0x0b:
		if (end - p < 4)
			return 0;
		v = (uintptr_t)(int64_t)RD(int32_t, p);
		p += 4;
		break;
	default:
		return 0;
	}
	v += base;
	if (enc & DW_EH_PE_indirect) {
		if (adj)
			return 0; /* read from a file: nothing to dereference */
		v = RD(uintptr_t, (const void *)v);
	}
	*pp = p;
	*out = v;
	return 1;
}

/* Record header: sets *body past the length, *end to the record's end. */
static int rd_record(const uint8_t *p, const uint8_t **body, const uint8_t **end)
{
	uint64_t len = RD(uint32_t, p);
	p += 4;
	if (len == 0xffffffffu) {
		len = RD(uint64_t, p);
		p += 8;
	}
	if (len == 0 || len > ((uint64_t)1 << 30))
		return 0;
	*body = p;
	*end = p + len;
	return 1;
}

static int parse_cie(const uint8_t *c, struct mt_cfi_cie *ci)
{
	const uint8_t *p, *end;
	if (!rd_record(c, &p, &end) || end - p < 5 || RD(uint32_t, p) != 0)
		return 0;
	p += 4;
	uint8_t version = *p++;
	if (version != 1 && version != 3 && version != 4)
		return 0;
	const char *aug = (const char *)p;
	while (p < end && *p)
		p++;
	if (p >= end)
		return 0;
	p++;
	if (version == 4) {
		if (end - p < 2)
			return 0;
		p += 2; /* address_size, segment_size */
	}
	ci->code_align = rd_uleb(&p, end);
	ci->data_align = rd_sleb(&p, end);
	if (p >= end)
		return 0;
	ci->ra_reg = version == 1 ? *p++ : rd_uleb(&p, end);
	ci->fde_enc = 0; /* absptr */
	ci->signal = 0;
	ci->has_z = aug[0] == 'z';
	if (ci->has_z) {
		uint64_t alen = rd_uleb(&p, end);
		int parsed = 1; /* data of the letters so far understood */
		/* A length compared with what is left, never added first: a
		 * hostile one near 2^64 would wrap the pointer. */
		if (alen > (uint64_t)(end - p))
			return 0;
		const uint8_t *aend = p + alen;
		for (const char *a = aug + 1; *a; a++) {
			uintptr_t dummy;
			if (*a == 'S') {
				ci->signal = 1;
				continue;
			}
			if (!parsed || p >= aend) {
				if (*a == 'R')
					return 0; /* cannot find the FDE encoding */
				continue;
			}
			switch (*a) {
			case 'R':
				ci->fde_enc = *p++;
				break;
			case 'L':
				p++;
				break;
			case 'P': {
				uint8_t enc = *p++;
				if (!rd_ptr(&p, aend, enc & 0x7f, 0, ci->adj,
					    &dummy)) /* no deref */
					parsed = 0;
				break;
			}
			case 'B':
				break;
			default:
				parsed = 0;
				break;
			}
		}
		p = aend;
	} else if (aug[0] != 0) {
		return 0; /* "eh" and other legacy augmentations */
	}
	ci->insn = p;
	ci->end = end;
	return 1;
}

/* Finds the FDE covering Q through the .eh_frame_hdr binary-search table;
 * returns its instructions and CIE. */
static int find_fde(const uint8_t *hdr, uintptr_t q, struct mt_cfi_cie *ci, const uint8_t **insn,
		    const uint8_t **iend, uintptr_t *pc_begin)
{
	if (hdr[0] != 1)
		return 0;
	uint8_t ptr_enc = hdr[1], cnt_enc = hdr[2], tab_enc = hdr[3];
	const uint8_t *p = hdr + 4, *lim = hdr + 64;
	uintptr_t eh_frame, count;
	if (!rd_ptr(&p, lim, ptr_enc, (uintptr_t)hdr, 0, &eh_frame))
		return 0;
	/* Only the sorted table linkers emit (datarel sdata4) is supported. */
	if (tab_enc != 0x3b || !rd_ptr(&p, lim, cnt_enc, (uintptr_t)hdr, 0, &count) || count == 0)
		return 0;
	const int32_t *tab = (const int32_t *)p;
	size_t lo = 0, hi = count;
	intptr_t rel = (intptr_t)(q - (uintptr_t)hdr);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((intptr_t)RD(int32_t, &tab[2 * mid]) <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	const uint8_t *fde = hdr + RD(int32_t, &tab[2 * (lo - 1) + 1]);
	const uint8_t *body, *end;
	if (!rd_record(fde, &body, &end))
		return 0;
	uint32_t cie_off = RD(uint32_t, body);
	if (cie_off == 0)
		return 0; /* a CIE, not an FDE */
	if (!parse_cie(body - cie_off, ci))
		return 0;
	p = body + 4;
	uintptr_t begin, range;
	if (!rd_ptr(&p, end, ci->fde_enc, 0, ci->adj, &begin) ||
	    !rd_ptr(&p, end, ci->fde_enc & 0x0f, 0, ci->adj, &range))
		return 0;
	if (q < begin || q - begin >= range)
		return 0;
	if (ci->has_z) {
		uint64_t alen = rd_uleb(&p, end);
		if (alen > (uint64_t)(end - p))
			return 0;
		p += alen;
	}
	*insn = p;
	*iend = end;
	*pc_begin = begin;
	return 1;
}

/* ------------------------------------------------------------------ */
/* CFI interpretation                                                 */

enum { R_SAME, R_UNDEF, R_OFFSET, R_AT_RBP, R_OTHER };
enum { C_REG, C_DEREF, C_PLT, C_BAD };

struct regrule {
	uint8_t how;
	int64_t off;
};

struct cfistate {
	uint8_t cfa_how;
	uint64_t cfa_reg;
	int64_t cfa_off, plt_thr;
	struct regrule rbp, ra;
};

#define REG_RBP_DW 6
#define REG_RSP_DW 7

static void set_reg(struct cfistate *st, const struct mt_cfi_cie *ci, uint64_t reg, uint8_t how,
		    int64_t off)
{
	if (reg == REG_RBP_DW) {
		st->rbp.how = how;
		st->rbp.off = off;
	} else if (reg == ci->ra_reg) {
		st->ra.how = how;
		st->ra.off = off;
	}
}

static void restore_reg(struct cfistate *st, const struct cfistate *init,
			const struct mt_cfi_cie *ci, uint64_t reg)
{
	if (reg == REG_RBP_DW)
		st->rbp = init->rbp;
	else if (reg == ci->ra_reg)
		st->ra = init->ra;
}

/* Recognises the CFA expressions compilers and linkers emit on x86_64. */
static void cfa_expression(struct cfistate *st, const uint8_t *p, const uint8_t *end)
{
	st->cfa_how = C_BAD;
	if (p >= end)
		return;
	uint8_t op = *p++;
	if (op == 0x76 || op == 0x77) { /* DW_OP_breg6 / breg7 */
		int64_t k = rd_sleb(&p, end);
		if (p + 1 == end && *p == 0x06) { /* DW_OP_deref */
			st->cfa_how = C_DEREF;
			st->cfa_reg = op - 0x70;
			st->cfa_off = k;
			return;
		}
		/* PLT: breg7 k; breg16 0; lit15; and; litN; ge; lit3; shl; plus */
		if (op == 0x77 && end - p == 9 && p[0] == 0x80 && p[1] == 0 && p[2] == 0x3f &&
		    p[3] == 0x1a && p[4] >= 0x30 && p[4] <= 0x4f && p[5] == 0x2a && p[6] == 0x33 &&
		    p[7] == 0x24 && p[8] == 0x22) {
			st->cfa_how = C_PLT;
			st->cfa_reg = REG_RSP_DW;
			st->cfa_off = k;
			st->plt_thr = p[4] - 0x30;
		}
	}
}

#define MAX_REMEMBER 8

/* Moves the location to TO: the row [loc, TO) is complete (reported when
 * emitting); past TARGET, the rule sought is the current one. */
#define ADVANCE(to)                                     \
	do {                                            \
		uintptr_t to_ = (to);                   \
		if (em && to_ > loc)                    \
			emit_row(em, ci, loc, to_, st); \
		loc = to_;                              \
		if (loc > target)                       \
			return 1;                       \
	} while (0)

/* Runs CFI instructions [p, end) from location LOC up to the row covering
 * TARGET.  Returns 0 on malformed or unknown instructions. */
static int run_cfi(const uint8_t *p, const uint8_t *end, const struct mt_cfi_cie *ci, uintptr_t loc,
		   uintptr_t target, struct cfistate *st, const struct cfistate *init,
		   struct emitter *em)
{
	struct cfistate stack[MAX_REMEMBER];
	int depth = 0;
	while (p < end) {
		uint8_t op = *p++;
		uint64_t reg, u;
		int64_t s;
		switch (op >> 6) {
		case 1: /* advance_loc */
			ADVANCE(loc + (op & 0x3f) * ci->code_align);
			continue;
		case 2: /* offset */
			u = rd_uleb(&p, end);
			set_reg(st, ci, op & 0x3f, R_OFFSET, scaled(u, ci->data_align));
			continue;
		case 3: /* restore */
			restore_reg(st, init, ci, op & 0x3f);
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x01: { /* set_loc */
			uintptr_t a;
			if (!rd_ptr(&p, end, ci->fde_enc, 0, ci->adj, &a))
				return 0;
			ADVANCE(a);
			break;
		}
		case 0x02: /* advance_loc1 */
			if (end - p < 1)
				return 0;
			ADVANCE(loc + *p++ * ci->code_align);
			break;
		case 0x03: /* advance_loc2 */
			if (end - p < 2)
				return 0;
			p += 2;
			ADVANCE(loc + RD(uint16_t, p - 2) * ci->code_align);
			break;
		case 0x04: /* advance_loc4 */
			if (end - p < 4)
				return 0;
			p += 4;
			ADVANCE(loc + RD(uint32_t, p - 4) * ci->code_align);
			break;
		case 0x05: /* offset_extended */
			reg = rd_uleb(&p, end);
			u = rd_uleb(&p, end);
			set_reg(st, ci, reg, R_OFFSET, scaled(u, ci->data_align));
			break;
		case 0x06: /* restore_extended */
			restore_reg(st, init, ci, rd_uleb(&p, end));
			break;
		case 0x07: /* undefined */
			set_reg(st, ci, rd_uleb(&p, end), R_UNDEF, 0);
			break;
		case 0x08: /* same_value */
			set_reg(st, ci, rd_uleb(&p, end), R_SAME, 0);
			break;
		case 0x09: /* register */
			reg = rd_uleb(&p, end);
			rd_uleb(&p, end);
			set_reg(st, ci, reg, R_OTHER, 0);
			break;
		case 0x0a: /* remember_state */
			if (depth == MAX_REMEMBER)
				return 0;
			stack[depth++] = *st;
			break;
		case 0x0b: /* restore_state */
			if (depth == 0)
				return 0;
			*st = stack[--depth];
			break;
		case 0x0c: /* def_cfa */
			st->cfa_how = C_REG;
			st->cfa_reg = rd_uleb(&p, end);
			st->cfa_off = (int64_t)rd_uleb(&p, end);
			break;
		case 0x0d: /* def_cfa_register */
			st->cfa_reg = rd_uleb(&p, end);
			if (st->cfa_how != C_REG)
				st->cfa_how = C_BAD;
			break;
		case 0x0e: /* def_cfa_offset */
			st->cfa_off = (int64_t)rd_uleb(&p, end);
			if (st->cfa_how != C_REG)
				st->cfa_how = C_BAD;
			break;
		case 0x0f: /* def_cfa_expression */
			u = rd_uleb(&p, end);
			if (u > (uint64_t)(end - p))
				return 0;
			cfa_expression(st, p, p + u);
			p += u;
			break;
		case 0x10: { /* expression */
			reg = rd_uleb(&p, end);
			u = rd_uleb(&p, end);
			if (u > (uint64_t)(end - p))
				return 0;
			const uint8_t *e = p, *eend = p + u;
			p += u;
			/* gcc's realigned frames: rbp saved at *(rbp + k) */
			if (reg == REG_RBP_DW && e < eend && *e == 0x76) {
				e++;
				s = rd_sleb(&e, eend);
				if (e == eend) {
					set_reg(st, ci, reg, R_AT_RBP, s);
					break;
				}
			}
			set_reg(st, ci, reg, R_OTHER, 0);
			break;
		}
		case 0x11: /* offset_extended_sf */
			reg = rd_uleb(&p, end);
			s = rd_sleb(&p, end);
			set_reg(st, ci, reg, R_OFFSET, scaled((uint64_t)s, ci->data_align));
			break;
		case 0x12: /* def_cfa_sf */
			st->cfa_how = C_REG;
			st->cfa_reg = rd_uleb(&p, end);
			st->cfa_off = scaled((uint64_t)rd_sleb(&p, end), ci->data_align);
			break;
		case 0x13: /* def_cfa_offset_sf */
			st->cfa_off = scaled((uint64_t)rd_sleb(&p, end), ci->data_align);
			if (st->cfa_how != C_REG)
				st->cfa_how = C_BAD;
			break;
		case 0x14: /* val_offset */
			reg = rd_uleb(&p, end);
			rd_uleb(&p, end);
			set_reg(st, ci, reg, R_OTHER, 0);
			break;
		case 0x15: /* val_offset_sf */
			reg = rd_uleb(&p, end);
			rd_sleb(&p, end);
			set_reg(st, ci, reg, R_OTHER, 0);
			break;
		case 0x16: /* val_expression */
			reg = rd_uleb(&p, end);
			u = rd_uleb(&p, end);
			if (u > (uint64_t)(end - p))
				return 0;
			p += u;
			set_reg(st, ci, reg, R_OTHER, 0);
			break;
		case 0x2e: /* GNU_args_size */
			rd_uleb(&p, end);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = rd_uleb(&p, end);
			u = rd_uleb(&p, end);
			set_reg(st, ci, reg, R_OFFSET, scaled(0 - u, ci->data_align));
			break;
		default:
			return 0;
		}
	}
	return 1;
}

/* The rule state ST gives, with the CIE's properties. */
static void state_rule(const struct mt_cfi_cie *ci, const struct cfistate *st,
		       struct mt_cfi_rule *r)
{
	r->kind = MT_CFI_STOP;
	r->bhow = MT_CFI_B_UNDEF;
	r->off = r->boff = 0;
	r->plt_thr = 0;
	if (ci->signal) {
		r->kind = MT_CFI_SIGNAL;
		return;
	}
	if (ci->ra_reg != 16 || st->ra.how != R_OFFSET || st->ra.off != -8)
		return; /* rip undefined (outermost frame) or unsupported */
	switch (st->cfa_how) {
	case C_REG:
		if (st->cfa_reg == REG_RSP_DW)
			r->kind = MT_CFI_RSP;
		else if (st->cfa_reg == REG_RBP_DW)
			r->kind = MT_CFI_RBP;
		else
			return;
		r->off = st->cfa_off;
		break;
	case C_DEREF:
		if (st->cfa_reg != REG_RBP_DW)
			return;
		r->kind = MT_CFI_DEREF_RBP;
		r->off = st->cfa_off;
		break;
	case C_PLT:
		r->kind = MT_CFI_PLT;
		r->off = st->cfa_off;
		r->plt_thr = (int)st->plt_thr;
		break;
	default:
		return;
	}
	switch (st->rbp.how) {
	case R_SAME:
		r->bhow = MT_CFI_B_SAME;
		break;
	case R_OFFSET:
		r->bhow = MT_CFI_B_AT_CFA;
		r->boff = st->rbp.off;
		break;
	case R_AT_RBP:
		r->bhow = MT_CFI_B_AT_RBP;
		r->boff = st->rbp.off;
		break;
	default:
		r->bhow = MT_CFI_B_UNDEF;
		break;
	}
}

int mt_cfi_rule_from_hdr(const uint8_t *hdr, uintptr_t q, uintptr_t pc, struct mt_cfi_rule *r)
{
	struct mt_cfi_cie ci = { .adj = 0 };
	const uint8_t *insn, *iend;
	uintptr_t begin;

	r->kind = MT_CFI_STOP;
	r->bhow = MT_CFI_B_UNDEF;
	r->off = r->boff = 0;
	r->plt_thr = 0;
	if (!hdr || !find_fde(hdr, q, &ci, &insn, &iend, &begin))
		return 1;
	if (ci.signal) {
		r->kind = MT_CFI_SIGNAL;
		return 1;
	}
	struct cfistate init = { .cfa_how = C_BAD, .rbp = { R_SAME, 0 }, .ra = { R_SAME, 0 } };
	if (!run_cfi(ci.insn, ci.end, &ci, 0, UINTPTR_MAX, &init, &init, NULL))
		return 1;
	struct cfistate st = init;
	if (!run_cfi(insn, iend, &ci, begin, q, &st, &init, NULL))
		return 1;
	state_rule(&ci, &st, r);
	if (r->kind == MT_CFI_PLT) {
		r->kind = MT_CFI_RSP;
		r->off += (int64_t)(pc & 15) >= r->plt_thr ? 8 : 0;
		return 0; /* depends on the exact pc, not q */
	}
	return 1;
}

/* ---- every row of a section ----------------------------------------- */

struct emitter {
	mt_cfi_row_fn fn;
	void *ctx;
	uintptr_t last; /* where the rows given so far end */
};

static void emit_row(struct emitter *em, const struct mt_cfi_cie *ci, uintptr_t lo, uintptr_t hi,
		     const struct cfistate *st)
{
	struct mt_cfi_rule r;

	state_rule(ci, st, &r);
	em->fn(em->ctx, lo, hi, &r);
	em->last = hi;
}

/* The length of the record at P (before END): its body and end, or 0. */
static int record_in(const uint8_t *p, const uint8_t *end, const uint8_t **body,
		     const uint8_t **rend)
{
	if (end - p < 4)
		return 0;
	uint64_t len = RD(uint32_t, p);
	p += 4;
	if (len == 0xffffffffu) {
		if (end - p < 8)
			return 0;
		len = RD(uint64_t, p);
		p += 8;
	}
	if (len < 4 || len > (uint64_t)(end - p))
		return 0;
	*body = p;
	*rend = p + len;
	return 1;
}

/* The rows of the FDE whose body (after its length) is BODY..FEND. */
static void fde_rows(const uint8_t *data, const uint8_t *end, intptr_t adj, const uint8_t *body,
		     const uint8_t *fend, struct emitter *em)
{
	uint32_t cie_off = RD(uint32_t, body);
	const uint8_t *cie = body - cie_off, *cbody, *cend;
	struct mt_cfi_cie ci = { .adj = adj };
	struct mt_cfi_rule stop = { .kind = MT_CFI_STOP, .bhow = MT_CFI_B_UNDEF };

	/* Read from a file: a pointer to dereference is refused whatever ADJ
	 * is (rd_ptr tells the two cases apart by ADJ alone). */
	if (cie_off > (uintptr_t)(body - data) || !record_in(cie, end, &cbody, &cend) ||
	    !parse_cie(cie, &ci) || (ci.fde_enc & DW_EH_PE_indirect))
		return;
	const uint8_t *p = body + 4;
	uintptr_t begin, range;
	if (!rd_ptr(&p, fend, ci.fde_enc, 0, adj, &begin) ||
	    !rd_ptr(&p, fend, ci.fde_enc & 0x0f, 0, adj, &range) || !range ||
	    range > UINTPTR_MAX - begin)
		return;
	if (ci.has_z) {
		uint64_t alen = rd_uleb(&p, fend);
		if (alen > (uint64_t)(fend - p))
			return;
		p += alen;
	}
	em->last = begin;
	if (ci.signal) {
		struct mt_cfi_rule sig = { .kind = MT_CFI_SIGNAL, .bhow = MT_CFI_B_UNDEF };
		em->fn(em->ctx, begin, begin + range, &sig);
		return;
	}
	struct cfistate init = { .cfa_how = C_BAD, .rbp = { R_SAME, 0 }, .ra = { R_SAME, 0 } };
	if (!run_cfi(ci.insn, ci.end, &ci, 0, UINTPTR_MAX, &init, &init, NULL)) {
		em->fn(em->ctx, begin, begin + range, &stop);
		return;
	}
	struct cfistate st = init;
	int ok = run_cfi(p, fend, &ci, begin, UINTPTR_MAX, &st, &init, em);
	if (em->last >= begin + range)
		return;
	if (ok)
		emit_row(em, &ci, em->last, begin + range, &st);
	else
		em->fn(em->ctx, em->last, begin + range, &stop);
}

long mt_cfi_rows(const uint8_t *data, size_t size, uint64_t vaddr, mt_cfi_row_fn fn, void *ctx)
{
	const uint8_t *p = data, *end = data + size, *body, *rend;
	intptr_t adj = (intptr_t)(vaddr - (uintptr_t)data);
	struct emitter em = { .fn = fn, .ctx = ctx };
	long n = 0;

	while (end - p >= 4) {
		if (RD(uint32_t, p) == 0)
			break; /* the terminator */
		if (!record_in(p, end, &body, &rend))
			return -1;
		if (RD(uint32_t, body) != 0) {
			fde_rows(data, end, adj, body, rend, &em);
			n++;
		}
		p = rend;
	}
	return n;
}
