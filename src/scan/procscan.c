/*
 * procscan.c - see procscan.h.
 */
#include "procscan.h"
#include "base/bisect.h"
#include "base/clock.h"
#include "base/util.h"
#include "capture/bpf/procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Below a thread's stack pointer the x86-64 ABI lets leaf functions keep
 * 128 bytes (memcheck counts them addressable too). */
#define RED_ZONE 128
/* Pages looked up in pagemap at a time. */
#define WINDOW_PAGES 256

struct pscan {
	int mem, pagemap;
	uint64_t page;
	struct mt_leakscan ls;
	const struct mt_stopped *st;
	const struct mt_scan_opts *o;
	struct mt_scan_result *res;
	uint64_t pm[WINDOW_PAGES];
	uintptr_t *buf; /* WINDOW_PAGES pages */
};

/* LEN bytes at ADDR through /proc/PID/mem. */
static int pread_all(struct pscan *p, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(p->mem, (char *)buf + done, len - done, (off_t)(addr + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* The pieces in one process_vm_readv (at most IOV_MAX of them: the scan
 * asks for 512 at most); what it could not read whole, piece by piece. */
static int read_pieces(void *ctx, const struct mt_scan_piece *pc, size_t n, void *buf)
{
	struct pscan *p = ctx;
	struct iovec remote[512];
	if (!n)
		return 0;
	size_t total = 0;
	if (n > sizeof remote / sizeof *remote)
		return -1;
	for (size_t i = 0; i < n; i++) {
		remote[i] = (struct iovec){ (void *)(uintptr_t)pc[i].addr, (size_t)pc[i].len };
		total += (size_t)pc[i].len;
	}
	struct iovec local = { buf, total };
	ssize_t r = process_vm_readv(p->st->pid, &local, 1, remote, n, 0);
	if (r == (ssize_t)total)
		return 0;
	char *at = buf;
	for (size_t i = 0; i < n; at += pc[i].len, i++)
		if (pread_all(p, pc[i].addr, at, (size_t)pc[i].len) < 0)
			return -1;
	return 0;
}

/* Root memory [LO, HI), the pages ever touched.  FILE: a file's mapping,
 * whose unreadable tail (past the file's end) holds nothing. */
static void scan_root(struct pscan *p, uint64_t lo, uint64_t hi, int file)
{
	const uint64_t pg = p->page;
	lo &= ~(uint64_t)(sizeof(uintptr_t) - 1);
	for (uint64_t w = lo; w < hi && !p->ls.incomplete;) {
		uint64_t wend = (w / pg + WINDOW_PAGES) * pg;
		wend = wend > hi ? hi : wend;
		size_t npg = (size_t)((wend - 1) / pg - w / pg + 1);
		int known = p->pagemap >= 0 && pread(p->pagemap, p->pm, npg * 8,
						     (off_t)(w / pg * 8)) == (ssize_t)(npg * 8);
		/* runs of pages present or swapped out (bits 63, 62) */
		for (size_t i = 0; i < npg;) {
			size_t j = i;
			if (known) {
				while (i < npg && !(p->pm[i] >> 62))
					i++;
				for (j = i; j < npg && (p->pm[j] >> 62); j++)
					;
			} else {
				j = npg;
			}
			if (i == j)
				break;
			uint64_t a = (w / pg + i) * pg, b = (w / pg + j) * pg;
			a = a < w ? w : a;
			b = b > wend ? wend : b;
			if (pread_all(p, a, p->buf, (size_t)(b - a)) == 0) {
				mt_leakscan_roots(&p->ls, p->buf, (size_t)(b - a));
				p->res->roots += b - a;
			} else if (!file) {
				p->ls.incomplete = 1;
				snprintf(p->res->why, sizeof p->res->why,
					 "could not read its memory at 0x%llx",
					 (unsigned long long)a);
			}
			i = j;
		}
		w = wend;
	}
}

/* Whether a mapping is memtrace's own, in the traced process. */
static int ours(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strstr(path, "memtrace-ring") || !strncmp(base, "libmemtrace-preload", 19) ||
	       !strncmp(path, "[anon:memtrace", 14);
}

/* Whether a mapping is the C library's data, where its allocator keeps
 * its own pointers into the heap (leakscan.h's starts_only). */
static int allocator_data(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
}

/* The first block at or above ADDR. */
static size_t first_at(const struct mt_leakscan *s, uint64_t addr)
{
	return MT_PARTITION(s->n, i, s->blocks[i].addr < addr);
}

static void scan_mapping(struct pscan *p, const struct mt_maps_line *m)
{
	if (m->perms[0] != 'r' || m->perms[1] != 'w' || ours(m->path))
		return;
	/* a device's memory is not memory to read (reading may act on it) */
	if (!strncmp(m->path, "/dev/", 5) && strncmp(m->path, "/dev/zero", 9) &&
	    strncmp(m->path, "/dev/shm/", 9))
		return;
	int file = m->path[0] == '/';
	p->ls.starts_only = allocator_data(m->path);
	uint64_t lo = m->hi;
	/* a thread's stack: from its stack pointer up (the lowest, should
	 * two threads' be in one mapping) */
	for (size_t i = 0; i < p->st->n; i++) {
		uint64_t sp = p->st->t[i].sp;
		if (sp >= m->lo && sp < m->hi) {
			uint64_t from = sp > m->lo + RED_ZONE ? sp - RED_ZONE : m->lo;
			lo = from < lo ? from : lo;
		}
	}
	lo = lo == m->hi ? m->lo : lo;
	size_t k = first_at(&p->ls, m->lo);
	if (k == p->ls.n || p->ls.blocks[k].addr >= m->hi) {
		scan_root(p, lo, m->hi, file);
		return;
	}
	if (!p->o->heap_gaps_are_roots)
		return; /* the allocator's: freed memory and its bookkeeping */
	uint64_t at = lo;
	for (; k < p->ls.n && p->ls.blocks[k].addr < m->hi; k++) {
		const struct mt_scan_block *b = &p->ls.blocks[k];
		if (b->addr > at)
			scan_root(p, at, b->addr, file);
		uint64_t end = b->addr + b->size;
		at = end > at ? end : at;
	}
	if (at < m->hi)
		scan_root(p, at, m->hi, file);
}

static int scan_line(void *ctx, struct mt_maps_line *m)
{
	struct pscan *p = ctx;
	scan_mapping(p, m);
	return p->ls.incomplete;
}

static int scan_maps(struct pscan *p)
{
	int r = mt_maps_each(p->st->pid, scan_line, p);
	p->ls.starts_only = 0;
	return r < 0 ? -1 : 0;
}

static int open_proc(pid_t pid, const char *what)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int mt_scan_process(const struct mt_stopped *st, const struct mt_scan_block *b, size_t n,
		    const struct mt_scan_opts *o, uint8_t *kinds, struct mt_scan_result *res)
{
	uint64_t t0 = mt_now_ns();
	memset(res, 0, sizeof *res);
	memset(kinds, MT_LEAK_REACHABLE, n);
	struct pscan p = { .st = st, .o = o, .res = res, .pagemap = -1 };
	p.page = (uint64_t)sysconf(_SC_PAGESIZE);
	p.mem = open_proc(st->pid, "mem");
	p.pagemap = open_proc(st->pid, "pagemap");
	p.buf = malloc(WINDOW_PAGES * p.page);
	int ok = p.mem >= 0 && p.buf && mt_leakscan_init(&p.ls, b, n, read_pieces, &p) == 0;
	if (!ok) {
		snprintf(res->why, sizeof res->why, "cannot read process %d's memory: %s",
			 (int)st->pid, p.mem < 0 ? strerror(errno) : "out of memory");
	} else {
		for (size_t i = 0; i < st->n; i++)
			mt_leakscan_roots(&p.ls, st->t[i].words, st->t[i].len);
		if (scan_maps(&p) < 0) {
			p.ls.incomplete = 1;
			snprintf(res->why, sizeof res->why, "cannot read process %d's maps",
				 (int)st->pid);
		}
		int read_before = p.ls.incomplete;
		mt_leakscan_finish(&p.ls);
		if (p.ls.incomplete && !read_before)
			snprintf(res->why, sizeof res->why, "a block could not be read");
		res->complete = !p.ls.incomplete && !p.ls.failed;
		if (p.ls.failed)
			snprintf(res->why, sizeof res->why, "out of memory");
		memcpy(kinds, p.ls.kind, n);
		res->scanned = p.ls.scanned;
	}
	for (size_t i = 0; i < n; i++) {
		res->bytes[kinds[i]] += b[i].size;
		res->blocks[kinds[i]]++;
	}
	if (ok)
		mt_leakscan_free(&p.ls);
	free(p.buf);
	if (p.mem >= 0)
		close(p.mem);
	if (p.pagemap >= 0)
		close(p.pagemap);
	res->ns = mt_now_ns() - t0;
	return ok ? 0 : -1;
}

void mt_scan_say(pid_t pid, int ran, const struct mt_scan_result *res)
{
	if (!ran) {
		mt_warning("process %d: no leak scan: %s", (int)pid, res->why);
		return;
	}
	if (!res->complete) {
		mt_warning("process %d: leak scan incomplete (%s): no block is called lost; held "
			   "%.1f ms",
			   (int)pid, res->why, (double)res->ns / 1e6);
		return;
	}
	const uint64_t *by = res->bytes;
	fprintf(stderr,
		"memtrace: leak scan of process %d%s: %llu bytes definitely lost, %llu indirectly, "
		"%llu possibly, %llu still reachable (%.1f MB scanned; the process was held "
		"%.1f ms)\n",
		(int)pid,
		res->sampled ? " (its sampled blocks alone: the report estimates the whole)" : "",
		(unsigned long long)by[MT_LEAK_DEFINITE], (unsigned long long)by[MT_LEAK_INDIRECT],
		(unsigned long long)by[MT_LEAK_POSSIBLE], (unsigned long long)by[MT_LEAK_REACHABLE],
		(double)res->scanned / 1e6, (double)res->ns / 1e6);
}
