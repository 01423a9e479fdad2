/*
 * runtime_held.c - blocks the C and C++ runtimes hold until exit, told
 * apart from leaks.
 *
 * Some blocks the runtimes allocate for themselves and keep for the whole
 * run; they are freed only by __libc_freeres and __gnu_cxx::__freeres, which
 * a memory checker calls at exit and a normal exit does not: libstdc++'s
 * emergency exception pool, the buffers of stdio streams.  Counting them as
 * the program's leaks would show a leak in every C++ program and every
 * program that prints, so they are counted apart: "held by the runtime at
 * exit".  The rule is the same for both backends, and takes only blocks
 * still live at the end:
 *
 *   - a block whose allocating function (the leaf frame: it calls malloc
 *     itself) is stdio's buffer allocator, _IO_file_doallocate or
 *     _IO_wfile_doallocate: glibc frees the buffer of every stream in
 *     __libc_freeres, closed by the program or not (a stream it did not
 *     close still leaks its FILE, allocated elsewhere);
 *
 *   - a block allocated while the process was starting, before the first
 *     allocation of any code outside the runtime, from a stack made only of
 *     the runtime's frames (the dynamic loader, libc, libm, libstdc++,
 *     libgcc_s; the shim's own frames say nothing either way): the
 *     runtime's own initialisation, which the loader runs before any
 *     constructor of the program's or of its libraries'.  libstdc++'s
 *     pool is allocated there, by its static initializer.
 *
 *   - libstdc++'s pool in a program that carries libstdc++ itself
 *     (-static-libstdc++, as gcc's driver and cc1 are built): its static
 *     initializer is the executable's own code, which the second rule
 *     cannot tell from the program's, and a distribution's binary has no
 *     symbol table to name it.  It is known by its size and place: a block
 *     of the pool's size (72,704 bytes: 64 objects of 1 KiB and their
 *     headers, GCC 5 to 12 on 64-bit machines; 73,728 from GCC 13 on: 256
 *     of 288), allocated by a function of the executable that the runtime
 *     called (a static initializer, called by the C library's start code;
 *     the stack holds no other frame of the program's but _start).  main
 *     leaking a block of that very size itself would be taken too.
 *
 * Both conditions of the second rule are needed.  The stack alone would
 * also take a leak the program makes through a runtime function (strdup,
 * std::string's out-of-line members) under the BPF backend, whose stacks of
 * code built without frame pointers hold the calling function alone; the
 * start alone would take the leaks of a program's library's constructor.
 */
#include "runtime_held.h"
#include "base/util.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether the object at PATH is part of the C or C++ runtime. */
static int runtime_object(const char *path)
{
	static const char *const names[] = { "ld-linux",    "ld64.so",	     "ld.so",
					     "libc.so",	    "libm.so",	     "libstdc++.so",
					     "libgcc_s.so", "libpthread.so", "libdl.so" };
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strncmp(base, names[i], strlen(names[i])) == 0)
			return 1;
	return 0;
}

static const struct mt_module *module_of(const struct mt_process *p, uint64_t pc)
{
	for (size_t i = 0; i < p->nmodules; i++)
		if (pc >= p->modules[i].start && pc < p->modules[i].end)
			return &p->modules[i];
	return NULL;
}

enum { FOREIGN = 0, RUNTIME = 1 };

/* RUNTIME when every frame of SITE lies in the runtime (and there is one). */
static int site_kind(const struct mt_process *p, uint32_t site)
{
	const uint64_t *pcs = p->frames + p->site_off[site];
	int seen = 0;
	for (uint32_t i = 0; i < p->site_len[site]; i++) {
		const struct mt_module *m = module_of(p, pcs[i] ? pcs[i] - 1 : 0);
		if (!m)
			return FOREIGN;
		if (strstr(m->path, "libmemtrace-preload"))
			continue;
		if (!runtime_object(m->path))
			return FOREIGN;
		seen = 1;
	}
	return seen ? RUNTIME : FOREIGN;
}

/* libstdc++'s emergency pool, as its versions size it on 64-bit machines. */
static int pool_size(uint64_t size)
{
	return size == 72704 || size == 73728;
}

/* Whether SITE is a function of the executable's called by the runtime: its
 * leaf frame in the executable, every frame above in the runtime but an
 * outermost one in the executable (_start). */
static int exe_called_by_runtime(const struct mt_process *p, uint32_t site)
{
	const uint64_t *pcs = p->frames + p->site_off[site];
	uint32_t n = p->site_len[site], i = 0;
	const struct mt_module *m;
	while (i < n && (m = module_of(p, pcs[i] ? pcs[i] - 1 : 0)) &&
	       strstr(m->path, "libmemtrace-preload"))
		i++;
	m = i < n ? module_of(p, pcs[i] ? pcs[i] - 1 : 0) : NULL;
	if (!m || !p->exe || strcmp(m->path, p->exe) != 0)
		return 0;
	int runtime = 0;
	for (i++; i < n; i++) {
		m = module_of(p, pcs[i] ? pcs[i] - 1 : 0);
		if (m && runtime_object(m->path))
			runtime = 1;
		else if (!(m && runtime && i == n - 1 && !strcmp(m->path, p->exe)))
			return 0;
	}
	return runtime;
}

/* Where stdio's buffer allocators lie in a libc: their link-time ranges,
 * read from the object's symbol tables (.dynsym exports them), which is
 * much cheaper than loading the whole object into a symbolizer. */
struct stdio_fns {
	const struct mt_module *libc; /* the module they were read from, or NULL */
	uint64_t lo[2], hi[2];
	int n;
};

static void read_stdio_fns(const struct mt_module *m, struct stdio_fns *out)
{
	out->libc = m;
	out->n = 0;
	int fd = mt_open_recorded(m->path, NULL, 0);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	for (Elf_Scn *scn = NULL; e && (scn = elf_nextscn(e, scn)) && out->n < 2;) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize && out->n < 2; i++) {
			GElf_Sym sym;
			const char *name;
			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
			    !(name = elf_strptr(e, sh.sh_link, sym.st_name)))
				continue;
			if (strcmp(name, "_IO_file_doallocate") == 0 ||
			    strcmp(name, "_IO_wfile_doallocate") == 0) {
				out->lo[out->n] = sym.st_value;
				out->hi[out->n++] = sym.st_value + sym.st_size;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
}

/* Whether SITE allocates stdio buffers: its leaf frame lies in one of them
 * (the allocator's own frames never come first in a stack). */
static int stdio_site(const struct mt_process *p, struct stdio_fns *fns, uint32_t site)
{
	const uint64_t *pcs = p->frames + p->site_off[site];
	if (!p->site_len[site] || !pcs[0])
		return 0;
	uint64_t pc = pcs[0] - 1; /* the call, not the return address */
	const struct mt_module *m = module_of(p, pc);
	const char *base = m ? strrchr(m->path, '/') : NULL;
	if (!base || strncmp(base + 1, "libc.so", 7) != 0)
		return 0;
	if (fns->libc != m)
		read_stdio_fns(m, fns);
	for (int i = 0; i < fns->n; i++)
		if (pc - m->bias >= fns->lo[i] && pc - m->bias < fns->hi[i])
			return 1;
	return 0;
}

struct held_ctx {
	const uint8_t *held_site; /* 1: every leaked block; 2: those from the start;
				   * 3: those of the pool's size */
	uint64_t start_end;	  /* event index of the first foreign allocation */
};

static int is_held(void *ctx, const struct mt_live *b)
{
	const struct held_ctx *h = ctx;
	return h->held_site[b->site] == 1 ||
	       (h->held_site[b->site] == 2 && b->seq < h->start_end) ||
	       (h->held_site[b->site] == 3 && pool_size(b->size));
}

void mt_process_stdio_held(struct mt_process *p)
{
	struct mt_figures *c = &p->figures;
	struct stdio_fns fns = { 0 };
	for (uint32_t i = 0; i < c->nsites; i++) {
		struct mt_site_stats *s = &c->sites[i];
		if (!s->live_count || !stdio_site(p, &fns, i))
			continue;
		s->held_bytes += s->live_bytes;
		s->held_count += s->live_count;
		c->t.held_bytes += s->live_bytes;
		c->t.held_count += s->live_count;
		c->t.live_bytes -= s->live_bytes;
		c->t.live_count -= s->live_count;
		s->live_bytes = s->live_count = 0;
	}
}

void mt_process_runtime_held(struct mt_process *p)
{
	struct mt_figures *c = &p->figures;
	if (!c->t.live_count || !c->nsites)
		return;
	uint8_t *held = calloc(c->nsites, 1);
	if (!held)
		return;
	uint64_t start_end = UINT64_MAX;
	struct stdio_fns fns = { 0 };
	int any = 0;
	for (uint32_t i = 0; i < c->nsites; i++) {
		const struct mt_site_stats *s = &c->sites[i];
		int kind = site_kind(p, i);
		uint64_t first = c->times ? c->times[i].first_seq : 0;
		if (kind == FOREIGN && first && first < start_end)
			start_end = first;
		if (!s->live_count)
			continue;
		if (stdio_site(p, &fns, i))
			held[i] = 1;
		else if (kind == RUNTIME)
			held[i] = 2;
		else if (s->min_size <= 73728 && s->max_size >= 72704 &&
			 exe_called_by_runtime(p, i))
			held[i] = 3;
		any |= held[i];
	}
	if (any) {
		struct held_ctx h = { held, start_end };
		mt_figures_runtime_held(c, is_held, &h);
	}
	free(held);
}
