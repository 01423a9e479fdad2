/*
 * test_reattach.c - tracers come and go on one running process: gt-bpf-loop
 * allocates, checks and frees blocks in rounds, printing each round's
 * checksum.  Twenty times in a row an mt_bpf is opened, traces it (events
 * mode), must see its calls, and is closed (every other time after
 * mt_bpf_untrace_pid).  Meanwhile and afterwards the process must run on
 * with the same checksum every round, its libc code must be byte for byte
 * the file's again (no breakpoint left), and it must exit normally.
 *
 * Usage: test-bpf-reattach GT_LOOP
 */
#include "bpf_test.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/bpf/capture_int.h"

struct count {
	uint32_t pid;
	uint64_t allocs, frees;
};

static void count_cb(void *ctx, const struct mt_bpf_event *ev)
{
	struct count *c = ctx;

	if (ev->pid != c->pid)
		return;
	if (ev->type == MT_REC_FREE)
		c->frees++;
	else
		c->allocs++;
}

/* The process's libc: the file, and where its code is mapped. */
static int libc_of(pid_t pid, char *path, size_t len, uint64_t *start, uint64_t *off)
{
	char maps[64], line[1024];
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	FILE *f = fopen(maps, "r");
	int found = 0;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, o;
		char perms[8], name[512] = "";
		if (sscanf(line, "%llx-%*x %7s %llx %*s %*s %511s", &lo, perms, &o, name) == 4 &&
		    perms[2] == 'x' && strstr(name, "/libc.so")) {
			*start = lo;
			*off = o;
			snprintf(path, len, "%s", name);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found ? 0 : -1;
}

/* Breakpoints (0xcc) at the probe places of the process's libc; with
 * SAME, also checks the first 32 bytes of every allocator function are
 * the file's.  Returns the number of breakpoints, or -1. */
static int breakpoints(pid_t pid, int same)
{
	char libc[512], path[64];
	uint64_t start = 0, off = 0;
	struct mtb_elf_syms syms;
	int n = 0, fd, mem;

	if (libc_of(pid, libc, sizeof(libc), &start, &off))
		return -1;
	fd = open(libc, O_RDONLY);
	if (fd < 0 || mtb_elf_analyze(fd, &syms) != 1)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	mem = open(path, O_RDONLY);
	for (int fn = 0; fn < MTB_SYM_COUNT && mem >= 0; fn++) {
		unsigned char want[32], got[32];

		if (!syms.found[fn])
			continue;
		if (pread(fd, want, sizeof(want), syms.offset[fn]) != sizeof(want) ||
		    pread(mem, got, sizeof(got), start + syms.offset[fn] - off) != sizeof(got)) {
			CHECK(0, "cannot read %s", mtb_sym_name[fn]);
			continue;
		}
		n += got[syms.probe[fn] - syms.offset[fn]] == 0xcc;
		if (same)
			CHECK(!memcmp(want, got, sizeof(want)), "%s: code differs from the file", mtb_sym_name[fn]);
	}
	close(fd);
	if (mem >= 0)
		close(mem);
	return n;
}

static long last_round(struct bt_child *c, uint64_t *sum, int *bad)
{
	long round = -1;
	char *save = NULL, *copy = strdup(c->buf ? c->buf : "");

	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long r;
		unsigned long long s;
		if (sscanf(l, "ok %ld %llu", &r, &s) == 2) {
			if (*sum && *sum != s)
				(*bad)++;
			*sum = s;
			round = r;
		} else {
			(*bad)++;
			fprintf(stderr, "gt-bpf-loop: %s\n", l);
		}
	}
	free(copy);
	return round;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s GT_LOOP\n", argv[0]);
		return 2;
	}
	bt_require_bpf();
	struct bt_child c;
	char *cargv[] = { argv[1], NULL };
	char err[512];

	bt_spawn(&c, cargv);
	bt_go(&c);
	CHECK(bt_wait_output(&c, "ok 1 ", 5000), "gt-bpf-loop does not run");
	CHECK_EQ(breakpoints(c.pid, 1), 0);

	for (int i = 0; i < 20; i++) {
		struct mt_bpf_opts o = { .events = 1, .ringbuf_bytes = 1 << 20 };
		struct mt_bpf *b = bt_open(&o);
		struct count n = { .pid = c.pid };

		if (mt_bpf_trace_pid(b, c.pid, err, sizeof(err))) {
			fprintf(stderr, "attach %d: mt_bpf_trace_pid: %s\n", i, err);
			failures++;
			mt_bpf_close(b);
			break;
		}
		if (i == 0)
			CHECK(breakpoints(c.pid, 0) >= 9, "no breakpoints while traced");
		uint64_t end = bt_now_ns() + 3000000000ull;
		while ((n.allocs < 400 || n.frees < 400) && bt_now_ns() < end) {
			mt_bpf_poll(b, 5, count_cb, &n);
			bt_read_output(&c);
		}
		CHECK(n.allocs >= 400 && n.frees >= 400, "attach %d: %llu allocations, %llu frees seen", i,
		      (unsigned long long)n.allocs, (unsigned long long)n.frees);
		uint64_t lost[MT_LOST_KIND_COUNT];
		mt_bpf_lost(b, c.pid, lost);
		CHECK(lost[MT_LOST_BUFFER_FULL] == 0 && lost[MT_LOST_MAP_FULL] == 0, "attach %d: lost events", i);
		if (i & 1)
			mt_bpf_untrace_pid(b, c.pid);
		mt_bpf_close(b);
	}
	CHECK_EQ(breakpoints(c.pid, 1), 0);

	/* Still running, still right. */
	bt_read_output(&c);
	uint64_t sum = 0;
	int bad = 0;
	long before = last_round(&c, &sum, &bad);
	bt_sleep_ms(100);
	bt_read_output(&c);
	long after = last_round(&c, &sum, &bad);
	CHECK(after > before, "no progress after the tracers: round %ld then %ld", before, after);
	CHECK_EQ(bad, 0);
	bt_close_input(&c);
	bt_reap(&c, 1);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "gt-bpf-loop status 0x%x", c.status);
	free(c.buf);
	if (!failures)
		printf("reattach: 20 tracers came and went; %ld rounds, every one right\n", after + 1);
	return failures ? 1 : 0;
}
