/*
 * test_symbols.c - unit test of src/analyse/symbols.c.
 *
 * The program symbolizes itself: it declares its own executable (and a
 * library built without debug info) the way a recording would, with load
 * bias, address range and build-id taken from dl_iterate_phdr, then checks
 * names, files, lines and inline chains of code whose lines it knows from
 * __LINE__.  Code addresses come from sym_test_here(), which returns its
 * call site (return address - 1), exactly what the recorder hands over.
 */
#include "analyse/symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

uint64_t sym_test_here(void);
uint64_t sym_test_cpp_probe(int *line);
uint64_t symtest_nodebug_function(uint64_t x);

static int str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const char *base_name(const char *path)
{
	if (!path)
		return NULL;
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

#define CHECK_STR(got, want)                                                          \
	do {                                                                          \
		const char *g_ = (got);                                               \
		if (!str_eq(g_, (want))) {                                            \
			fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, \
				__LINE__, #got, g_ ? g_ : "(null)", (want));          \
			failures++;                                                   \
		}                                                                     \
	} while (0)

#define CHECK_INT(got, want)                                                              \
	do {                                                                              \
		long long g_ = (got), w_ = (want);                                        \
		if (g_ != w_) {                                                           \
			fprintf(stderr, "%s:%d: %s is %lld, expected %lld\n", __FILE__, __LINE__, \
				#got, g_, w_);                                            \
			failures++;                                                       \
		}                                                                         \
	} while (0)

/* ---- code to look at ---------------------------------------------------- */

struct probe {
	uint64_t addr;
	int line;
};

/* The call site of its caller, as the recorder would report it. */
NOINLINE uint64_t sym_test_here(void)
{
	__asm__ volatile("");
	return (uint64_t)(uintptr_t)__builtin_return_address(0) - 1;
}

NOINLINE void plain_function(struct probe *p)
{
	p->addr = sym_test_here(); p->line = __LINE__;
}

static inline __attribute__((always_inline)) void inner_inline(struct probe *p)
{
	p->addr = sym_test_here(); p->line = __LINE__;
}

static inline __attribute__((always_inline)) void outer_inline(struct probe *p, int *line)
{
	inner_inline(p); *line = __LINE__;
}

NOINLINE void inline_caller(struct probe *p, int lines[2])
{
	outer_inline(p, &lines[0]); lines[1] = __LINE__;
}

/* ---- the module list, as the recorder would capture it ------------------ */

struct module_info {
	char path[4096];
	uint64_t bias, start, end;
	uint64_t text_start, text_end; /* the executable segment */
	uint8_t build_id[64];
	size_t build_id_len;
};

static void read_build_id(struct dl_phdr_info *info, const ElfW(Phdr) *ph, struct module_info *m)
{
	const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
	const char *end = p + ph->p_memsz;
	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		const char *name = p + sizeof *nh;
		const char *desc = name + ((nh->n_namesz + 3) & ~3u);
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
		    nh->n_descsz <= sizeof m->build_id) {
			memcpy(m->build_id, desc, nh->n_descsz);
			m->build_id_len = nh->n_descsz;
			return;
		}
		p = desc + ((nh->n_descsz + 3) & ~3u);
	}
}

struct find_request {
	const char *name_suffix; /* "" for the main program */
	struct module_info *out;
	int found;
};

static int find_module_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_request *r = data;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if (r->name_suffix[0] == '\0') {
		if (name[0] != '\0')
			return 0;
	} else {
		size_t n = strlen(name), k = strlen(r->name_suffix);
		if (n < k || strcmp(name + n - k, r->name_suffix) != 0)
			return 0;
	}
	struct module_info *m = r->out;
	memset(m, 0, sizeof *m);
	if (name[0] == '\0') {
		ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
		if (n < 0)
			return 0;
		m->path[n] = '\0';
	} else {
		snprintf(m->path, sizeof m->path, "%s", name);
	}
	m->bias = info->dlpi_addr;
	m->start = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			uint64_t lo = info->dlpi_addr + ph->p_vaddr;
			uint64_t hi = lo + ph->p_memsz;
			if (lo < m->start)
				m->start = lo;
			if (hi > m->end)
				m->end = hi;
			if (ph->p_flags & PF_X) {
				m->text_start = lo;
				m->text_end = hi;
			}
		} else if (ph->p_type == PT_NOTE && m->build_id_len == 0) {
			read_build_id(info, ph, m);
		}
	}
	r->found = 1;
	return 1;
}

static int find_module(const char *suffix, struct module_info *out)
{
	struct find_request r = { suffix, out, 0 };
	dl_iterate_phdr(find_module_cb, &r);
	return r.found;
}

static void add(struct mt_symbolizer *s, const struct module_info *m)
{
	mt_sym_add_module(s, m->path, m->bias, m->start, m->end, m->build_id, m->build_id_len);
}

static int count_warnings(struct mt_symbolizer *s)
{
	int n = 0;
	for (const char *const *w = mt_sym_warnings(s); *w; w++)
		n++;
	return n;
}

static int has_warning(struct mt_symbolizer *s, const char *line)
{
	for (const char *const *w = mt_sym_warnings(s); *w; w++)
		if (strcmp(*w, line) == 0)
			return 1;
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- tests -------------------------------------------------------------- */

static void test_plain(struct mt_symbolizer *s, const struct module_info *self)
{
	struct probe p;
	plain_function(&p);
	struct mt_frame f[8];
	int n = mt_sym_resolve(s, p.addr, f, 8);
	CHECK_INT(n, 1);
	CHECK_STR(f[0].function, "plain_function");
	CHECK_STR(base_name(f[0].file), "test_symbols.c");
	CHECK_INT(f[0].line, p.line);
	CHECK_STR(f[0].module, self->path);
	CHECK_INT(f[0].inlined, 0);
	CHECK(f[0].address == p.addr);
	CHECK(f[0].file && f[0].file[0] == '/' && !strstr(f[0].file, "/../"));

	/* The function's entry address resolves to the function too. */
	n = mt_sym_resolve(s, (uint64_t)(uintptr_t)&plain_function, f, 8);
	CHECK_INT(n, 1);
	CHECK_STR(f[0].function, "plain_function");
	CHECK(f[0].line > 0);

	/* Cached: the same interned strings come back. */
	struct mt_frame g[8];
	n = mt_sym_resolve(s, p.addr, f, 8);
	int m = mt_sym_resolve(s, p.addr, g, 8);
	CHECK_INT(n, m);
	CHECK(f[0].function == g[0].function && f[0].file == g[0].file);
	CHECK(f[0].line == g[0].line && f[0].module == g[0].module);
}

static void test_inline(struct mt_symbolizer *s)
{
	struct probe p;
	int lines[2];
	inline_caller(&p, lines);
	struct mt_frame f[8];
	int n = mt_sym_resolve(s, p.addr, f, 8);
	CHECK_INT(n, 3);
	if (n != 3)
		return;
	CHECK_STR(f[0].function, "inner_inline");
	CHECK_STR(base_name(f[0].file), "test_symbols.c");
	CHECK_INT(f[0].line, p.line);
	CHECK_INT(f[0].inlined, 1);
	CHECK_STR(f[1].function, "outer_inline");
	CHECK_STR(base_name(f[1].file), "test_symbols.c");
	CHECK_INT(f[1].line, lines[0]);
	CHECK_INT(f[1].inlined, 1);
	CHECK_STR(f[2].function, "inline_caller");
	CHECK_STR(base_name(f[2].file), "test_symbols.c");
	CHECK_INT(f[2].line, lines[1]);
	CHECK_INT(f[2].inlined, 0);
	for (int i = 0; i < 3; i++)
		CHECK(f[i].address == p.addr && f[i].module == f[0].module);

	/* Less room than frames: the innermost ones and the real function. */
	n = mt_sym_resolve(s, p.addr, f, 2);
	CHECK_INT(n, 2);
	CHECK_STR(f[0].function, "inner_inline");
	CHECK_STR(f[1].function, "inline_caller");
	n = mt_sym_resolve(s, p.addr, f, 1);
	CHECK_INT(n, 1);
	CHECK_STR(f[0].function, "inline_caller");
	CHECK_INT(mt_sym_resolve(s, p.addr, f, 0), 0);
}

static void test_cpp(struct mt_symbolizer *s)
{
	int line = 0;
	uint64_t addr = sym_test_cpp_probe(&line);
	struct mt_frame f[8];
	int n = mt_sym_resolve(s, addr, f, 8);
	CHECK_INT(n, 1);
	CHECK_STR(f[0].function, "mtns::Widget::method(int, int*)");
	CHECK_STR(base_name(f[0].file), "test_symbols_cpp.cpp");
	CHECK_INT(f[0].line, line);
}

/* Whether a file whose name holds NAME is mapped into this process. */
static int mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;
	while (f && fgets(line, sizeof line, f))
		found |= strstr(line, name) != NULL;
	if (f)
		fclose(f);
	return found;
}

static void test_nodebug(struct mt_symbolizer *s, const struct module_info *lib)
{
	CHECK_INT(symtest_nodebug_function(1), 4);
	void *fn = dlsym(RTLD_DEFAULT, "symtest_nodebug_function");
	CHECK(fn != NULL);
	if (!fn)
		return;
	struct mt_frame f[8];
	int n = mt_sym_resolve(s, (uint64_t)(uintptr_t)fn + 1, f, 8);
	CHECK_INT(n, 1);
	CHECK_STR(f[0].function, "symtest_nodebug_function");
	CHECK(f[0].file == NULL);
	CHECK_INT(f[0].line, 0);
	CHECK_STR(f[0].module, lib->path);

	/* Mangled symbol table names come out demangled; the hash legacy
	 * Rust names end with is dropped. */
	static const char *const names[][2] = {
		{ "_ZN7mtspace6helperEm", "mtspace::helper(unsigned long)" },
		{ "_ZN6mtrust5inner4work17h0123456789abcdefE", "mtrust::inner::work" },
	};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		fn = dlsym(RTLD_DEFAULT, names[i][0]);
		CHECK(fn != NULL);
		if (!fn)
			continue;
		n = mt_sym_resolve(s, (uint64_t)(uintptr_t)fn + 1, f, 8);
		CHECK_INT(n, 1);
		CHECK_STR(f[0].function, names[i][1]);
	}
	/* No debug file anywhere and no debuginfod server set: libdwfl's
	 * debuginfod client (libcurl and what it pulls in, 5 MB resident)
	 * is not loaded for nothing. */
	CHECK(!mapped("libdebuginfod"));
}

static void test_no_module(struct mt_symbolizer *s)
{
	struct mt_frame f[8];
	int n = mt_sym_resolve(s, 16, f, 8);
	CHECK_INT(n, 1);
	CHECK(f[0].function == NULL && f[0].module == NULL && f[0].file == NULL);
	CHECK_INT(f[0].line, 0);
	CHECK(f[0].address == 16);
}

static void test_reset(struct mt_symbolizer *s, const struct module_info *self)
{
	struct probe p;
	plain_function(&p);
	struct mt_frame before, f;
	CHECK_INT(mt_sym_resolve(s, p.addr, &before, 1), 1);
	mt_sym_reset_modules(s);
	CHECK_INT(mt_sym_resolve(s, p.addr, &f, 1), 1);
	CHECK(f.module == NULL && f.function == NULL);
	add(s, self);
	add(s, self); /* declared twice: still one module */
	CHECK_INT(mt_sym_resolve(s, p.addr, &f, 1), 1);
	CHECK(f.function == before.function && f.file == before.file);
	CHECK_INT(f.line, p.line);
}

static void test_wrong_build_id(const struct module_info *self)
{
	struct mt_symbolizer *s = mt_sym_new();
	struct module_info m = *self;
	CHECK(m.build_id_len > 0);
	m.build_id[0] ^= 0xff;
	add(s, &m);
	struct probe p;
	plain_function(&p);
	struct mt_frame f[4];
	int n = mt_sym_resolve(s, p.addr, f, 4);
	CHECK_INT(n, 1);
	CHECK(f[0].function == NULL && f[0].file == NULL);
	CHECK_STR(f[0].module, self->path);
	char want[5000];
	snprintf(want, sizeof want, "%s: build-id differs from the recording; symbols not resolved",
		 self->path);
	CHECK(has_warning(s, want));
	CHECK_INT(count_warnings(s), 1);
	mt_sym_free(s);

	/* No build-id recorded: nothing to check against, symbols resolve. */
	s = mt_sym_new();
	m.build_id_len = 0;
	add(s, &m);
	n = mt_sym_resolve(s, p.addr, f, 4);
	CHECK_STR(f[0].function, "plain_function");
	CHECK_INT(count_warnings(s), 0);
	mt_sym_free(s);
}

/* Object files are opened once and shared by every symbolizer (each
 * process of a recording has one): the same file mapped elsewhere in
 * another process, with or without its build-id recorded, resolves to the
 * same frames at the same offsets, whichever symbolizer opened it first
 * and while both are in use. */
static void test_shared(const struct module_info *self)
{
	const uint64_t moved = 0x100000000ull;
	struct probe p;
	plain_function(&p);
	struct mt_symbolizer *a = mt_sym_new(), *b = mt_sym_new(), *c = mt_sym_new();
	add(a, self);
	struct module_info m = *self;
	m.bias += moved;
	m.start += moved;
	m.end += moved;
	add(b, &m);
	m.build_id_len = 0;
	add(c, &m);
	struct mt_frame fa, fb, fc;
	CHECK_INT(mt_sym_resolve(a, p.addr, &fa, 1), 1);
	CHECK_INT(mt_sym_resolve(b, p.addr + moved, &fb, 1), 1);
	CHECK_INT(mt_sym_resolve(c, p.addr + moved, &fc, 1), 1);
	const struct mt_frame *fs[] = { &fa, &fb, &fc };
	for (int i = 0; i < 3; i++) {
		CHECK_STR(fs[i]->function, "plain_function");
		CHECK_INT(fs[i]->line, p.line);
		CHECK(fs[i]->offset == p.addr - self->bias);
		CHECK_STR(fs[i]->module, self->path);
	}
	CHECK(fb.address == p.addr + moved && fc.address == p.addr + moved);
	mt_sym_free(a);
	/* B's object outlives A, which opened it: an address not resolved yet */
	uint64_t here = (uint64_t)(uintptr_t)test_shared;
	CHECK_INT(mt_sym_resolve(b, here + moved, &fb, 1), 1);
	CHECK_STR(fb.function, "test_shared");
	CHECK(fb.offset == here - self->bias);
	mt_sym_free(b);
	mt_sym_free(c);
}

/* Writes the first LEN bytes of SRC to a fresh temporary file. */
static int truncated_copy(const char *src, size_t len, char *tmpl)
{
	int in = open(src, O_RDONLY);
	int out = mkstemp(tmpl);
	if (in < 0 || out < 0)
		goto fail;
	char *buf = malloc(len);
	if (!buf)
		goto fail;
	ssize_t got = pread(in, buf, len, 0);
	int ok = got > 0 && write(out, buf, (size_t)got) == got;
	free(buf);
	close(in);
	close(out);
	return ok;
fail:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return 0;
}

/* A frame without a symbol is named module+0xoffset: the file name and the
 * address less the module's bias, the same in every run (ASLR moves the
 * bias, not the offset). */
static void test_label(void)
{
	for (int run = 0; run < 2; run++) {
		struct mt_symbolizer *s = mt_sym_new();
		uint64_t bias = run ? 0x7f0000000000ull : 0x555500000000ull;
		mt_sym_add_module(s, "/nonexistent/libgone.so", bias, bias + 0x1000, bias + 0x9000,
				  NULL, 0);
		struct mt_frame f[4];
		char buf[128];
		CHECK_INT(mt_sym_resolve(s, bias + 0x1234, f, 4), 1);
		CHECK(f[0].function == NULL && f[0].offset == 0x1234);
		CHECK_STR(mt_frame_label(&f[0], buf, sizeof buf), "libgone.so+0x1234");
		CHECK_INT(mt_sym_resolve(s, 0x10, f, 4), 1);
		CHECK_STR(mt_frame_label(&f[0], buf, sizeof buf), "0x10");
		mt_sym_free(s);
	}
	struct mt_frame none = { 0 }, named = { .function = "main", .module = "/bin/x" };
	char buf[64];
	CHECK_STR(mt_frame_label(&none, buf, sizeof buf), "[unknown]");
	CHECK_STR(mt_frame_label(&named, buf, sizeof buf), "main");
}

static void test_bad_files(const struct module_info *self)
{
	struct mt_symbolizer *s = mt_sym_new();
	const uint8_t id[4] = { 1, 2, 3, 4 };
	uint64_t base = 0x100000000000ull;
	mt_sym_add_module(s, "/nonexistent/libgone.so", 0, base, base + 0x1000, id, 4);
	mt_sym_add_module(s, "/nonexistent/libgone.so", 0, base, base + 0x1000, id, 4);
	mt_sym_add_module(s, "/tmp", 0, base + 0x1000, base + 0x2000, NULL, 0);
	mt_sym_add_module(s, "/etc/passwd", 0, base + 0x2000, base + 0x3000, NULL, 0);
	mt_sym_add_module(s, "[vdso]", 0, base + 0x3000, base + 0x4000, NULL, 0);
	mt_sym_add_module(s, "/nonexistent/empty-range", 0, base + 0x5000, base + 0x5000, NULL, 0);

	char header[] = "/tmp/test_symbols_hdrXXXXXX";
	char half[] = "/tmp/test_symbols_halfXXXXXX";
	long size = 0;
	FILE *fp = fopen(self->path, "rb");
	if (fp) {
		fseek(fp, 0, SEEK_END);
		size = ftell(fp);
		fclose(fp);
	}
	int have_header = truncated_copy(self->path, 64, header);
	int have_half = size > 0 && truncated_copy(self->path, (size_t)size / 2, half);
	CHECK(have_header && have_half);
	if (have_header)
		mt_sym_add_module(s, header, 0, base + 0x10000, base + 0x20000, NULL, 0);
	/* Its build-id note is near the start and still matches: libdw gets
	 * to read the cut debug sections. */
	if (have_half)
		mt_sym_add_module(s, half, self->bias, self->start, self->end, self->build_id,
				  self->build_id_len);

	CHECK(has_warning(s, "/nonexistent/libgone.so: cannot open: No such file or directory"));
	CHECK(has_warning(s, "/tmp: cannot open: not a regular file"));
	int passwd = 0;
	for (const char *const *w = mt_sym_warnings(s); *w; w++)
		passwd += strncmp(*w, "/etc/passwd: cannot open: ", 26) == 0;
	CHECK_INT(passwd, 1);
	if (have_header) {
		char prefix[64];
		snprintf(prefix, sizeof prefix, "%s: cannot open: ", header);
		int found = 0;
		for (const char *const *w = mt_sym_warnings(s); *w; w++)
			found += strncmp(*w, prefix, strlen(prefix)) == 0;
		CHECK_INT(found, 1);
	}
	for (const char *const *w = mt_sym_warnings(s); *w; w++)
		printf("warning: %s\n", *w);

	struct mt_frame f[8];
	uint64_t probes[] = { base + 0x10, base + 0x1010, base + 0x2010, base + 0x3010,
			      base + 0x5000, base + 0x10010 };
	const char *modules[] = { "/nonexistent/libgone.so", "/tmp", "/etc/passwd", "[vdso]",
				  NULL, have_header ? header : NULL };
	for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
		int n = mt_sym_resolve(s, probes[i], f, 8);
		CHECK_INT(n, 1);
		CHECK(f[0].function == NULL);
		if (modules[i])
			CHECK_STR(f[0].module, modules[i]);
		else
			CHECK(f[0].module == NULL);
	}
	/* Half an executable: whatever it yields, it must not crash. */
	struct probe p;
	plain_function(&p);
	int n = mt_sym_resolve(s, p.addr, f, 8);
	CHECK(n >= 1);
	printf("half-truncated executable: %s (%s:%d)\n", f[0].function ? f[0].function : "?",
	       f[0].file ? f[0].file : "?", f[0].line);
	mt_sym_free(s);
	if (have_header)
		unlink(header);
	if (have_half)
		unlink(half);
}

/* PATH is a stripped copy of this program with a .gnu_debuglink to its
 * debug info: names and lines must come from there. */
static void test_split_debug(const struct module_info *self, const char *path)
{
	struct mt_symbolizer *s = mt_sym_new();
	mt_sym_add_module(s, path, self->bias, self->start, self->end, self->build_id,
			  self->build_id_len);
	CHECK_INT(count_warnings(s), 0);
	struct probe p;
	int lines[2];
	inline_caller(&p, lines);
	struct mt_frame f[8];
	int n = mt_sym_resolve(s, p.addr, f, 8);
	CHECK_INT(n, 3);
	CHECK_STR(f[0].function, "inner_inline");
	CHECK_INT(f[0].line, p.line);
	CHECK_STR(f[n - 1].function, "inline_caller");
	CHECK_INT(f[n - 1].line, lines[1]);
	CHECK_STR(base_name(f[n - 1].file), "test_symbols.c");
	CHECK_STR(f[0].module, path);
	mt_sym_free(s);
}

/* Not a test: how long one resolve takes, uncached and cached. */
static void measure(const struct module_info *self)
{
	struct mt_symbolizer *s = mt_sym_new();
	add(s, self);
	struct mt_frame f[16];
	/* Addresses spread evenly over the code: most land inside functions,
	 * many in inlined code, like real call sites do. */
	uint64_t span = self->text_end - self->text_start;
	uint64_t step = span / 20000 ? span / 20000 : 1;
	int count = (int)(span / step);
	double t0 = now();
	int named = 0;
	for (int i = 0; i < count; i++)
		named += mt_sym_resolve(s, self->text_start + (uint64_t)i * step, f, 16) > 0 &&
			 f[0].function;
	double t1 = now();
	for (int round = 0; round < 10; round++)
		for (int i = 0; i < count; i++)
			mt_sym_resolve(s, self->text_start + (uint64_t)i * step, f, 16);
	double t2 = now();
	printf("timing: %d addresses (%d named): uncached %.2f us/resolve, cached %.3f us/resolve\n",
	       count, named, (t1 - t0) * 1e6 / count, (t2 - t1) * 1e6 / (10.0 * count));
	mt_sym_free(s);
}

int main(int argc, char **argv)
{
	/* The test must not go to the network for debug info. */
	unsetenv("DEBUGINFOD_URLS");

	struct module_info self, lib;
	if (!find_module("", &self) || !find_module("libsymtest-nodebug.so", &lib)) {
		fprintf(stderr, "cannot find own modules\n");
		return 1;
	}
	CHECK(self.build_id_len > 0);

	struct mt_symbolizer *s = mt_sym_new();
	add(s, &self);
	add(s, &lib);
	CHECK_INT(count_warnings(s), 0);

	test_plain(s, &self);
	test_inline(s);
	test_cpp(s);
	test_nodebug(s, &lib);
	test_no_module(s);
	test_reset(s, &self);
	mt_sym_free(s);
	mt_sym_free(NULL);

	test_wrong_build_id(&self);
	test_shared(&self);
	test_label();
	test_bad_files(&self);
	if (argc > 1)
		test_split_debug(&self, argv[1]);
	else
		printf("no stripped copy given: separate debug info not tested\n");
	measure(&self);

	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all symbols checks passed\n");
	return 0;
}
