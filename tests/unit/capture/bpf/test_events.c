/*
 * test_events.c - events mode against ground truth: gt-bpf-alloc (every
 * allocator function once, the failing cases, no frame pointers) or
 * gt-bpf-cxx (every operator new and delete, the throwing cases) is traced
 * with mt_bpf_trace_exec from before its exec, and the event stream must be
 * exactly what it says it did: same order, types, functions, sizes and
 * pointers, frames[0] inside the calling function (for C++, the one that
 * called new), equal stacks with equal ids, nothing lost, nothing
 * unmatched, the leak it names left in the live map.
 *
 * The stacks must also be whole: frames[1] in main, which called the
 * allocating function, with frame pointers ("fp": GT built with them) or
 * without (the kernel unwinds from the unwind tables).
 *
 * "lean": the backend opened as a recording opens it (mt_bpf_opts.lean):
 * the same events exactly, and no live or sites map kept in the kernel.
 *
 * Usage: test-bpf-events GT [fp] [lean]
 */
#include "bpf_test.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

struct expect {
	int type, fn;
	uint64_t size, ptr, old;
	char caller[64]; /* "-": not the program's code */
	int any_ptr;     /* an exception object: the address is not known */
};

static int fn_id(const char *name)
{
	for (int f = 0; f < MT_FN_COUNT; f++)
		if (!strcmp(name, mt_fn_names[f]))
			return f;
	return !strcmp(name, "free") ? MT_BPF_FN_FREE : -1;
}

struct leak_find {
	uint32_t pid;
	uint64_t lo, hi;
	uint64_t bytes, allocs, sites;    /* outstanding at the leak's caller */
	int fn;                           /* its site's allocator function */
	uint64_t all_bytes, all_allocs;   /* outstanding anywhere */
};

static void leak_cb(void *ctx, const struct mt_bpf_site *s)
{
	struct leak_find *l = ctx;

	if (s->pid != l->pid || !s->outstanding_allocations)
		return;
	l->all_bytes += s->outstanding_bytes;
	l->all_allocs += s->outstanding_allocations;
	if (!s->nframes || s->frames[0] < l->lo || s->frames[0] >= l->hi)
		return;
	l->sites++;
	l->fn = s->fn;
	l->bytes += s->outstanding_bytes;
	l->allocs += s->outstanding_allocations;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GT_ALLOC\n", argv[0]);
		return 2;
	}
	const char *gt = argv[1];
	/* argv[2] "fp" says how GT was built: the checks are the same */
	int lean = 0;
	for (int i = 2; i < argc; i++)
		lean |= !strcmp(argv[i], "lean");
	struct mt_bpf_opts o = { .events = 1, .ringbuf_bytes = 1 << 22, .lean = lean };
	struct mt_bpf *b = bt_open(&o);
	struct bt_child c;
	char *cargv[] = { (char *)gt, NULL };
	char err[512];

	bt_spawn(&c, cargv);
	if (mt_bpf_trace_exec(b, c.pid, gt, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_trace_exec: %s\n", err);
		return 1;
	}
	bt_go(&c);

	struct bt_events ev = { 0 };
	while (!bt_reap(&c, 0)) {
		bt_read_output(&c);
		mt_bpf_poll(b, 10, bt_collect, &ev);
	}
	mt_bpf_poll(b, 0, bt_collect, &ev);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "gt exit status 0x%x", c.status);

	/* What it says it did. */
	struct expect exp[128];
	size_t nexp = 0;
	uint64_t base = 0, leak_size = 0;
	char leak_caller[64] = "", leak_fn[32] = "";
	char *save = NULL;

	for (char *line = strtok_r(c.buf ? c.buf : (char *)"", "\n", &save); line && nexp + 2 <= 128;
	     line = strtok_r(NULL, "\n", &save)) {
		struct expect *x = &exp[nexp];
		char fn[32];
		unsigned long long a, s, p, q;

		memset(x, 0, sizeof(*x));
		if (sscanf(line, "base %llx", &a) == 1) {
			base = a;
		} else if (sscanf(line, "leak %llu %63s %31s", &s, leak_caller, leak_fn) == 3) {
			leak_size = s;
		} else if (sscanf(line, "X %llu", &s) == 1) {
			/* allocated by libstdc++, freed when the catch ends */
			*x = (struct expect){ .type = MT_REC_ALLOC, .fn = MT_FN_MALLOC, .size = s, .any_ptr = 1 };
			snprintf(x->caller, sizeof(x->caller), "-");
			exp[nexp + 1] = (struct expect){ .type = MT_REC_FREE, .fn = MT_BPF_FN_FREE, .any_ptr = 1 };
			nexp += 2;
		} else if (sscanf(line, "A %31s %llu %llx %63s", fn, &s, &p, x->caller) == 4) {
			x->type = MT_REC_ALLOC;
			x->fn = fn_id(fn);
			x->size = s;
			x->ptr = p;
			nexp++;
		} else if (sscanf(line, "R %31s %llu %llx %llx %63s", fn, &s, &q, &p, x->caller) == 5) {
			x->type = MT_REC_REALLOC;
			x->fn = fn_id(fn);
			x->size = s;
			x->old = q;
			x->ptr = p;
			nexp++;
		} else if (sscanf(line, "F %31s %llx", fn, &p) == 2) {
			x->type = MT_REC_FREE;
			x->fn = fn_id(fn);
			x->ptr = p;
			nexp++;
		} else {
			CHECK(0, "gt says: %s", line);
		}
	}
	CHECK(base != 0 && nexp > 20 && leak_size, "gt output parsed: base %llx, %zu events, leak %llu",
	      (unsigned long long)base, nexp, (unsigned long long)leak_size);

	/* glibc's memalign is aligned_alloc: one address, one probe. */
	int alias = dlsym(RTLD_DEFAULT, "memalign") == dlsym(RTLD_DEFAULT, "aligned_alloc");
	for (size_t i = 0; i < nexp; i++)
		if (alias && exp[i].fn == MT_FN_MEMALIGN)
			exp[i].fn = MT_FN_ALIGNED_ALLOC;

	/* Only the child's events (nothing else is traced anyway).  A static
	 * program's C library allocates before main (_dl_non_dynamic_init):
	 * those come first and stay; they are set apart. */
	size_t n = 0, exits = 0, after_exit = 0;
	uint64_t prelude = 0, prelude_bytes = 0;
	for (size_t i = 0; i < ev.n; i++) {
		if (ev.v[i].e.pid != (uint32_t)c.pid)
			continue;
		/* its end (the kernel's sched_process_exit): once, last, with
		 * the status waitpid gave */
		after_exit += exits > 0;
		if (ev.v[i].e.type == MT_REC_EXIT) {
			exits++;
			CHECK(ev.v[i].e.status == 0, "exit event: status %lld", (long long)ev.v[i].e.status);
			continue;
		}
		if (n == 0 && nexp && (ev.v[i].e.ptr != exp[0].ptr || ev.v[i].e.type != exp[0].type) &&
		    ev.v[i].e.type == MT_REC_ALLOC) {
			prelude++;
			prelude_bytes += ev.v[i].e.size;
			continue;
		}
		ev.v[n++] = ev.v[i];
	}
	if (prelude)
		printf("events: %llu allocations before main (%llu bytes)\n", (unsigned long long)prelude,
		       (unsigned long long)prelude_bytes);
	CHECK_EQ(n, nexp);
	CHECK_EQ(exits, 1);
	CHECK_EQ(after_exit, 0);
	int64_t st = -1;
	uint64_t ets = 0;
	CHECK(mt_bpf_exit_status(b, (uint32_t)c.pid, &st, &ets) == 1 && st == 0 && ets,
	      "mt_bpf_exit_status: status %lld at %llu", (long long)st, (unsigned long long)ets);
	uint64_t exc_ptr = 0;
	for (size_t i = 0; i < n && i < nexp; i++) {
		const struct mt_bpf_event *e = &ev.v[i].e;
		struct expect *x = &exp[i];

		if (x->any_ptr) {
			if (x->type == MT_REC_ALLOC)
				exc_ptr = e->ptr;
			x->ptr = exc_ptr;
		}
		CHECK(e->type == x->type && e->fn == x->fn && e->ptr == x->ptr && e->old_ptr == x->old &&
		      (x->type == MT_REC_FREE || e->size == x->size),
		      "event %zu: type %d fn %d ptr %llx old %llx size %llu; expected type %d fn %d ptr %llx old %llx size %llu",
		      i, e->type, e->fn, (unsigned long long)e->ptr, (unsigned long long)e->old_ptr,
		      (unsigned long long)e->size, x->type, x->fn, (unsigned long long)x->ptr,
		      (unsigned long long)x->old, (unsigned long long)x->size);
		CHECK(e->tid == (uint32_t)c.pid, "event %zu on thread %u", i, e->tid);
		if (x->type == MT_REC_FREE) {
			CHECK(e->stack_id == 0 && e->nframes == 0, "free event %zu has a stack", i);
			continue;
		}
		uint64_t lo, hi;
		CHECK(e->nframes >= 1 && e->stack_id != 0, "event %zu has no stack", i);
		if (!strcmp(x->caller, "-")) {
			CHECK(!bt_in_exe(gt, base, ev.v[i].frame0), "event %zu: frames[0] 0x%llx in the program", i,
			      (unsigned long long)ev.v[i].frame0);
			continue;
		}
		if (bt_symbol(gt, x->caller, base, &lo, &hi)) {
			CHECK(0, "no symbol %s in %s", x->caller, gt);
			continue;
		}
		CHECK(ev.v[i].frame0 >= lo && ev.v[i].frame0 < hi,
		      "event %zu (%s): frames[0] 0x%llx not in %s [0x%llx, 0x%llx)", i, mt_fn_names[x->fn],
		      (unsigned long long)ev.v[i].frame0, x->caller, (unsigned long long)lo,
		      (unsigned long long)hi);
		const char *obj = mt_bpf_object_path(b, e->object);
		CHECK(obj && (strstr(obj, "libc") || !strcmp(obj, gt)), "event %zu: object %s", i, obj);
		{
			uint64_t mlo, mhi;
			bt_symbol(gt, "main", base, &mlo, &mhi);
			CHECK(e->nframes >= 2 && e->frames[1] >= mlo && e->frames[1] < mhi,
			      "event %zu: %u frames, frames[1] 0x%llx not in main", i, e->nframes,
			      e->nframes >= 2 ? (unsigned long long)e->frames[1] : 0ull);
		}
	}
	/* Stack ids name stacks: equal frames, equal id; different, different. */
	for (size_t i = 0; i < n && i < nexp; i++)
		for (size_t j = i + 1; j < n && j < nexp; j++) {
			const struct mt_bpf_event *a = &ev.v[i].e, *c2 = &ev.v[j].e;
			if (a->type == MT_REC_FREE || c2->type == MT_REC_FREE)
				continue;
			int same = a->nframes == c2->nframes &&
				   !memcmp(a->frames, c2->frames, a->nframes * sizeof(uint64_t));
			CHECK(same == (a->stack_id == c2->stack_id), "events %zu and %zu: ids %llu, %llu", i, j,
			      (unsigned long long)a->stack_id, (unsigned long long)c2->stack_id);
		}

	uint64_t lost[MT_LOST_KIND_COUNT];
	mt_bpf_lost(b, c.pid, lost);
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		CHECK(lost[k] == 0, "lost %s: %llu", mt_lost_names[k], (unsigned long long)lost[k]);
	CHECK_EQ(mt_bpf_unmatched_frees(b, c.pid), 0);

	/* The maps agree: one block (the leak it names) outstanding.  Lean,
	 * they are not kept: nothing in them. */
	struct leak_find lf = { .pid = c.pid };
	bt_symbol(gt, leak_caller, base, &lf.lo, &lf.hi);
	if (lean) {
		mt_bpf_read_sites(b, 0, leak_cb, &lf);
		CHECK_EQ(lf.all_allocs, 0);
		CHECK_EQ(mt_bpf_untracked(b, c.pid), 0);
		goto done;
	}
	CHECK(mt_bpf_read_sites(b, 0, leak_cb, &lf) > 0, "read_sites");
	CHECK_EQ(lf.sites, 1);
	CHECK_EQ(lf.allocs, 1);
	CHECK_EQ(lf.bytes, leak_size);
	CHECK(lf.fn == fn_id(leak_fn), "the leak's site: fn %d, expected %s", lf.fn, leak_fn);
	CHECK_EQ(lf.all_allocs, 1 + prelude);
	CHECK_EQ(lf.all_bytes, leak_size + prelude_bytes);

done:
	mt_bpf_close(b);
	free(ev.v);
	free(c.buf);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	else
		printf("events: %zu events exact\n", n);
	return failures ? 1 : 0;
}
