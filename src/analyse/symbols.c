/*
 * symbols.c - turning recorded addresses into functions, files and lines
 * (symbols.h), with elfutils' libdwfl and libdw.
 *
 * Every object file a module maps gets an offline Dwfl session, opened when
 * the module is declared so that an unusable file (missing, not an ELF,
 * rebuilt since the recording) is reported once, up front.  A module's file
 * is the copy embedded in the recording if it has one, else the file at the
 * recorded path, else one found by build-id (open_module).  libdwfl loads
 * the DWARF lazily and finds separate debug files (embedded first, then
 * /usr/lib/debug/.build-id, .gnu_debuglink).
 *
 * The sessions are shared by every symbolizer, whatever process or thread
 * it serves (struct dwobj): an object is reported at its link-time
 * addresses and looked up at an address less the module's load bias, so
 * that libc's DWARF, decompressed once, serves every process that mapped it
 * wherever it did (a recording of 500 forks read it 500 times: 34 s).
 * Objects no symbolizer uses are kept, a few of them, for the next.
 *
 * An address is resolved in three steps: libdwfl finds its compilation
 * unit (.debug_aranges), an index of the unit's functions built on first
 * use finds the function, and a walk down that function's DIEs to the
 * innermost scope holding the address collects the inlined subroutines on
 * the way: those are the frames.  Without DWARF, the ELF symbol table
 * names the function.  Results are cached per (module, address), and every
 * string handed out is interned, so the report side can compare and keep
 * pointers freely.
 */
#include "symbols.h"
#include "base/hash.h"
#include "objects.h"
#include "base/util.h"
#include "format/codec.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* From the C++ runtime the binary links with; declared here so that this
 * file stays plain C. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Longest inline chain kept; real chains are a handful deep. */
#define MAX_CHAIN 64
/* Bound on DIE nesting followed, against corrupt or cyclic DWARF. */
#define MAX_DEPTH 128

/* ---- small helpers ---------------------------------------------------- */

/* Makes room for one more element in a growable array. */
#define GROW(arr, count, cap)                                           \
	do {                                                            \
		if ((count) + 1 >= (cap)) {                             \
			(cap) = (cap) ? (cap)*2 : 16;                   \
			(arr) = xrealloc((arr), (cap) * sizeof *(arr)); \
		}                                                       \
	} while (0)

/* ---- interned strings ------------------------------------------------- */

/* Strings live in big chunks freed all at once: frames point into them for
 * the symbolizer's whole life. */
struct chunk {
	struct chunk *next;
	size_t used, size;
	char data[];
};

struct str_entry {
	const char *str; /* NULL: empty slot */
	size_t len;
	uint64_t hash;
	const char *demangled; /* memo for demangle(), NULL until asked */
};

struct strtab {
	struct str_entry *slots;
	size_t cap, count; /* cap is a power of two */
	struct chunk *chunks;
};

static char *chunk_alloc(struct strtab *t, size_t n)
{
	struct chunk *c = t->chunks;
	if (!c || c->size - c->used < n) {
		size_t size = n > 16384 ? n : 65536;
		c = xrealloc(NULL, sizeof *c + size);
		c->used = 0;
		c->size = size;
		/* A string too big for a fresh standard chunk gets a chunk of
		 * its own behind the current one, which stays the one filled. */
		if (t->chunks && n > 16384) {
			c->next = t->chunks->next;
			t->chunks->next = c;
		} else {
			c->next = t->chunks;
			t->chunks = c;
		}
	}
	char *p = c->data + c->used;
	c->used += n;
	return p;
}

static void strtab_grow(struct strtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct str_entry *slots = xcalloc(cap, sizeof *slots);
	for (size_t i = 0; i < t->cap; i++) {
		struct str_entry *e = &t->slots[i];
		if (!e->str)
			continue;
		size_t j = e->hash & (cap - 1);
		while (slots[j].str)
			j = (j + 1) & (cap - 1);
		slots[j] = *e;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
}

static struct str_entry *intern_entry(struct strtab *t, const char *s, size_t len)
{
	if (2 * (t->count + 1) > t->cap)
		strtab_grow(t);
	uint64_t h = mt_fnv_bytes(MT_FNV_SEED, s, len);
	size_t i = h & (t->cap - 1);
	for (;; i = (i + 1) & (t->cap - 1)) {
		struct str_entry *e = &t->slots[i];
		if (!e->str)
			break;
		if (e->hash == h && e->len == len && memcmp(e->str, s, len) == 0)
			return e;
	}
	char *copy = chunk_alloc(t, len + 1);
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->slots[i] = (struct str_entry){ .str = copy, .len = len, .hash = h };
	t->count++;
	return &t->slots[i];
}

static const char *intern(struct strtab *t, const char *s)
{
	return s ? intern_entry(t, s, strlen(s))->str : NULL;
}

static void strtab_free(struct strtab *t)
{
	while (t->chunks) {
		struct chunk *next = t->chunks->next;
		free(t->chunks);
		t->chunks = next;
	}
	free(t->slots);
	memset(t, 0, sizeof *t);
}

/* ---- names --------------------------------------------------------------- */

/* Legacy Rust symbols demangle as C++ with a trailing "::h<16 hex>" hash
 * that only adds noise to a report. */
static void strip_rust_hash(char *name)
{
	size_t len = strlen(name);
	if (len < 19)
		return;
	char *h = name + len - 19;
	if (memcmp(h, "::h", 3) != 0)
		return;
	for (int i = 3; i < 19; i++)
		if (!strchr("0123456789abcdef", h[i]))
			return;
	*h = '\0';
}

/* Demangled, interned form of NAME, or NAME itself (interned) when it is
 * not a mangled name.  Memoized: the same names come back for every
 * address of a function. */
static const char *demangle(struct strtab *t, const char *name)
{
	if (!name)
		return NULL;
	struct str_entry *e = intern_entry(t, name, strlen(name));
	if (e->demangled)
		return e->demangled;
	const char *result = e->str;
	if (strncmp(name, "_Z", 2) == 0) {
		int status = -1;
		char *d = __cxa_demangle(name, NULL, NULL, &status);
		if (d && status == 0) {
			if (strncmp(name, "_ZN", 3) == 0)
				strip_rust_hash(d);
			/* Interning may move the table: look the entry up
			 * again afterwards. */
			result = intern(t, d);
			e = intern_entry(t, name, strlen(name));
		}
		free(d);
	}
	e->demangled = result;
	return result;
}

/* Lexically drops "." and "dir/.." components: DWARF file names are often
 * "<build dir>/../src/x.c", which reads badly in a report. */
static void normalize_path(char *path)
{
	if (path[0] != '/')
		return;
	/* Rewritten in place: the output never gets ahead of the input. */
	char *out = path;
	const char *p = path;
	size_t n = 0;
	while (*p) {
		while (*p == '/')
			p++;
		const char *seg = p;
		while (*p && *p != '/')
			p++;
		size_t len = (size_t)(p - seg);
		if (len == 0 || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			/* Drop the last "/segment" written, if any. */
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			continue;
		}
		out[n++] = '/';
		memmove(out + n, seg, len);
		n += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
}

/* Interns a source file name, made absolute against the compilation
 * directory COMP_DIR when it is relative (builds that compile
 * "../src/x.c" leave such names in the line table), then tidied. */
static const char *intern_source(struct strtab *t, const char *name, const char *comp_dir)
{
	if (!name)
		return NULL;
	bool relative = name[0] != '/' && comp_dir && comp_dir[0] == '/';
	if (!relative && (name[0] != '/' || (!strstr(name, "/./") && !strstr(name, "/../"))))
		return intern(t, name);
	size_t len = strlen(name) + (relative ? strlen(comp_dir) + 1 : 0) + 1;
	char *path = xrealloc(NULL, len);
	if (relative)
		snprintf(path, len, "%s/%s", comp_dir, name);
	else
		memcpy(path, name, len);
	normalize_path(path);
	const char *r = intern(t, path);
	free(path);
	return r;
}

/* ---- modules ------------------------------------------------------------- */

/* An object file open in a Dwfl session of its own, at its link-time
 * addresses, shared (refs) by the modules of every symbolizer that map it.
 * It is known by its build-id, or without one by the identity of the file
 * opened (device, inode, size, time), and by the recording's embedded
 * binaries it may take its debug file from.  LOCK is held across every
 * libdw call on it: libdw loads lazily, and is not thread-safe. */
struct dwobj {
	struct dwobj *next; /* in the list of all, most recently used first */
	unsigned refs;
	uint8_t *build_id;
	size_t build_id_len;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct mt_objects *objects; /* the recording's embedded binaries, or NULL */
	char *path;		    /* the first module's, for the debug file's search */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct cu_index *cus; /* hash table by unit offset, built as used */
	size_t ncus, cus_cap;
	pthread_mutex_t lock;
};

struct module {
	const char *path; /* interned, as recorded */
	uint64_t start, end, bias;
	uint8_t *build_id;
	size_t build_id_len;
	struct dwobj *obj; /* NULL when no file can be used */
};

struct cache_slot {
	uint64_t address;
	const struct module *mod; /* NULL: empty slot */
	uint32_t first, count;	  /* frames in the symbolizer's pool */
};

struct mt_symbolizer {
	/* Every module ever declared, owned here.  A reset only empties the
	 * active list: the same modules usually come right back, and keeping
	 * them keeps their loaded DWARF and their cached addresses. */
	struct module **all;
	size_t nall, all_cap;
	struct module **active; /* sorted by start */
	size_t nactive, active_cap;
	struct module *last; /* last module hit: addresses come in runs */

	struct strtab strings;

	struct cache_slot *cache;
	size_t cache_cap, cache_count;
	struct mt_frame *frames;
	size_t nframes, frames_cap;

	const char **warnings; /* NULL-terminated */
	size_t nwarnings, warnings_cap;

	struct mt_objects *objects; /* binaries embedded in the recording */
};

static void add_warning(struct mt_symbolizer *s, const char *path, const char *what)
{
	size_t len = strlen(path) + strlen(what) + 3;
	char *line = xrealloc(NULL, len);
	snprintf(line, len, "%s: %s", path, what);
	const char *w = intern(&s->strings, line);
	free(line);
	for (size_t i = 0; i < s->nwarnings; i++)
		if (s->warnings[i] == w)
			return;
	GROW(s->warnings, s->nwarnings, s->warnings_cap);
	s->warnings[s->nwarnings++] = w;
	s->warnings[s->nwarnings] = NULL;
}

/* Pseudo-modules such as the vDSO have no file to read, and no warning is
 * due for them: nothing is wrong. */
static bool is_pseudo_path(const char *path)
{
	return path[0] == '\0' || path[0] == '[' || strncmp(path, "linux-vdso", 10) == 0 ||
	       strncmp(path, "linux-gate", 10) == 0;
}

static bool build_id_matches(const struct module *m, Dwfl_Module *mod)
{
	if (m->build_id_len == 0)
		return true; /* nothing recorded, nothing to check */
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &bits, &vaddr);
	return len > 0 && (size_t)len == m->build_id_len &&
	       memcmp(bits, m->build_id, m->build_id_len) == 0;
}

/* Where a module's ELF file comes from, in the order tried: the copy
 * embedded in the recording (made from the very file that was mapped), the
 * file at the recorded path when its build-id matches, then a file found
 * by build-id (a separate debug file has the symbols and DWARF at the same
 * addresses: enough to name frames when the binary itself is gone). */
static int open_regular(const char *path, char *why, size_t whylen)
{
	/* Opened here, not by libdwfl: base/util.c's rule for hostile paths
	 * (a FIFO at a module's path cannot hang the report), and errno makes
	 * a better message than libdwfl's own. */
	return mt_open_recorded(path, why, whylen);
}

/* The search for a module's separate debug file, after the one embedded
 * in the recording, done here rather than by libdwfl's standard search,
 * which opens the files a .gnu_debuglink names with a plain open: a FIFO
 * planted beside a traced program hung `-p`, `report` and the server for
 * good.  In the standard's order: by build-id under /usr/lib/debug (system
 * directories only, through libdwfl), then by name (the debuglink's, or the
 * file's own plus ".debug") beside the file, in .debug/ beside it and under
 * /usr/lib/debug, each opened by mt_open_regular and kept only if its
 * build-id (or, without one, the debuglink's CRC) is the module's, then a
 * debuginfod server when DEBUGINFOD_URLS names one. */

/* Whether the file open on FD is the debug file of MOD: the same build-id,
 * or when MOD has none, the CRC its debuglink gives (CHECK_CRC). */
static bool debug_file_matches(Dwfl_Module *mod, int fd, bool check_crc, GElf_Word crc)
{
	const unsigned char *want;
	GElf_Addr vaddr;
	int wantlen = dwfl_module_build_id(mod, &want, &vaddr);

	if (wantlen > 0) {
		Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *got;
		ssize_t gotlen = e ? dwelf_elf_gnu_build_id(e, &got) : -1;
		bool same = gotlen == wantlen && memcmp(got, want, (size_t)wantlen) == 0;
		if (e)
			elf_end(e);
		return same;
	}
	if (!check_crc)
		return true;
	uLong sum = crc32(0, NULL, 0);
	unsigned char buf[1 << 16];
	ssize_t n;
	off_t at = 0;
	while ((n = pread(fd, buf, sizeof buf, at)) > 0) {
		sum = crc32(sum, buf, (uInt)n);
		at += n;
	}
	return n == 0 && (GElf_Word)sum == crc;
}

static int debug_by_name(Dwfl_Module *mod, const char *file_name, const char *debuglink,
			 GElf_Word crc, char **found)
{
	if (!file_name || file_name[0] != '/')
		return -1;
	const char *slash = strrchr(file_name, '/');
	int dirlen = (int)(slash - file_name);
	char own[PATH_MAX];
	snprintf(own, sizeof own, "%s.debug", slash + 1);
	const char *names[2] = { debuglink, own };
	static const char *const fmts[] = { "%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s" };
	for (int n = 0; n < 2; n++) {
		if (!names[n] || !*names[n])
			continue;
		for (size_t f = 0; f < sizeof fmts / sizeof *fmts; f++) {
			char path[PATH_MAX];
			if (names[n][0] == '/') {
				if (f)
					break;
				snprintf(path, sizeof path, "%s", names[n]);
			} else {
				snprintf(path, sizeof path, fmts[f], dirlen, file_name, names[n]);
			}
			int fd = mt_open_regular(path, 0, NULL, 0);
			if (fd < 0)
				continue;
			if (debug_file_matches(mod, fd, n == 0, crc)) {
				*found = xstrdup(path);
				return fd;
			}
			close(fd);
		}
	}
	return -1;
}

/* libdebuginfod's lookup, through the client libdwfl loads on demand (and
 * only then: with its libcurl, TLS, LDAP and Kerberos libraries it costs
 * 5 MB of memory).  Its prototype is libdebuginfod's public one. */
typedef int (*debuginfod_find_fn)(debuginfod_client *c, const unsigned char *build_id,
				  int build_id_len, char **path);

static int debug_by_debuginfod(Dwfl *dwfl, Dwfl_Module *mod, char **found)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	const unsigned char *id;
	GElf_Addr vaddr;
	int idlen = dwfl_module_build_id(mod, &id, &vaddr);

	if (!urls || !*urls || idlen <= 0 || !dwfl)
		return -1;
	debuginfod_client *c = dwfl_get_debuginfod_client(dwfl);
	void *lib = c ? dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_NOLOAD) : NULL;
	debuginfod_find_fn find =
		lib ? (debuginfod_find_fn)dlsym(lib, "debuginfod_find_debuginfo") : NULL;
	int fd = find ? find(c, id, idlen, found) : -1;
	if (lib)
		dlclose(lib);
	return fd < 0 ? -1 : fd;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct dwobj *m = *userdata;
	if (m && m->objects) {
		int fd = mt_objects_open(m->objects, MT_OBJECT_DEBUG, m->build_id, m->build_id_len,
					 m->path);
		if (fd >= 0)
			return fd;
	}
	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink_file, debuglink_crc, debuginfo_file_name);
	if (fd < 0)
		fd = debug_by_name(mod, file_name, debuglink_file, debuglink_crc,
				   debuginfo_file_name);
	if (fd < 0)
		fd = debug_by_debuginfod(m ? m->dwfl : NULL, mod, debuginfo_file_name);
	return fd;
}

/* Offline sessions: modules are reported by hand, nothing runs. */
static char *debuginfo_path; /* NULL: libdwfl's default search path */
static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* ---- shared objects ------------------------------------------------------ */

/* Unused objects kept for the symbolizers to come: a report makes one
 * symbolizer per process, one after the other, and a process maps a few
 * objects (the program, libc, ld.so, a handful more). */
#define IDLE_MAX 8

static pthread_mutex_t objs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dwobj *objs; /* most recently used first */

static void cus_free(struct dwobj *o);

static void obj_free(struct dwobj *o)
{
	if (o->dwfl)
		dwfl_end(o->dwfl);
	cus_free(o);
	free(o->build_id);
	free(o->path);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

static bool obj_is(const struct dwobj *o, const struct dwobj *k)
{
	if (o->objects != k->objects || o->build_id_len != k->build_id_len)
		return false;
	if (k->build_id_len)
		return memcmp(o->build_id, k->build_id, k->build_id_len) == 0;
	return o->dev == k->dev && o->ino == k->ino && o->size == k->size &&
	       o->mtime.tv_sec == k->mtime.tv_sec && o->mtime.tv_nsec == k->mtime.tv_nsec;
}

/* The object known as K, taken (objs_lock held), moved to the front. */
static struct dwobj *obj_take(const struct dwobj *k)
{
	for (struct dwobj **pp = &objs; *pp; pp = &(*pp)->next) {
		struct dwobj *o = *pp;
		if (!obj_is(o, k))
			continue;
		*pp = o->next;
		o->next = objs;
		objs = o;
		o->refs++;
		return o;
	}
	return NULL;
}

static struct dwobj *obj_find(const struct dwobj *k)
{
	pthread_mutex_lock(&objs_lock);
	struct dwobj *o = obj_take(k);
	pthread_mutex_unlock(&objs_lock);
	return o;
}

/* Gives O back; past IDLE_MAX unused objects, the least recently used go. */
static void obj_release(struct dwobj *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&objs_lock);
	o->refs--;
	size_t idle = 0;
	for (struct dwobj **pp = &objs; *pp;) {
		struct dwobj *x = *pp;
		if (!x->refs && ++idle > IDLE_MAX) {
			*pp = x->next;
			obj_free(x);
		} else {
			pp = &x->next;
		}
	}
	pthread_mutex_unlock(&objs_lock);
}

/* Reports FD (owned from here) as M's file, at its link-time addresses:
 * the object, shared, when it is usable and its build-id is the recorded
 * one; else NULL and why. */
static struct dwobj *obj_open(struct mt_symbolizer *s, const struct module *m, int fd, char *why,
			      size_t whylen)
{
	struct dwobj k = { .objects = s->objects };
	struct stat st;
	if (m->build_id_len) {
		k.build_id = m->build_id;
		k.build_id_len = m->build_id_len;
	} else if (fstat(fd, &st) == 0) {
		k.dev = st.st_dev;
		k.ino = st.st_ino;
		k.size = st.st_size;
		k.mtime = st.st_mtim;
		struct dwobj *o = obj_find(&k);
		if (o) {
			close(fd);
			return o;
		}
	}
	Dwfl *dwfl = dwfl_begin(&offline_callbacks);
	if (!dwfl) {
		snprintf(why, whylen, "cannot open: libdwfl failed");
		close(fd);
		return NULL;
	}
	/* libdwfl owns FD once the module is made (and leaves it to us when it
	 * is not).  Base 0 with add_p_vaddr true: the module's bias is 0, its
	 * addresses the link-time ones. */
	Dwfl_Module *mod = dwfl_report_elf(dwfl, m->path, m->path, fd, 0, true);
	if (!mod)
		close(fd);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		snprintf(why, whylen, "cannot open: %s", dwfl_errmsg(-1));
	} else if (!build_id_matches(m, mod)) {
		snprintf(why, whylen, "build-id differs from the recording; symbols not resolved");
	} else {
		struct dwobj *o = xcalloc(1, sizeof *o);
		*o = k;
		o->refs = 1;
		o->dwfl = dwfl;
		o->mod = mod;
		o->path = xstrdup(m->path);
		if (k.build_id_len) {
			o->build_id = xmalloc(k.build_id_len);
			memcpy(o->build_id, k.build_id, k.build_id_len);
		}
		pthread_mutex_init(&o->lock, NULL);
		void **userdata;
		dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
		*userdata = o;
		/* another thread may have opened it meanwhile: theirs is kept */
		pthread_mutex_lock(&objs_lock);
		struct dwobj *had = obj_take(&k);
		if (!had) {
			o->next = objs;
			objs = o;
		}
		pthread_mutex_unlock(&objs_lock);
		if (had)
			obj_free(o);
		return had ? had : o;
	}
	dwfl_end(dwfl);
	return NULL;
}

/* A file with M's build-id where debuginfo tools put them: Debian's
 * /usr/lib/debug/.build-id and debuginfod's client cache. */
static int open_by_build_id(const struct module *m)
{
	if (m->build_id_len == 0)
		return -1;
	char hex[2 * 64 + 1];
	size_t n = m->build_id_len < 64 ? m->build_id_len : 64;
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
	char path[PATH_MAX];
	snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	int fd = open_regular(path, NULL, 0);
	if (fd >= 0)
		return fd;
	const char *cache = getenv("DEBUGINFOD_CACHE_PATH");
	const char *home = getenv("HOME");
	const char *kinds[] = { "executable", "debuginfo" };
	for (int k = 0; k < 2; k++) {
		if (cache && *cache)
			snprintf(path, sizeof path, "%s/%s/%s", cache, hex, kinds[k]);
		else if (home && *home)
			snprintf(path, sizeof path, "%s/.cache/debuginfod_client/%s/%s", home, hex,
				 kinds[k]);
		else
			return -1;
		if ((fd = open_regular(path, NULL, 0)) >= 0)
			return fd;
	}
	return -1;
}

/* Opens the module's file in a Dwfl session of its own.  On failure the
 * module stays without one (frames get module and address only) and a
 * warning says why. */
static void open_module(struct mt_symbolizer *s, struct module *m)
{
	if (is_pseudo_path(m->path))
		return;
	char why[256] = "", ignored[256];
	/* any file with the recorded build-id will do: one already open first */
	struct dwobj k = { .objects = s->objects,
			   .build_id = m->build_id,
			   .build_id_len = m->build_id_len };
	if (m->build_id_len && (m->obj = obj_find(&k)))
		return;
	int fd = mt_objects_open(s->objects, MT_OBJECT_ELF, m->build_id, m->build_id_len, m->path);
	if (fd >= 0 && (m->obj = obj_open(s, m, fd, ignored, sizeof ignored)))
		return;
	fd = open_regular(m->path, why, sizeof why);
	if (fd >= 0 && (m->obj = obj_open(s, m, fd, why, sizeof why)))
		return;
	fd = open_by_build_id(m);
	if (fd >= 0 && (m->obj = obj_open(s, m, fd, ignored, sizeof ignored)))
		return;
	/* the shim's own frames are left out of every stack by their module
	 * (sites.c), named or not: a shim rebuilt since is no news */
	if (strstr(m->path, "libmemtrace-preload"))
		return;
	add_warning(s, m->path, why);
}

static bool same_module(const struct module *m, const char *path, uint64_t bias, uint64_t start,
			uint64_t end, const uint8_t *build_id, size_t build_id_len)
{
	return m->path == path && m->bias == bias && m->start == start && m->end == end &&
	       m->build_id_len == build_id_len &&
	       (build_id_len == 0 || memcmp(m->build_id, build_id, build_id_len) == 0);
}

static struct module *find_known(struct mt_symbolizer *s, const char *path, uint64_t bias,
				 uint64_t start, uint64_t end, const uint8_t *build_id,
				 size_t build_id_len)
{
	for (size_t i = 0; i < s->nall; i++)
		if (same_module(s->all[i], path, bias, start, end, build_id, build_id_len))
			return s->all[i];
	return NULL;
}

static bool is_active(struct mt_symbolizer *s, const struct module *m)
{
	for (size_t i = 0; i < s->nactive; i++)
		if (s->active[i] == m)
			return true;
	return false;
}

static void activate(struct mt_symbolizer *s, struct module *m)
{
	GROW(s->active, s->nactive, s->active_cap);
	size_t i = s->nactive;
	while (i > 0 && s->active[i - 1]->start > m->start) {
		s->active[i] = s->active[i - 1];
		i--;
	}
	s->active[i] = m;
	s->nactive++;
}

static struct module *find_module(struct mt_symbolizer *s, uint64_t address)
{
	struct module *m = s->last;
	if (m && address >= m->start && address < m->end)
		return m;
	/* Last active module starting at or below ADDRESS. */
	size_t lo = 0, hi = s->nactive;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->active[mid]->start <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	m = s->active[lo - 1];
	if (address >= m->end)
		return NULL;
	s->last = m;
	return m;
}

/* ---- DWARF --------------------------------------------------------------- */

/* The functions holding PC, outermost (the real function) first, down to
 * the innermost inlined subroutine. */
struct chain {
	Dwarf_Die die[MAX_CHAIN];
	int n;
};

static bool is_function(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* Scopes that carry code ranges: descend only into the one holding PC. */
static bool is_code_scope(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_entry_point:
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_with_stmt:
		return true;
	default:
		return false;
	}
}

/* Walks PARENT's children down to the innermost code scope holding PC,
 * appending the functions met to CH. */
static void walk_scopes(Dwarf_Die *parent, Dwarf_Addr pc, struct chain *ch, int depth)
{
	Dwarf_Die child;
	if (depth > MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (!is_code_scope(tag) || dwarf_haspc(&child, pc) <= 0)
			continue;
		if (is_function(tag) && ch->n < MAX_CHAIN)
			ch->die[ch->n++] = child;
		walk_scopes(&child, pc, ch, depth + 1);
		return;
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* ---- per-CU function index ----------------------------------------------- */

/* Walking a big C++ unit from the top for every address costs a
 * millisecond: namespaces and classes hold tens of thousands of DIEs.  So
 * the first lookup in a unit lists the code ranges of all its functions
 * once, and later lookups binary-search them and walk only the function's
 * own subtree. */
struct code_range {
	Dwarf_Addr lo, hi;
	Dwarf_Addr max_hi; /* highest hi of this range and all before it */
	Dwarf_Die die;	   /* a subprogram */
};

struct cu_index {
	Dwarf_Off offset; /* of the unit's DIE; 0: empty slot */
	struct code_range *ranges;
	size_t n;
};

struct range_list {
	struct code_range *v;
	size_t n, cap;
};

static void add_ranges(struct range_list *l, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		/* Functions dropped by the linker keep ranges at address 0. */
		if (lo == 0 || lo >= hi)
			continue;
		GROW(l->v, l->n, l->cap);
		l->v[l->n++] = (struct code_range){ .lo = lo, .hi = hi, .die = *die };
	}
}

/* Every subprogram with code, at any depth: C++ puts definitions in
 * namespaces, GNU C nests functions in functions. */
static void index_subprograms(Dwarf_Die *parent, struct range_list *l, int depth)
{
	Dwarf_Die child;
	if (depth > MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point)
			add_ranges(l, &child);
		if (dwarf_haschildren(&child) > 0)
			index_subprograms(&child, l, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int compare_ranges(const void *a, const void *b)
{
	const struct code_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void build_cu_index(struct cu_index *ci, Dwarf_Die *cu)
{
	struct range_list l = { 0 };
	index_subprograms(cu, &l, 0);
	if (l.n)
		qsort(l.v, l.n, sizeof *l.v, compare_ranges);
	Dwarf_Addr max_hi = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i].hi > max_hi)
			max_hi = l.v[i].hi;
		l.v[i].max_hi = max_hi;
	}
	ci->ranges = l.v;
	ci->n = l.n;
}

/* The innermost subprogram of the index holding PC, or NULL. */
static Dwarf_Die *cu_index_lookup(struct cu_index *ci, Dwarf_Addr pc)
{
	size_t lo = 0, hi = ci->n;
	while (lo < hi) { /* first range starting above PC */
		size_t mid = lo + (hi - lo) / 2;
		if (ci->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges may nest or overlap in odd DWARF; max_hi bounds the search
	 * back to the ones that can still reach PC. */
	for (size_t i = lo; i-- > 0 && ci->ranges[i].max_hi > pc;)
		if (ci->ranges[i].hi > pc)
			return &ci->ranges[i].die;
	return NULL;
}

static void cus_grow(struct dwobj *m)
{
	size_t cap = m->cus_cap ? m->cus_cap * 2 : 64;
	struct cu_index *cus = xcalloc(cap, sizeof *cus);
	for (size_t i = 0; i < m->cus_cap; i++) {
		if (!m->cus[i].offset)
			continue;
		size_t j = mt_hash64(m->cus[i].offset) & (cap - 1);
		while (cus[j].offset)
			j = (j + 1) & (cap - 1);
		cus[j] = m->cus[i];
	}
	free(m->cus);
	m->cus = cus;
	m->cus_cap = cap;
}

/* M's index of the unit CU, built on first use (M's lock held). */
static struct cu_index *module_cu_index(struct dwobj *m, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	if (off == 0 || off == (Dwarf_Off)-1)
		return NULL;
	if (2 * (m->ncus + 1) > m->cus_cap)
		cus_grow(m);
	size_t i = mt_hash64(off) & (m->cus_cap - 1);
	for (; m->cus[i].offset; i = (i + 1) & (m->cus_cap - 1))
		if (m->cus[i].offset == off)
			return &m->cus[i];
	struct cu_index *ci = &m->cus[i];
	ci->offset = off;
	build_cu_index(ci, cu);
	m->ncus++;
	return ci;
}

static void cus_free(struct dwobj *o)
{
	for (size_t i = 0; i < o->cus_cap; i++)
		free(o->cus[i].ranges);
	free(o->cus);
}

static void free_module(struct module *m)
{
	obj_release(m->obj);
	free(m->build_id);
	free(m);
}

/* A function's name: the demangled linkage name when there is one, so C++
 * gets namespaces, classes and parameters; else DW_AT_name.  The
 * _integrate lookups follow abstract origins and specifications, which is
 * where inlined and out-of-line instances keep their names. */
static const char *die_name(struct strtab *t, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *linkage = NULL, *name = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		linkage = dwarf_formstring(&attr);
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	if (linkage) {
		const char *d = demangle(t, linkage);
		/* A linkage name that would not demangle (Rust v0, say) reads
		 * worse than the plain name. */
		if (d != intern(t, linkage) || !name)
			return d;
	}
	return intern(t, name);
}

/* Where an inlined subroutine was called from: DW_AT_call_file (an index
 * into its unit's file table) and DW_AT_call_line. */
static void call_site(struct strtab *t, Dwarf_Die *inl, const char **file, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	*file = NULL;
	*line = 0;
	if (dwarf_attr(inl, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0)
		*line = (int)v;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nfiles;
	if (!dwarf_attr(inl, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &v) != 0 ||
	    !dwarf_diecu(inl, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 ||
	    v >= nfiles)
		return;
	const char *comp_dir = NULL;
	if (dwarf_attr(&cu, DW_AT_comp_dir, &attr))
		comp_dir = dwarf_formstring(&attr);
	*file = intern_source(t, dwarf_filesrc(files, v, NULL, NULL), comp_dir);
}

static void address_line(struct strtab *t, Dwfl_Module *mod, uint64_t address, const char **file,
			 int *line)
{
	*file = NULL;
	*line = 0;
	Dwfl_Line *l = dwfl_module_getsrc(mod, address);
	if (!l)
		return;
	int ln = 0;
	const char *f = dwfl_lineinfo(l, NULL, &ln, NULL, NULL, NULL);
	if (f) {
		*file = intern_source(t, f, dwfl_line_comp_dir(l));
		*line = ln;
	}
}

/* The ELF symbol table's name for ADDRESS: all there is without DWARF. */
static const char *symtab_name(struct strtab *t, Dwfl_Module *mod, uint64_t address)
{
	GElf_Off offset;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, address, &offset, &sym, NULL, NULL, NULL);
	return name && *name ? demangle(t, name) : NULL;
}

/* The frames of the link-time address PC of O (its lock held) into OUT,
 * without module and addresses. */
static int resolve_in_object(struct strtab *t, struct dwobj *o, uint64_t pc, struct mt_frame *out)
{
	struct chain ch = { .n = 0 };
	Dwarf_Addr dwbias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(o->mod, pc, &dwbias);
	struct cu_index *ci = cudie ? module_cu_index(o, cudie) : NULL;
	Dwarf_Die *fn = ci ? cu_index_lookup(ci, pc - dwbias) : NULL;
	if (fn) {
		ch.die[ch.n++] = *fn;
		walk_scopes(fn, pc - dwbias, &ch, 0);
	}
	/* Innermost first: ch.die[ch.n - 1] is the innermost function. */
	int n = 0;
	for (int i = ch.n - 1; i >= 0; i--, n++) {
		struct mt_frame *f = &out[n];
		*f = (struct mt_frame){ 0 };
		f->function = die_name(t, &ch.die[i]);
		if (i == ch.n - 1)
			address_line(t, o->mod, pc, &f->file, &f->line);
		else
			call_site(t, &ch.die[i + 1], &f->file, &f->line);
		f->inlined = i > 0 && dwarf_tag(&ch.die[i]) == DW_TAG_inlined_subroutine;
	}
	if (n == 0) {
		/* No DWARF function here: the symbol table still names it, and
		 * a line table (assembly sources) may still place it. */
		out[0] = (struct mt_frame){ 0 };
		address_line(t, o->mod, pc, &out[0].file, &out[0].line);
		n = 1;
	}
	if (!out[n - 1].function)
		out[n - 1].function = symtab_name(t, o->mod, pc);
	return n;
}

/* Resolves ADDRESS in module M into OUT (MAX_CHAIN frames of room). */
static int resolve_in_module(struct mt_symbolizer *s, struct module *m, uint64_t address,
			     struct mt_frame *out)
{
	struct strtab *t = &s->strings;
	struct mt_frame base = { .module = m->path,
				 .address = address,
				 .offset = address - m->bias };
	if (!m->obj) {
		out[0] = base;
		return 1;
	}
	struct dwobj *o = m->obj;
	pthread_mutex_lock(&o->lock);
	int n = resolve_in_object(t, o, base.offset, out);
	pthread_mutex_unlock(&o->lock);
	for (int i = 0; i < n; i++) {
		out[i].module = base.module;
		out[i].address = base.address;
		out[i].offset = base.offset;
	}
	return n;
}

/* ---- cache --------------------------------------------------------------- */

static size_t cache_index(const struct mt_symbolizer *s, uint64_t address, const struct module *m)
{
	return mt_hash64(address ^ ((uint64_t)(uintptr_t)m << 17)) & (s->cache_cap - 1);
}

static struct cache_slot *cache_find(struct mt_symbolizer *s, uint64_t address,
				     const struct module *m)
{
	if (!s->cache_cap)
		return NULL;
	for (size_t i = cache_index(s, address, m);; i = (i + 1) & (s->cache_cap - 1)) {
		struct cache_slot *c = &s->cache[i];
		if (!c->mod)
			return NULL;
		if (c->address == address && c->mod == m)
			return c;
	}
}

static void cache_grow(struct mt_symbolizer *s)
{
	size_t old_cap = s->cache_cap;
	struct cache_slot *old = s->cache;
	s->cache_cap = old_cap ? old_cap * 2 : 4096;
	s->cache = xcalloc(s->cache_cap, sizeof *s->cache);
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i].mod)
			continue;
		size_t j = cache_index(s, old[i].address, old[i].mod);
		while (s->cache[j].mod)
			j = (j + 1) & (s->cache_cap - 1);
		s->cache[j] = old[i];
	}
	free(old);
}

static struct cache_slot *cache_insert(struct mt_symbolizer *s, uint64_t address,
				       const struct module *m, const struct mt_frame *frames, int n)
{
	if (2 * (s->cache_count + 1) > s->cache_cap)
		cache_grow(s);
	while (s->nframes + (size_t)n >= s->frames_cap) {
		s->frames_cap = s->frames_cap ? s->frames_cap * 2 : 4096;
		s->frames = xrealloc(s->frames, s->frames_cap * sizeof *s->frames);
	}
	size_t i = cache_index(s, address, m);
	while (s->cache[i].mod)
		i = (i + 1) & (s->cache_cap - 1);
	struct cache_slot *c = &s->cache[i];
	*c = (struct cache_slot){
		.address = address, .mod = m, .first = (uint32_t)s->nframes, .count = (uint32_t)n
	};
	memcpy(s->frames + s->nframes, frames, (size_t)n * sizeof *frames);
	s->nframes += (size_t)n;
	s->cache_count++;
	return c;
}

/* ---- API ----------------------------------------------------------------- */

struct mt_symbolizer *mt_sym_new(void)
{
	struct mt_symbolizer *s = xcalloc(1, sizeof *s);
	GROW(s->warnings, s->nwarnings, s->warnings_cap);
	s->warnings[0] = NULL;
	return s;
}

void mt_sym_set_objects(struct mt_symbolizer *s, struct mt_objects *objects)
{
	s->objects = objects;
}

void mt_sym_free(struct mt_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nall; i++)
		free_module(s->all[i]);
	free(s->all);
	free(s->active);
	free(s->cache);
	free(s->frames);
	free(s->warnings);
	strtab_free(&s->strings);
	free(s);
}

void mt_sym_add_module(struct mt_symbolizer *s, const char *path, uint64_t bias, uint64_t start,
		       uint64_t end, const uint8_t *build_id, size_t build_id_len)
{
	if (!s || !path || start >= end)
		return;
	if (!build_id)
		build_id_len = 0;
	const char *ipath = intern(&s->strings, path);
	struct module *m = find_known(s, ipath, bias, start, end, build_id, build_id_len);
	if (m) {
		if (!is_active(s, m))
			activate(s, m);
		return;
	}
	m = xcalloc(1, sizeof *m);
	m->path = ipath;
	m->bias = bias;
	m->start = start;
	m->end = end;
	if (build_id_len) {
		m->build_id = xrealloc(NULL, build_id_len);
		memcpy(m->build_id, build_id, build_id_len);
		m->build_id_len = build_id_len;
	}
	open_module(s, m);
	GROW(s->all, s->nall, s->all_cap);
	s->all[s->nall++] = m;
	activate(s, m);
}

void mt_sym_reset_modules(struct mt_symbolizer *s)
{
	if (!s)
		return;
	s->nactive = 0;
	s->last = NULL;
}

int mt_sym_resolve(struct mt_symbolizer *s, uint64_t address, struct mt_frame *out, int max)
{
	if (!out || max < 1)
		return 0;
	if (address == MT_FRAME_TRUNCATED || address + 1 == MT_FRAME_TRUNCATED) {
		out[0] = (struct mt_frame){ .function = "[truncated]",
					    .address = MT_FRAME_TRUNCATED };
		return 1;
	}
	struct module *m = s ? find_module(s, address) : NULL;
	if (!m) {
		out[0] = (struct mt_frame){ .address = address };
		return 1;
	}
	struct cache_slot *c = cache_find(s, address, m);
	if (!c) {
		struct mt_frame frames[MAX_CHAIN];
		int n = resolve_in_module(s, m, address, frames);
		c = cache_insert(s, address, m, frames, n);
	}
	const struct mt_frame *f = s->frames + c->first;
	int n = (int)c->count;
	if (n <= max) {
		memcpy(out, f, (size_t)n * sizeof *f);
		return n;
	}
	/* Too deep for the caller: keep the innermost frames (where the code
	 * is) and the real function (what it is attributed to). */
	memcpy(out, f, (size_t)(max - 1) * sizeof *f);
	out[max - 1] = f[n - 1];
	return max;
}

const char *const *mt_sym_warnings(struct mt_symbolizer *s)
{
	static const char *const none[] = { NULL };
	return s ? s->warnings : none;
}

const char *mt_frame_label(const struct mt_frame *f, char *buf, size_t len)
{
	if (f->function)
		return f->function;
	if (f->module) {
		const char *base = strrchr(f->module, '/');
		snprintf(buf, len, "%s+0x%llx", base ? base + 1 : f->module,
			 (unsigned long long)f->offset);
		return buf;
	}
	if (f->address) {
		snprintf(buf, len, "0x%llx", (unsigned long long)f->address);
		return buf;
	}
	return "[unknown]";
}
