/*
 * test_stale.c - calls whose return never came.  A thread that dies inside
 * malloc, a longjmp out of a signal handler, a return probe the kernel
 * could not set: each leaves its in-flight marker behind, and a marker
 * makes later calls of the thread look nested inside it.  Here such
 * markers are planted in the maps of gt-bpf-loop (which allocates all the
 * time) and must be found stale and counted as missed returns:
 *   - below the thread's stack pointer (its frame is gone): at the next call;
 *   - of another process (the thread id was reused): at the next call;
 *   - above the stack pointer but old: after the nesting window (1 s), with
 *     the calls it hid counted too;
 *   - of a thread that no longer exists: by mt_bpf_rescan.
 *
 * Usage: test-bpf-stale GT_LOOP
 */
#include "bpf_test.h"

#include <bpf/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <errno.h>
#include <signal.h>

#include "capture/bpf/capture_int.h"

static uint64_t missed(struct mt_bpf *b, uint32_t pid)
{
	uint64_t lost[MT_LOST_KIND_COUNT];
	mt_bpf_lost(b, pid, lost);
	return lost[MT_LOST_MISSED_RETURN];
}

/* A malloc call of thread TID in flight, in its slot, planted while
 * process PROC (gt-bpf-loop) is stopped outside any allocator call: a
 * plant racing with the thread's own entry probe (between its nested-call
 * check and its claim) would look like a call of another thread holding
 * the slot, which in a real process only another thread can do. */
static void plant(struct mt_bpf *b, pid_t proc, uint32_t tid, uint32_t tgid, uint64_t sp, uint64_t ts)
{
	struct mtb_call *c = &b->calls[tid & (b->nslots - 1)];
	uint64_t mine = (uint64_t)tid << 32 | (uint32_t)(ts >> MTB_OWN_SHIFT);

	for (int tries = 0; tries < 1000; tries++) {
		int st;

		CHECK(kill(proc, SIGSTOP) == 0, "SIGSTOP: %s", strerror(errno));
		CHECK(waitpid(proc, &st, WUNTRACED) == proc && WIFSTOPPED(st), "gt-bpf-loop did not stop");
		int idle = __atomic_load_n(&c->own, __ATOMIC_SEQ_CST) == 0;
		if (idle) {
			c->tgid = tgid;
			c->fn = MTB_FN_MALLOC;
			c->sp = sp;
			c->ts = ts;
			c->a0 = 1;
			c->nested = 0;
			c->old_valid = 0;
			__atomic_store_n(&c->own, mine, __ATOMIC_SEQ_CST);
		}
		kill(proc, SIGCONT);
		if (idle)
			return;
		bt_sleep_ms(1); /* stopped inside a call: let it return */
	}
	CHECK(0, "could not plant a call in the slot of thread %u", tid);
}

/* Waits until PID's missed returns reach WANT; returns them. */
static uint64_t wait_missed(struct mt_bpf *b, uint32_t pid, uint64_t want, int ms)
{
	uint64_t end = bt_now_ns() + (uint64_t)ms * 1000000, n;
	while ((n = missed(b, pid)) < want && bt_now_ns() < end)
		bt_sleep_ms(5);
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GT_LOOP\n", argv[0]);
		return 2;
	}
	struct mt_bpf_opts o = { .events = 0 };
	struct mt_bpf *b = bt_open(&o);
	struct bt_child c;
	char *cargv[] = { argv[1], NULL };
	char err[512];

	bt_spawn(&c, cargv);
	bt_go(&c);
	CHECK(bt_wait_output(&c, "ok 1 ", 5000), "gt-bpf-loop does not run");
	if (mt_bpf_trace_pid(b, c.pid, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_trace_pid: %s\n", err);
		return 1;
	}
	bt_sleep_ms(50);
	CHECK_EQ(missed(b, c.pid), 0);
	uint32_t pid = (uint32_t)c.pid; /* its one thread */

	/* Below the stack pointer: its frame is gone. */
	plant(b, c.pid, pid, pid, 16, bt_now_ns());
	CHECK_EQ(wait_missed(b, pid, 1, 2000), 1);

	/* Of another process: counted for that one. */
	plant(b, c.pid, pid, 1, 0x7ffffffff000ull, bt_now_ns());
	CHECK_EQ(wait_missed(b, 1, 1, 2000), 1);
	CHECK_EQ(missed(b, pid), 1);

	/* Above the stack pointer, fresh: calls look nested in it (and are
	 * lost) until it is a second old; then it and they are counted. */
	plant(b, c.pid, pid, pid, 0x7ffffffff000ull, bt_now_ns());
	bt_sleep_ms(300);
	CHECK_EQ(missed(b, pid), 1); /* not yet */
	uint64_t n = wait_missed(b, pid, 3, 3000);
	CHECK(n > 3, "stale marker after its window: %llu missed (the marker and the calls it hid)",
	      (unsigned long long)n);
	printf("stale: an old marker hid %llu calls, all counted\n", (unsigned long long)(n - 2));

	/* A thread that is gone: the rescan reaps it. */
	uint64_t before = missed(b, pid);
	plant(b, c.pid, 4194300, pid, 0x7ffffffff000ull, bt_now_ns());
	mt_bpf_rescan(b);
	CHECK_EQ(missed(b, pid), before + 1);
	struct mtb_call *dead = &b->calls[4194300 & (b->nslots - 1)];
	CHECK(dead->own == 0, "dead thread's call still in its slot");

	/* Nothing else went wrong meanwhile.  (Blocks allocated while the old
	 * marker hid calls and freed after show as unmatched frees.) */
	uint64_t lost[MT_LOST_KIND_COUNT];
	mt_bpf_lost(b, pid, lost);
	CHECK_EQ(lost[MT_LOST_MAP_FULL], 0);
	CHECK_EQ(lost[MT_LOST_BUFFER_FULL], 0);

	mt_bpf_close(b);
	bt_close_input(&c);
	bt_reap(&c, 1);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "gt-bpf-loop status 0x%x", c.status);
	free(c.buf);
	return failures ? 1 : 0;
}
