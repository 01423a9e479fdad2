/*
 * test_rescan.c - objects mapped after tracing began, and tracing every
 * process.  gt-bpf-dlalloc dlopens gt-bpf-myalloc (an allocator library
 * that is not libc) and allocates through it; after mt_bpf_rescan its calls
 * must appear exactly, attributed to that object, with its realloc's own
 * inner malloc and free counted once.
 *
 *   test-bpf-rescan exec GT_DLALLOC LIBMYALLOC   traced from exec (trace_exec)
 *   test-bpf-rescan all GT_DLALLOC LIBMYALLOC    mt_bpf_trace_all, the
 *       program started afterwards: its libc calls are seen at once (same
 *       object), the library after a rescan; memtrace's own calls never.
 *       Until that rescan the program's own code has no unwind table: the
 *       stacks through it before are counted as stack_no_table (at most one
 *       per allocation it made), and no other loss.  (A ring of 64 MB: every
 *       process of the machine fills it while the test waits for the
 *       program.)
 */
#include "bpf_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct seen {
	struct mt_bpf *b;
	uint32_t pid;
	const char *lib;
	struct bt_events lib_events;
	uint64_t libc_events, self_events;
};

static void cb(void *ctx, const struct mt_bpf_event *ev)
{
	struct seen *s = ctx;
	const char *obj = mt_bpf_object_path(s->b, ev->object);

	if (ev->pid == (uint32_t)getpid())
		s->self_events++;
	if (ev->pid != s->pid)
		return;
	if (obj && strstr(obj, s->lib))
		bt_collect(&s->lib_events, ev);
	else if (obj && strstr(obj, "libc"))
		s->libc_events++;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s exec|all GT_DLALLOC LIBMYALLOC\n", argv[0]);
		return 2;
	}
	int all = !strcmp(argv[1], "all");
	const char *gt = argv[2], *lib = argv[3];
	struct mt_bpf_opts o = { .events = 1, .ringbuf_bytes = all ? 1u << 26 : 1u << 22 };
	struct mt_bpf *b = bt_open(&o);
	struct bt_child c;
	char *cargv[] = { (char *)gt, (char *)lib, NULL };
	char err[512];
	const char *base = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
	struct seen s = { .b = b, .lib = base };

	if (all && mt_bpf_trace_all(b, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_trace_all: %s\n", err);
		return 1;
	}
	bt_spawn(&c, cargv);
	s.pid = c.pid;
	if (!all && mt_bpf_trace_exec(b, c.pid, gt, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_trace_exec: %s\n", err);
		return 1;
	}
	bt_go(&c);
	CHECK(bt_wait_output(&c, "ready\n", 5000), "no ready");
	bt_write_input(&c, "go\n");
	CHECK(bt_wait_output(&c, "loaded\n", 5000), "no loaded: %s", c.buf ? c.buf : "");
	uint64_t t0 = bt_now_ns();
	int added = mt_bpf_rescan(b);
	printf("rescan: %d new object(s) in %.1f ms\n", added, (bt_now_ns() - t0) / 1e6);
	CHECK(added >= 1, "rescan found %d new objects", added);
	CHECK_EQ(mt_bpf_rescan(b), 0); /* nothing new the second time */
	bt_write_input(&c, "go\n");
	CHECK(bt_wait_output(&c, "done\n", 5000), "no done");
	uint64_t end = bt_now_ns() + 200000000;
	while (bt_now_ns() < end)
		mt_bpf_poll(b, 10, cb, &s);

	/* What it says it did, through the library. */
	const char *p = strstr(c.buf, "A malloc");
	unsigned long long m1 = 0, c1 = 0, r_old = 0, r_new = 0, f1 = 0;
	CHECK(p && sscanf(p, "A malloc 100 %llx\nA calloc 30 %llx\nR realloc 500 %llx %llx\nF free %llx", &m1, &c1,
			  &r_old, &r_new, &f1) == 5, "gt output: %s", c.buf);
	struct { int type, fn; uint64_t ptr, old, size; } want[] = {
		{ MT_REC_ALLOC, MT_FN_MALLOC, m1, 0, 100 },
		{ MT_REC_ALLOC, MT_FN_CALLOC, c1, 0, 30 },
		{ MT_REC_REALLOC, MT_FN_REALLOC, r_new, r_old, 500 },
		{ MT_REC_FREE, MT_BPF_FN_FREE, f1, 0, 0 },
	};
	CHECK_EQ(s.lib_events.n, 4);
	for (size_t i = 0; i < 4 && i < s.lib_events.n; i++) {
		const struct mt_bpf_event *e = &s.lib_events.v[i].e;
		CHECK(e->type == want[i].type && e->fn == want[i].fn && e->ptr == want[i].ptr &&
		      e->old_ptr == want[i].old && (e->type == MT_REC_FREE || e->size == want[i].size),
		      "library event %zu: type %d fn %d ptr %llx old %llx size %llu", i, e->type, e->fn,
		      (unsigned long long)e->ptr, (unsigned long long)e->old_ptr, (unsigned long long)e->size);
	}
	CHECK(s.libc_events > 0, "no libc events from the program (dlopen allocates)");
	CHECK_EQ(s.self_events, 0);
	uint64_t lost[MT_LOST_KIND_COUNT];
	mt_bpf_lost(b, c.pid, lost);
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		CHECK(lost[k] == 0 || (all && k == MT_LOST_STACK_NO_TABLE && lost[k] <= s.libc_events + 4),
		      "lost %s: %llu", mt_lost_names[k], (unsigned long long)lost[k]);

	bt_close_input(&c);
	bt_reap(&c, 1);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "gt status 0x%x", c.status);
	/* It exited: the next rescan lets its probes go. */
	mt_bpf_rescan(b);
	mt_bpf_close(b);
	free(c.buf);
	free(s.lib_events.v);
	if (!failures)
		printf("rescan (%s): the library's calls exact, %llu libc events\n", argv[1],
		       (unsigned long long)s.libc_events);
	return failures ? 1 : 0;
}
