/*
 * api_mmaps.c - /data/<id>/mmaps: the calls that mapped and unmapped memory
 * (record's mapping calls), in bytehound's shape: {"operations": [...]},
 * each operation an object of one key, its kind ("mmap", "munmap"; and
 * memtrace's "mremap" and "brk"), holding its time (a Timeval of seconds
 * and nanoseconds since the process started, and timestamp_s), the
 * address as a number and a hex string, the length, the thread, the
 * backtrace, and for mmap the protection and flags as bytehound's
 * booleans, the offset and the descriptor.  memtrace adds what bytehound
 * does not have: pid, by_allocator, error, a file mapping's path, the
 * mapped memory after the call (mapped_bytes), and "block" for mmaps that
 * are an allocator's block of its own (the shim's MT_MAP_BLOCK).
 * ?pid=N keeps one process.
 */
#include "api.h"
#include "analyse/mapped.h"
#include "base/json.h"
#include "base/util.h"
#include "report/report.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

struct ops {
	struct req *x;
	const struct mt_process *p;
	struct mt_symbolizer *sym;
	struct mt_frame *fr;
	int first;
	uint64_t brk_at; /* the last program break seen, for mt_brk_move */
};

static void hex(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, ", \"%s\": %llu, \"%s_s\": \"0x%llx\"", key, (unsigned long long)v, key,
		(unsigned long long)v);
}

static void flag(FILE *f, const char *key, int v)
{
	fprintf(f, ", \"%s\": %s", key, v ? "true" : "false");
}

static void op(void *ctx, const struct mt_mapev *e, uint64_t mapped)
{
	struct ops *o = ctx;
	const struct mt_mapcall *m = &e->m;
	FILE *f = o->x->out;
	if (m->kind >= MT_MAP_KIND_COUNT)
		return; /* a block's end: its free is no mapping call */
	int block = m->kind == MT_MAP_BLOCK;
	const char *kind = block ? "mmap" : mt_map_kind_names[m->kind];
	uint64_t rel = e->ts > api_proc_start(o->p) ? e->ts - api_proc_start(o->p) : 0;
	fprintf(f,
		"%s\n  {\"%s\": {\"timestamp\": {\"secs\": %llu, \"fract_nsecs\": %llu}, "
		"\"timestamp_s\": %.6f, \"pid\": %u, \"thread\": %u",
		o->first ? "" : ",", kind, (unsigned long long)(rel / 1000000000ull),
		(unsigned long long)(rel % 1000000000ull), api_rel_s(o->p, e->ts), o->p->pid,
		e->tid);
	o->first = 0;
	hex(f, "pointer", block ? 0 : m->addr);
	if (m->kind == MT_MAP_BRK) /* the break's move, not the raw request */
		fprintf(f, ", \"length\": %lld", (long long)mt_brk_move(m, &o->brk_at));
	else
		fprintf(f, ", \"length\": %llu", (unsigned long long)m->len);
	if (m->kind == MT_MAP_MMAP || block) {
		hex(f, "requested_address", m->old_addr);
		flag(f, "is_readable", m->prot & PROT_READ);
		flag(f, "is_writable", m->prot & PROT_WRITE);
		flag(f, "is_executable", m->prot & PROT_EXEC);
		flag(f, "is_semaphore", m->prot & 0x8);
		flag(f, "grows_down", m->prot & PROT_GROWSDOWN);
		flag(f, "grows_up", m->prot & PROT_GROWSUP);
		flag(f, "is_shared", m->flags & MAP_SHARED);
		flag(f, "is_private", m->flags & MAP_PRIVATE);
		flag(f, "is_fixed", m->flags & (MAP_FIXED | MAP_FIXED_NOREPLACE));
		flag(f, "is_anonymous", m->flags & MAP_ANONYMOUS);
		flag(f, "is_uninitialized", m->flags & 0x4000000);
		fprintf(f, ", \"offset\": %llu, \"file_descriptor\": %d, \"path\": ",
			(unsigned long long)m->offset, m->fd);
		mt_json_str(f, e->path);
		flag(f, "block", block);
	} else if (m->kind == MT_MAP_MREMAP) {
		hex(f, "old_pointer", m->old_addr);
		fprintf(f, ", \"old_length\": %llu, \"flags\": %d", (unsigned long long)m->old_len,
			m->flags);
	} else if (m->kind == MT_MAP_BRK) {
		hex(f, "old_pointer", m->old_addr);
	}
	flag(f, "by_allocator", m->by == MT_MAP_BY_ALLOCATOR);
	fprintf(f, ", \"error\": %d, \"mapped_bytes\": %llu,\n   \"backtrace\": ", m->error,
		(unsigned long long)mapped);
	int n = mt_mapev_frames(o->p, o->sym, e, o->fr, MT_SYM_MAX_FRAMES);
	mt_json_frames(f, o->fr, n);
	fputs("}}", f);
}

int api_run_mmaps(struct req *x)
{
	const struct mt_recording *rec = &x->file->sel.all;
	struct ops o = { .x = x, .first = 1 };
	o.fr = xmalloc(MT_SYM_MAX_FRAMES * sizeof *o.fr);
	fputs("{\"operations\": [", x->out);
	for (size_t i = 0; i < rec->nprocs; i++) {
		o.p = rec->procs[i];
		if (!api_wants(x, o.p) || !o.p->nmaps)
			continue;
		/* the file's symbolizer, one request at a time (server.h) */
		o.sym = x->file->procs[i].sym;
		pthread_mutex_lock(&x->st->symlock);
		mt_mapped_walk(o.p, op, &o);
		pthread_mutex_unlock(&x->st->symlock);
	}
	fputs("\n]}\n", x->out);
	free(o.fr);
	return 0;
}
