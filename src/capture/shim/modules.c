/*
 * modules.c - telling the recording which objects are mapped where.
 *
 * Symbols are resolved after the process has gone, from the path, load bias
 * and build-id of every object it mapped; this file sends a MODULE record for
 * each object the first time it is seen: at start, and after every dlopen.
 * The build-id is read from the object's PT_NOTE segment in memory.
 *
 * An object dlopened where one dlclosed before had been (the loader reuses
 * the place when the sizes allow) is another object at the same addresses:
 * its MODULE record comes after the other's, and readers name the frames
 * of the stacks recorded after it from it (analyse/recording.c).  So that
 * such stacks are recorded after it, the caller's REPLACED runs with the
 * record (it makes the stack table forget: a stack of the new object may
 * be the same addresses as one of the old).
 */
#include "shim.h"
#include "base/hash.h"

#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define MAX_MODULES 4096

/* An object is known by where it is and what it is (its name and build-id):
 * a library loaded where a closed one used to be is a new module, even one
 * of the same name rebuilt in between. */
struct known {
	uint64_t bias, start, end, id_hash;
};

static struct known *known;
static unsigned nknown;
static int replaced; /* this scan found an object where another had been */

/* MODULE records are encoded here first and copied into the channel after
 * dl_iterate_phdr has returned: holding the channel lock while waiting for
 * the loader's lock could deadlock with a thread that mallocs inside dlopen. */
#define SCAN_CAP (1u << 20)
static uint8_t *scan;
static size_t scan_len;
static atomic_flag scan_lock = ATOMIC_FLAG_INIT;
/* With MEMTRACE_WRITE_BINARIES_TO_OUTPUT, every module emitted, for
 * binaries.c at exit (dl_iterate_phdr would miss those dlclose'd by
 * then): entries of u16 path length, u8 build-id length, path, build-id. */
#define SEEN_CAP (1u << 20)
static uint8_t *seen;
static size_t seen_len;

static size_t find_build_id(struct dl_phdr_info *info, const uint8_t **id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t namesz = (nh->n_namesz + 3) & ~3u, descsz = (nh->n_descsz + 3) & ~3u;
			const uint8_t *name = p + sizeof *nh, *desc = name + namesz;
			if (desc + descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0) {
				*id = desc;
				return nh->n_descsz;
			}
			p = desc + descsz;
		}
	}
	return 0;
}

static int on_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t s = info->dlpi_addr + ph->p_vaddr;
		if (s < lo)
			lo = s;
		if (s + ph->p_memsz > hi)
			hi = s + ph->p_memsz;
	}
	if (hi == 0)
		return 0;
	const uint8_t *id = NULL;
	size_t idlen = find_build_id(info, &id);
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	uint64_t idh = mt_fnv_bytes(mt_fnv_str(MT_FNV_SEED, name), id, idlen);
	int overlaps = 0;
	for (unsigned i = 0; i < nknown; i++) {
		if (known[i].bias == info->dlpi_addr && known[i].start == lo &&
		    known[i].id_hash == idh)
			return 0;
		overlaps |= known[i].start < hi && lo < known[i].end;
	}
	char exe[4096];
	const char *path = info->dlpi_name;
	if (!path || !*path) {
		/* The main program has no name in the list. */
		if (mt_read_self_exe(exe, sizeof exe) < 0)
			return 0;
		path = exe;
	}
	if (path[0] != '/' && strncmp(path, "linux-vdso", 10) != 0 &&
	    strncmp(path, "linux-gate", 10) != 0) {
		/* A relative name from dlopen("./x.so"): make it absolute. */
		char cwd[2048];
		if (getcwd(cwd, sizeof cwd) && strlen(cwd) + strlen(path) + 2 < sizeof exe) {
			char tmp[4096];
			size_t cl = strlen(cwd), pl = strlen(path);
			memcpy(tmp, cwd, cl);
			tmp[cl] = '/';
			memcpy(tmp + cl + 1, path[0] == '.' && path[1] == '/' ? path + 2 : path,
			       pl + 1);
			memcpy(exe, tmp, sizeof exe);
			path = exe;
		}
	}
	if (nknown < MAX_MODULES)
		known[nknown++] = (struct known){
			.bias = info->dlpi_addr, .start = lo, .end = hi, .id_hash = idh
		};
	replaced |= overlaps;
	size_t plen = strnlen(path, 4000);
	if (scan_len + 64 + plen + idlen > SCAN_CAP)
		return 1;
	scan_len = (size_t)(mt_enc_module(scan + scan_len, info->dlpi_addr, lo, hi, path, plen, id,
					  idlen) -
			    scan);
	if (seen && seen_len + 3 + plen + idlen <= SEEN_CAP && idlen < 256) {
		uint8_t *e = seen + seen_len;
		e[0] = (uint8_t)plen;
		e[1] = (uint8_t)(plen >> 8);
		e[2] = (uint8_t)idlen;
		memcpy(e + 3, path, plen);
		memcpy(e + 3 + plen, id, idlen);
		seen_len += 3 + plen + idlen;
	}
	return 0;
}

void mt_modules_emit_new(void (*on_replaced)(void))
{
	while (atomic_flag_test_and_set_explicit(&scan_lock, memory_order_acquire))
		;
	if (!known)
		known = mt_arena_alloc(MAX_MODULES * sizeof *known);
	if (!scan)
		scan = mt_map(SCAN_CAP);
	if (!seen && mt_cfg.write_binaries)
		seen = mt_map(SEEN_CAP);
	if (known && scan) {
		scan_len = 0;
		replaced = 0;
		dl_iterate_phdr(on_object, NULL);
		mt_channel_lock();
		uint8_t *p = mt_channel_reserve(scan_len);
		if (p) {
			memcpy(p, scan, scan_len);
			mt_channel_commit(p + scan_len);
		}
		if (replaced && on_replaced)
			on_replaced();
		mt_channel_unlock();
	}
	atomic_flag_clear_explicit(&scan_lock, memory_order_release);
}

void mt_modules_forget(void)
{
	nknown = 0;
	seen_len = 0;
}

void mt_modules_each(void (*fn)(const char *path, size_t plen, const uint8_t *id, size_t idlen,
				void *ctx),
		     void *ctx)
{
	while (atomic_flag_test_and_set_explicit(&scan_lock, memory_order_acquire))
		;
	for (size_t at = 0; seen && at + 3 <= seen_len;) {
		const uint8_t *e = seen + at;
		size_t plen = (size_t)e[0] | (size_t)e[1] << 8, idlen = e[2];
		fn((const char *)e + 3, plen, e + 3 + plen, idlen, ctx);
		at += 3 + plen + idlen;
	}
	atomic_flag_clear_explicit(&scan_lock, memory_order_release);
}
