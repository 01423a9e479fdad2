/*
 * unwind.c - the unwind tables of the BPF backend's in-kernel unwinder
 * (bpf/unwind.bpf.h, dwarf_stack; the layout in bpf/memtrace.h): the
 * .eh_frame of an ELF object compiled (format/cfi.c, the shim's compiler)
 * into rows sorted by file offset, loaded into a BPF array of its own size,
 * registered in utabs at the table's id and in utab_ids under the object's
 * device and inode.  One table per object, whichever process maps it and
 * wherever: the unwinder finds the mapping of a PC itself (bpf_find_vma).
 *
 * Rows are merged where neighbours have the same rule; a gap between two
 * FDEs (code without CFI) gets a row of kind 0, where the unwinder falls
 * back on the frame pointer.  An object without .eh_frame gets no table:
 * its frames are walked with frame pointers (counted as "no table").
 *
 * The object is any file a traced process mapped executable: hostile.  Only
 * its first .eh_frame section is compiled (160 section headers naming one
 * blob once made 160 copies of its rows), an object gives at most
 * MTB_MAX_OBJ_ROWS rows, the objects a process mapped first at most
 * MTB_MAX_PROC_ROWS (so that one process cannot take the others' room in a
 * sweep), and all tables together MTB_MAX_ALL_ROWS (kernel memory): an
 * object over any gets no table, and the user is told once; its frames
 * then count as "no table" in every report.  A table is made once per
 * file (device and inode), whoever maps it.
 */
#include "capture_int.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/util.h"
#include "format/cfi.h"

_Static_assert(MTB_UK_RSP == MT_CFI_RSP && MTB_UK_RBP == MT_CFI_RBP &&
		       MTB_UK_DEREF_RBP == MT_CFI_DEREF_RBP && MTB_UK_STOP == MT_CFI_STOP &&
		       MTB_UK_SIGNAL == MT_CFI_SIGNAL && MTB_UK_PLT == MT_CFI_PLT,
	       "memtrace.h's row kinds are format/cfi.h's");
_Static_assert(MTB_UK_B_SAME == MT_CFI_B_SAME && MTB_UK_B_AT_CFA == MT_CFI_B_AT_CFA &&
		       MTB_UK_B_AT_RBP == MT_CFI_B_AT_RBP && MTB_UK_B_UNDEF == MT_CFI_B_UNDEF,
	       "memtrace.h's %rbp rules are format/cfi.h's");

/* A row as the compiler gives it, in file offsets, before sorting. */
struct span {
	uint64_t lo, hi;
	struct mtb_urow r;
};

/* The largest objects on these machines have about 1M rows (Debian's
 * libclang-cpp.so.14 1,000,508, libLLVM-14.so.1 948,864); a row costs 16
 * bytes of kernel memory (12, rounded up to 8 by the array map). */
#define MTB_MAX_OBJ_ROWS (1u << 21)
#define MTB_MAX_ALL_ROWS (1u << 24)
#define MTB_MAX_PROC_ROWS (1u << 22)

struct build {
	GElf_Phdr *load; /* PT_LOAD segments: vaddr -> file offset */
	size_t nload;
	struct span *s;
	size_t n, cap;
	int over; /* more spans than MTB_MAX_OBJ_ROWS: the object gets no table */
};

/* File offset of link-time address V, or UINT64_MAX if no segment has it. */
static uint64_t file_offset(const struct build *b, uint64_t v)
{
	for (size_t i = 0; i < b->nload; i++) {
		const GElf_Phdr *p = &b->load[i];
		if (v >= p->p_vaddr && v < p->p_vaddr + p->p_filesz)
			return v - p->p_vaddr + p->p_offset;
	}
	return UINT64_MAX;
}

static void on_row(void *ctx, uint64_t lo, uint64_t hi, const struct mt_cfi_rule *r)
{
	struct build *b = ctx;
	uint64_t flo = file_offset(b, lo);

	if (flo == UINT64_MAX || hi <= lo || flo + (hi - lo) > UINT32_MAX)
		return;
	struct mtb_urow row = { .kind = MTB_UK_STOP, .bhow = MTB_UK_B_UNDEF };

	/* What does not fit a row stops the walk, as the shim's unwinder
	 * stops on what it cannot follow.  A signal frame (__restore_rt) is
	 * its kind alone: the unwinder reads the kernel's signal frame. */
	if (r->kind == MT_CFI_SIGNAL) {
		row.kind = MTB_UK_SIGNAL;
	} else if (r->off >= INT32_MIN && r->off <= INT32_MAX && r->boff >= INT16_MIN &&
		   r->boff <= INT16_MAX) {
		row.kind = (uint8_t)r->kind;
		row.off = (int32_t)r->off;
		row.boff = (int16_t)r->boff;
		row.bhow = (uint8_t)r->bhow;
	}
	if (b->n >= MTB_MAX_OBJ_ROWS) {
		b->over = 1;
		return;
	}
	mt_grow(&b->s, &b->cap, b->n, sizeof(*b->s));
	b->s[b->n++] = (struct span){ .lo = flo, .hi = flo + (hi - lo), .r = row };
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int same_rule(const struct mtb_urow *a, const struct mtb_urow *b)
{
	return a->kind == b->kind && a->off == b->off && a->boff == b->boff && a->bhow == b->bhow;
}

/* The rows of B's spans, sorted, merged, gaps filled: how many, in *OUT. */
static size_t make_rows(struct build *b, struct mtb_urow **out)
{
	if (b->n)
		qsort(b->s, b->n, sizeof(*b->s), span_cmp);
	struct mtb_urow *rows = xmalloc((2 * b->n + 1) * sizeof(*rows));
	size_t n = 0;
	uint64_t end = 0;

	for (size_t i = 0; i < b->n; i++) {
		const struct span *s = &b->s[i];
		if (s->hi <= end)
			continue; /* overlapping FDEs: the first wins */
		uint64_t lo = s->lo < end ? end : s->lo;
		if (n && lo > end) {
			rows[n++] = (struct mtb_urow){ .pc = (uint32_t)end }; /* a gap */
		}
		if (!n || lo > end || !same_rule(&rows[n - 1], &s->r)) {
			rows[n] = s->r;
			rows[n++].pc = (uint32_t)lo;
		}
		end = s->hi;
	}
	if (n)
		rows[n++] = (struct mtb_urow){ .pc = (uint32_t)end };
	*out = rows;
	return n;
}

/* The rows of the ELF object open on FD: how many (0: no .eh_frame), or
 * SIZE_MAX when it has more than MTB_MAX_OBJ_ROWS. */
size_t mtb_unwind_rows(int fd, struct mtb_urow **rows)
{
	struct build b = { .load = NULL };
	size_t n = 0, nph, shstrndx;
	Elf *e;

	*rows = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return 0;
	if (elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64 || elf_getphdrnum(e, &nph) ||
	    elf_getshdrstrndx(e, &shstrndx))
		goto out;
	b.load = xcalloc(nph ? nph : 1, sizeof(*b.load));
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			b.load[b.nload++] = ph;
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(name, ".eh_frame"))
			continue;
		if ((d = elf_rawdata(scn, NULL)) && d->d_buf && d->d_size) {
			mt_cfi_rows(d->d_buf, d->d_size, sh.sh_addr, on_row, &b);
			break; /* the first one only */
		}
	}
	n = b.over ? SIZE_MAX : make_rows(&b, rows);
out:
	free(b.load);
	free(b.s);
	elf_end(e);
	return n;
}

/* A new array holding ROWS[0..N): its descriptor, or -1. */
static int load_table(const struct mtb_urow *rows, size_t n)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "mt_urows", sizeof(uint32_t),
				sizeof(struct mtb_urow), (uint32_t)n, &mo);

	if (fd < 0)
		return -1;
	uint32_t *keys = xmalloc(n * sizeof(*keys));
	for (size_t i = 0; i < n; i++)
		keys[i] = (uint32_t)i;
	int r = 0;
	for (size_t at = 0; at < n && r == 0;) {
		uint32_t cnt = (uint32_t)(n - at < 65536 ? n - at : 65536);
		r = bpf_map_update_batch(fd, keys + at, rows + at, &cnt, NULL);
		at += cnt;
	}
	if (r) { /* no batch operations: one by one */
		r = 0;
		for (size_t i = 0; r == 0 && i < n; i++)
			r = bpf_map_update_elem(fd, &keys[i], &rows[i], BPF_ANY);
	}
	free(keys);
	if (r) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Puts the tables made since the last call into utabs, then makes them
 * findable (utab_ids).  Each update of a map of maps waits for an RCU grace
 * period (10-30 ms here): one batch for them all waits once, where one
 * update per table made sweep's first scan of a busy machine take seconds. */
void mtb_unwind_flush(struct mt_bpf *b)
{
	size_t n = b->nupend;

	if (!n)
		return;
	uint32_t *ids = xmalloc(n * sizeof(*ids));
	int *fds = xmalloc(n * sizeof(*fds));
	for (size_t i = 0; i < n; i++) {
		ids[i] = b->upend[i].t.id;
		fds[i] = b->upend[i].fd;
	}
	uint32_t cnt = (uint32_t)n;
	int batch = bpf_map_update_batch(b->fd_utabs, ids, fds, &cnt, NULL) == 0 && cnt == n;
	for (size_t i = 0; i < n; i++) {
		struct mtb_upend *p = &b->upend[i];
		if ((batch || bpf_map_update_elem(b->fd_utabs, &ids[i], &fds[i], BPF_ANY) == 0) &&
		    bpf_map_update_elem(b->fd_utab_ids, &p->k, &p->t, BPF_ANY) == 0)
			b->utab_rows += p->t.nrows;
		close(p->fd); /* utabs holds it */
	}
	free(ids);
	free(fds);
	b->nupend = 0;
}

int mtb_unwind_fits(uint64_t n, uint64_t all, uint64_t proc)
{
	return n <= MTB_MAX_OBJ_ROWS && all <= MTB_MAX_ALL_ROWS && n <= MTB_MAX_ALL_ROWS - all &&
	       proc <= MTB_MAX_PROC_ROWS && n <= MTB_MAX_PROC_ROWS - proc;
}

void mtb_unwind_add(struct mt_bpf *b, int fd, uint64_t dev, uint64_t ino, const char *path,
		    pid_t pid)
{
	if (!b->dwarf || fd < 0 || b->nutabs >= MTB_MAX_UTABS)
		return;
	struct mtb_urow *rows;
	size_t n = mtb_unwind_rows(fd, &rows);

	uint64_t made = b->utab_rows; /* and the tables not yet flushed */
	for (size_t i = 0; i < b->nupend; i++)
		made += b->upend[i].t.nrows;
	uint64_t charged = 0;
	if (!b->utab_charged.keys)
		mt_ptrmap_xinit(&b->utab_charged, 64);
	mt_ptrmap_get(&b->utab_charged, (uint64_t)pid + 1, &charged);
	if (n != SIZE_MAX && !mtb_unwind_fits(n, made, charged))
		n = SIZE_MAX;
	if (n == SIZE_MAX) {
		if (!b->utab_refused++)
			fprintf(stderr,
				"memtrace: warning: %s: its unwind table is over the limit (%u rows an "
				"object, %u the objects of a process, %u in all): its frames count as "
				"stack_no_table\n",
				path, MTB_MAX_OBJ_ROWS, MTB_MAX_PROC_ROWS, MTB_MAX_ALL_ROWS);
	} else if (n > 0) {
		mt_ptrmap_xput(&b->utab_charged, (uint64_t)pid + 1, charged + n);
		struct mtb_utab_key k = { .dev = (uint64_t)major(dev) << 20 | minor(dev),
					  .ino = ino };
		struct mtb_utab t = { .id = b->nutabs, .nrows = (uint32_t)n };
		int tfd = load_table(rows, n);

		if (tfd >= 0) {
			mt_grow(&b->upend, &b->capupend, b->nupend, sizeof(*b->upend));
			b->upend[b->nupend++] = (struct mtb_upend){ .fd = tfd, .k = k, .t = t };
			b->nutabs++;
			if (b->nupend >= 32)
				mtb_unwind_flush(b);
			const char *debug = getenv("MEMTRACE_BPF_DEBUG");
			if (debug && strcmp(debug, "0"))
				fprintf(stderr,
					"memtrace: bpf: unwind table %u: %s: %zu rows, %zu KB\n",
					t.id, path, n, n * sizeof(*rows) / 1024);
		}
	}
	free(rows);
}

/* The kernel rounds an array's values up to 8 bytes. */
uint64_t mt_bpf_unwind_table_bytes(struct mt_bpf *b)
{
	return b ? b->utab_rows * ((sizeof(struct mtb_urow) + 7) & ~(size_t)7) : 0;
}
