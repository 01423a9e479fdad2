/*
 * test_hostile_elf.c - the BPF backend's unwind-table compiler
 * (capture/bpf/unwind.c) on ELF files a local user could map executable in
 * a process root traces, built here in memory: one .eh_frame blob named by
 * many section headers must cost what one header costs (it once made 160
 * copies of its rows: 1.5 GB for a 1.2 MB file), and an object with more
 * rows than the limit gets no table at all; nor does one that would take
 * the process that mapped it, or all tables together, over theirs (the
 * budget, mtb_unwind_fits).  Needs no privileges.
 */
#include "capture/bpf/capture_int.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../check.h"

#define ROWS_PER_FDE 4000

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *data, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
}

static void put8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void pad4(struct buf *b, size_t from)
{
	while ((b->n - from) % 4)
		put8(b, 0); /* DW_CFA_nop */
}

/* An .eh_frame of one CIE and NFDE FDEs of ROWS_PER_FDE rows each (the CFA
 * offset alternating at every byte, so that no two rows merge). */
static struct buf eh_frame(unsigned nfde)
{
	struct buf b = { 0 };
	static const uint8_t cie[] = { 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x03,
				       0x0c, 7, 8, 0x90, 1 };

	put32(&b, 0);
	put(&b, cie, sizeof cie);
	pad4(&b, 0);
	memcpy(b.p, &(uint32_t){ (uint32_t)b.n - 4 }, 4);
	for (unsigned i = 0; i < nfde; i++) {
		size_t at = b.n;
		put32(&b, 0);
		put32(&b, (uint32_t)(b.n)); /* back to the CIE at 0 */
		put32(&b, 0x100000 + i * 0x10000);
		put32(&b, ROWS_PER_FDE);
		put8(&b, 0); /* augmentation data */
		for (unsigned r = 0; r < ROWS_PER_FDE; r++) {
			put8(&b, 0x41); /* advance_loc 1 */
			put8(&b, 0x0e); /* def_cfa_offset */
			put8(&b, r % 2 ? 16 : 24);
		}
		pad4(&b, at);
		memcpy(b.p + at, &(uint32_t){ (uint32_t)(b.n - at - 4) }, 4);
	}
	put32(&b, 0);
	return b;
}

/* A memfd holding an ELF shared object whose section headers name the
 * .eh_frame of NFDE FDEs NHDR times.  Returns its descriptor. */
static int elf_file(unsigned nfde, unsigned nhdr)
{
	static const char strtab[] = "\0.shstrtab\0.eh_frame";
	struct buf eh = eh_frame(nfde);
	struct buf f = { 0 };
	Elf64_Ehdr eh64 = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			    .e_phoff = sizeof(Elf64_Ehdr), .e_ehsize = sizeof(Elf64_Ehdr),
			    .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
			    .e_shentsize = sizeof(Elf64_Shdr), .e_shstrndx = 1 };
	memcpy(eh64.e_ident, ELFMAG, SELFMAG);
	eh64.e_ident[EI_CLASS] = ELFCLASS64;
	eh64.e_ident[EI_DATA] = ELFDATA2LSB;
	eh64.e_ident[EI_VERSION] = EV_CURRENT;
	size_t strtab_at = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
	size_t eh_at = (strtab_at + sizeof strtab + 15) & ~(size_t)15;
	eh64.e_shoff = (eh_at + eh.n + 15) & ~(size_t)15;
	eh64.e_shnum = (uint16_t)(2 + nhdr);
	Elf64_Phdr load = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_filesz = 1u << 30,
			    .p_memsz = 1u << 30, .p_align = 4096 };

	put(&f, &eh64, sizeof eh64);
	put(&f, &load, sizeof load);
	put(&f, strtab, sizeof strtab);
	while (f.n < eh_at)
		put8(&f, 0);
	put(&f, eh.p, eh.n);
	while (f.n < eh64.e_shoff)
		put8(&f, 0);
	Elf64_Shdr none = { 0 };
	Elf64_Shdr names = { .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = strtab_at,
			     .sh_size = sizeof strtab, .sh_addralign = 1 };
	Elf64_Shdr frame = { .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
			     .sh_addr = eh_at, .sh_offset = eh_at, .sh_size = eh.n,
			     .sh_addralign = 8 };
	put(&f, &none, sizeof none);
	put(&f, &names, sizeof names);
	for (unsigned i = 0; i < nhdr; i++)
		put(&f, &frame, sizeof frame);

	int fd = memfd_create("hostile-elf", 0);
	if (fd < 0 || write(fd, f.p, f.n) != (ssize_t)f.n) {
		perror("memfd");
		exit(1);
	}
	free(eh.p);
	free(f.p);
	return fd;
}

/* The rows of the file on FD, compiled in a child whose address space may
 * grow by at most 256 MB: how many, or -1 if the child failed. */
static long rows_bounded(int fd)
{
	int pfd[2];
	if (pipe(pfd))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 256u << 20, 256u << 20 };
		FILE *st = fopen("/proc/self/statm", "r");
		unsigned long pages = 0;
		if (st && fscanf(st, "%lu", &pages) == 1)
			rl.rlim_cur = rl.rlim_max += pages * (unsigned long)sysconf(_SC_PAGESIZE);
		setrlimit(RLIMIT_AS, &rl);
		struct mtb_urow *rows;
		size_t n = mtb_unwind_rows(fd, &rows);
		long v = n == SIZE_MAX ? -2 : (long)n;
		_exit(write(pfd[1], &v, sizeof v) == sizeof v ? 0 : 1);
	}
	close(pfd[1]);
	long v = -1;
	int status;
	if (read(pfd[0], &v, sizeof v) != sizeof v)
		v = -1;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? v : -1;
}

int main(void)
{
	/* 25 FDEs: 100,000 rows and the gaps between them. */
	int one = elf_file(25, 1), many = elf_file(25, 160);
	long n1 = rows_bounded(one), n160 = rows_bounded(many);

	CHECK(n1 > 25 * ROWS_PER_FDE);
	CHECK_EQ(n160, n1);
	close(one);
	close(many);

	/* Over the limit of rows an object: no table (SIZE_MAX), not 2M rows. */
	int big = elf_file(600, 1);
	CHECK_EQ(rows_bounded(big), -2);
	close(big);
	/* The budgets: 2M rows an object, 4M the objects a process mapped
	 * first, 16M in all; at a budget's edge, and one row over it. */
	CHECK(mtb_unwind_fits(1u << 21, 0, 0));
	CHECK(!mtb_unwind_fits((1u << 21) + 1, 0, 0));
	CHECK(mtb_unwind_fits(1u << 21, 0, (1u << 22) - (1u << 21)));
	CHECK(!mtb_unwind_fits(1u << 21, 0, (1u << 22) - (1u << 21) + 1));
	CHECK(!mtb_unwind_fits(1, 0, 1u << 22)); /* a process at its budget */
	CHECK(mtb_unwind_fits(1000, (1u << 24) - 1000, 0));
	CHECK(!mtb_unwind_fits(1001, (1u << 24) - 1000, 0));
	CHECK(!mtb_unwind_fits(0, (1u << 24) + 1, 0)); /* (never wraps) */
	CHECK(!mtb_unwind_fits(1, 0, UINT64_MAX));
	printf("rows: one header %ld, 160 headers %ld\n", n1, n160);
	return failures != 0;
}
