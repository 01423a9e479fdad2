/*
 * bpf_test.h - what the BPF capture tests share: checks, the skip rule,
 * children that wait for the probes before they exec, the symbols of the
 * ground-truth programs, and collecting events.
 *
 * Skip rule (exit 77): only when the machine cannot do BPF at all (not
 * root, no BTF, no uprobes, old kernel: mtb_check_support says why).  A
 * machine that can but where loading fails is a failure.
 */
#ifndef MEMTRACE_BPF_TEST_H
#define MEMTRACE_BPF_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "capture/bpf/capture.h"

extern int failures;

#define CHECK(cond, ...)                                                                     \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                        \
			fputc('\n', stderr);                                                 \
			failures++;                                                          \
		}                                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                                       \
	do {                                                                                 \
		unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
		if (a_ != b_) {                                                              \
			fprintf(stderr, "%s:%d: %s == %llu (0x%llx), expected %llu (0x%llx)\n", __FILE__, \
				__LINE__, #a, a_, a_, b_, b_);                               \
			failures++;                                                          \
		}                                                                            \
	} while (0)

/* Exits 77 with the reason when this machine cannot run BPF. */
void bt_require_bpf(void);
/* mt_bpf_open or die (exit 1). */
struct mt_bpf *bt_open(const struct mt_bpf_opts *o);

/* A child that waits until bt_go, then execs ARGV[0] with its stdin and
 * stdout on pipes (bt_read_output, bt_write_input). */
struct bt_child {
	pid_t pid;
	int go;    /* write end: one byte lets it exec */
	int in;    /* write end of its stdin (-1 once closed) */
	int out;   /* read end of its stdout */
	char *buf; /* what it wrote so far */
	size_t len, cap;
	int status;
	int exited;
};
void bt_spawn(struct bt_child *c, char *const argv[]);
/* The same, calling BEFORE_EXEC(ARG) in the child just before it execs
 * (it exits 125 if that returns nonzero). */
void bt_spawn_hook(struct bt_child *c, char *const argv[], int (*before_exec)(void *arg), void *arg);
void bt_go(struct bt_child *c);
void bt_write_input(struct bt_child *c, const char *s);
void bt_close_input(struct bt_child *c);
/* Reads what is there of its output without blocking; 1 if EOF. */
int bt_read_output(struct bt_child *c);
/* Reaps it if it exited; 1 if it has. */
int bt_reap(struct bt_child *c, int block);
/* Blocks until its output holds NEEDLE (or it exits); 1 if found. */
int bt_wait_output(struct bt_child *c, const char *needle, int timeout_ms);

/* A function of an executable: [lo, hi) at run time, given the run-time
 * address of main. */
int bt_symbol(const char *exe, const char *name, uint64_t main_runtime, uint64_t *lo, uint64_t *hi);
/* Is ADDR in the code of executable EXE, given the run-time address of
 * main? */
int bt_in_exe(const char *exe, uint64_t main_runtime, uint64_t addr);

/* Events, copied. */
struct bt_event {
	struct mt_bpf_event e;
	uint64_t frame0;
};
struct bt_events {
	struct bt_event *v;
	size_t n, cap;
};
void bt_collect(void *ctx, const struct mt_bpf_event *ev);

uint64_t bt_now_ns(void);
void bt_sleep_ms(int ms);

#endif
