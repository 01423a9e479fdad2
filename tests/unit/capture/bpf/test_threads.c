/*
 * test_threads.c - events mode with threads and cross-thread frees:
 * gt-bpf-threads has T workers allocate P blocks each and free them on the
 * next worker, keeping 7 each.  Replaying the stream must give exactly the
 * program's figures: T*P allocations and T*(P-7) frees on the workers,
 * every free of a block the stream has live, the leaked bytes, nothing
 * lost, no unmatched free.
 *
 * Then again with a ring buffer far too small, drained slowly: events are
 * lost, and the losses must be reported exactly: events received plus
 * buffer_full equals the events of the lossless run.
 *
 * Usage: test-bpf-threads GT_THREADS
 */
#include "bpf_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/ptrmap.h"

#define T 4
#define P 20000
#define LEAK 7

struct replay {
	uint32_t pid;
	int lossy;
	struct mt_ptrmap live; /* ptr + 1 (keys are never 0) -> size */
	uint64_t worker_allocs, worker_frees, unknown_frees, events, bad_realloc;
	uint64_t live_bytes;
	uint64_t exits; /* MT_REC_EXIT events (the kernel saw the process end) */
	int64_t exit_status;
};

static void replay_cb(void *ctx, const struct mt_bpf_event *ev)
{
	struct replay *r = ctx;

	if (ev->pid != r->pid)
		return;
	if (ev->type == MT_REC_EXIT) {
		/* no allocation event: not in the counts the losses add up to */
		r->exits++;
		r->exit_status = ev->status;
		return;
	}
	r->events++;
	int worker = ev->tid != ev->pid;
	uint64_t v;

	switch (ev->type) {
	case MT_REC_ALLOC:
		CHECK(r->lossy || !mt_ptrmap_get(&r->live, ev->ptr + 1, &v), "block %llx allocated twice",
		      (unsigned long long)ev->ptr);
		mt_ptrmap_xput(&r->live, ev->ptr + 1, ev->size);
		r->live_bytes += ev->size;
		r->worker_allocs += worker;
		CHECK(ev->nframes >= 1, "allocation without a caller");
		break;
	case MT_REC_FREE:
		if (mt_ptrmap_take(&r->live, ev->ptr + 1, &v)) {
			r->live_bytes -= v;
			r->worker_frees += worker;
		} else {
			r->unknown_frees++;
		}
		break;
	default:
		r->bad_realloc++;
	}
}

static struct replay run(const char *gt, uint32_t ringbuf, int poll_ms, char *out, size_t outlen,
			 uint64_t lost[MT_LOST_KIND_COUNT])
{
	struct mt_bpf_opts o = { .events = 1, .ringbuf_bytes = ringbuf };
	struct mt_bpf *b = bt_open(&o);
	struct bt_child c;
	char targ[16], parg[16], err[512];
	snprintf(targ, sizeof(targ), "%d", T);
	snprintf(parg, sizeof(parg), "%d", P);
	char *argv[] = { (char *)gt, targ, parg, NULL };
	struct replay r = { .lossy = ringbuf < (1 << 20) };

	mt_ptrmap_xinit(&r.live, 1 << 16);

	bt_spawn(&c, argv);
	r.pid = c.pid;
	if (mt_bpf_trace_exec(b, c.pid, gt, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_trace_exec: %s\n", err);
		exit(1);
	}
	bt_go(&c);
	while (!bt_reap(&c, 0)) {
		bt_read_output(&c);
		mt_bpf_poll(b, poll_ms, replay_cb, &r);
	}
	mt_bpf_poll(b, 0, replay_cb, &r);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "gt exit status 0x%x", c.status);
	snprintf(out, outlen, "%s", c.buf ? c.buf : "");
	mt_bpf_lost(b, c.pid, lost);
	if (!lost[MT_LOST_BUFFER_FULL]) /* else the stream misses allocations the kernel saw */
		CHECK_EQ(mt_bpf_unmatched_frees(b, c.pid), r.unknown_frees);
	mt_bpf_close(b);
	free(c.buf);
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GT_THREADS\n", argv[0]);
		return 2;
	}
	char out[256];
	uint64_t lost[MT_LOST_KIND_COUNT];
	struct replay r = run(argv[1], 1 << 26, 10, out, sizeof(out), lost);
	int t = 0;
	long allocs = 0, frees = 0;
	unsigned long long leaked = 0;

	CHECK(sscanf(out, "threads %d allocs %ld frees %ld leaked_bytes %llu", &t, &allocs, &frees, &leaked) == 4,
	      "gt output: %s", out);
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		CHECK(lost[k] == 0, "lost %s: %llu", mt_lost_names[k], (unsigned long long)lost[k]);
	CHECK_EQ(r.worker_allocs, allocs);
	CHECK_EQ(r.worker_frees, frees);
	CHECK_EQ(r.unknown_frees, 0);
	CHECK_EQ(r.bad_realloc, 0);
	/* its end, once, last thread gone: status 0 as waitpid saw it */
	CHECK_EQ(r.exits, 1);
	CHECK_EQ(r.exit_status, 0);
	/* Live at the end: the workers' leaks plus main's own blocks (its
	 * queues and the threads' TLS), which the workers never free. */
	CHECK(r.live_bytes >= leaked, "live bytes %llu < leaked %llu", (unsigned long long)r.live_bytes, leaked);
	printf("threads: %llu events, %llu worker allocations, %llu worker frees, nothing lost\n",
	       (unsigned long long)r.events, (unsigned long long)r.worker_allocs,
	       (unsigned long long)r.worker_frees);

	/* 16 KB of ring drained every 200 ms: most events cannot be kept. */
	uint64_t lost2[MT_LOST_KIND_COUNT];
	struct replay r2 = run(argv[1], 16384, 200, out, sizeof(out), lost2);

	CHECK(lost2[MT_LOST_BUFFER_FULL] > 0, "nothing lost with a 16 KB ring");
	CHECK(r2.exits <= 1, "%llu exits of one process", (unsigned long long)r2.exits);
	CHECK_EQ(r2.events + lost2[MT_LOST_BUFFER_FULL], r.events);
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		if (k != MT_LOST_BUFFER_FULL)
			CHECK(lost2[k] == 0, "lost %s: %llu", mt_lost_names[k], (unsigned long long)lost2[k]);
	printf("threads, 16 KB ring: %llu events received + %llu reported lost = %llu\n",
	       (unsigned long long)r2.events, (unsigned long long)lost2[MT_LOST_BUFFER_FULL],
	       (unsigned long long)(r2.events + lost2[MT_LOST_BUFFER_FULL]));
	mt_ptrmap_destroy(&r.live);
	mt_ptrmap_destroy(&r2.live);
	return failures ? 1 : 0;
}
