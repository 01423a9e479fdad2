/*
 * test_aggregate.c - aggregation mode on a running process: gt-bpf-leak is
 * started untraced, attached with mt_bpf_trace_pid, then told to leak known
 * amounts from known functions.  The per-site figures read from the kernel
 * must be exact: outstanding bytes and allocations per site, allocations
 * and bytes, culled (freed younger than min_age_ns), and with a min_age the
 * same outstanding figures from the live map with the blocks' age; the
 * allocator function of each site; then nothing once untraced.
 *
 * Usage: test-bpf-aggregate GT_LEAK
 */
#include "bpf_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

struct want {
	const char *fn;
	int alloc_fn; /* enum mt_fn */
	uint64_t allocs, bytes, out_allocs, out_bytes, culled;
	uint64_t lo, hi, base;
	int seen;
	uint64_t oldest;
};

static struct want wants[] = {
	{ "leak_a", MT_FN_MALLOC, 10, 10000, 10, 10000, 0 },
	{ "leak_b", MT_FN_CALLOC, 5, 1665, 5, 1665, 0 },
	{ "churn", MT_FN_MALLOC, 100, 6400, 0, 0, 100 },
	{ "grow_malloc", MT_FN_MALLOC, 1, 10, 0, 0, 1 },     /* realloc'd at once: freed young */
	{ "grow_realloc", MT_FN_REALLOC, 1, 20000, 1, 20000, 0 },
};
#define NW (sizeof(wants) / sizeof(wants[0]))

struct pass {
	uint32_t pid;
	uint64_t min_age;
	int other;   /* sites of the process matching no function above */
	int sites;
};

static void site_cb(void *ctx, const struct mt_bpf_site *s)
{
	struct pass *p = ctx;

	if (s->pid != p->pid)
		return;
	p->sites++;
	for (size_t i = 0; i < NW; i++) {
		struct want *w = &wants[i];
		if (!s->nframes || s->frames[0] < w->lo || s->frames[0] >= w->hi)
			continue;
		w->seen++;
		CHECK_EQ(s->allocations, w->allocs);
		CHECK_EQ(s->allocated_bytes, w->bytes);
		if (p->min_age > 1000000000ull) {
			CHECK_EQ(s->outstanding_allocations, 0);
			CHECK_EQ(s->outstanding_bytes, 0);
		} else {
			CHECK_EQ(s->outstanding_allocations, w->out_allocs);
			CHECK_EQ(s->outstanding_bytes, w->out_bytes);
		}
		CHECK_EQ(s->culled, w->culled);
		CHECK(s->fn == w->alloc_fn, "%s: site fn %d, expected %d", w->fn, s->fn, w->alloc_fn);
		CHECK(s->stack_id != 0, "site without stack id");
		if (p->min_age && w->out_allocs && p->min_age < 1000000000ull)
			CHECK(s->oldest_ts > 0 && s->oldest_ts + p->min_age <= bt_now_ns(), "%s: oldest_ts %llu",
			      w->fn, (unsigned long long)s->oldest_ts);
		return;
	}
	p->other++;
	fprintf(stderr, "unexpected site: %llu allocations, frames[0] 0x%llx\n",
		(unsigned long long)s->allocations, s->nframes ? (unsigned long long)s->frames[0] : 0ull);
}

static void check_pass(struct mt_bpf *b, uint32_t pid, uint64_t min_age)
{
	struct pass p = { .pid = pid, .min_age = min_age };

	for (size_t i = 0; i < NW; i++)
		wants[i].seen = 0;
	CHECK(mt_bpf_read_sites(b, min_age, site_cb, &p) >= (int)NW, "read_sites");
	for (size_t i = 0; i < NW; i++)
		CHECK(wants[i].seen == 1, "site %s seen %d times (min_age %llu)", wants[i].fn, wants[i].seen,
		      (unsigned long long)min_age);
	CHECK_EQ(p.other, 0);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GT_LEAK\n", argv[0]);
		return 2;
	}
	const char *gt = argv[1];
	struct mt_bpf_opts o = { .events = 0, .min_age_ns = 50000000 };
	struct mt_bpf *b = bt_open(&o);
	struct bt_child c;
	char *cargv[] = { (char *)gt, NULL };
	char err[512];

	/* Running before it is traced. */
	bt_spawn(&c, cargv);
	bt_go(&c);
	if (!bt_wait_output(&c, "\n", 5000)) {
		fprintf(stderr, "gt-bpf-leak did not start\n");
		return 1;
	}
	if (mt_bpf_trace_pid(b, c.pid, err, sizeof(err))) {
		fprintf(stderr, "mt_bpf_trace_pid: %s\n", err);
		return 1;
	}
	bt_write_input(&c, "go\n");
	if (!bt_wait_output(&c, "done\n", 5000)) {
		fprintf(stderr, "gt-bpf-leak did not finish\n");
		return 1;
	}
	unsigned long long base = 0;
	const char *r = strstr(c.buf, "ready base ");
	CHECK(r && sscanf(r, "ready base %llx", &base) == 1, "no base in: %s", c.buf);
	for (size_t i = 0; i < NW; i++)
		CHECK(bt_symbol(gt, wants[i].fn, base, &wants[i].lo, &wants[i].hi) == 0, "no symbol %s", wants[i].fn);

	check_pass(b, c.pid, 0);
	bt_sleep_ms(120);
	check_pass(b, c.pid, 50000000);     /* older than 50 ms: all of them */
	check_pass(b, c.pid, 10000000000ull); /* older than 10 s: none */

	uint64_t lost[MT_LOST_KIND_COUNT];
	mt_bpf_lost(b, c.pid, lost);
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		CHECK(lost[k] == 0, "lost %s: %llu", mt_lost_names[k], (unsigned long long)lost[k]);
	CHECK_EQ(mt_bpf_unmatched_frees(b, c.pid), 0);

	/* Untraced: its figures are gone, and it runs on. */
	mt_bpf_untrace_pid(b, c.pid);
	struct pass p = { .pid = c.pid };
	mt_bpf_read_sites(b, 0, site_cb, &p);
	CHECK_EQ(p.sites, 0);
	bt_close_input(&c);
	bt_reap(&c, 1);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "gt exit status 0x%x", c.status);
	mt_bpf_close(b);
	free(c.buf);
	if (!failures)
		printf("aggregate: 5 sites exact, culled and aged\n");
	return failures ? 1 : 0;
}
