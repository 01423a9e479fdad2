/*
 * none.c - the BPF capture layer of a build without BPF (no
 * clang, bpftool or libbpf at build time, or an architecture without BPF
 * programs): every entry point says so, and the commands that need it fail
 * with that one line.
 */
#include "capture.h"
#include "config.h"

#include <stdio.h>
#include <string.h>

int mt_bpf_privileged(void)
{
	return 0;
}

int mt_bpf_available(char *why, size_t whylen)
{
	snprintf(why, whylen,
		 "this memtrace was built without the BPF backend (%s was missing at build time)",
		 MEMTRACE_BPF_MISSING);
	return 0;
}

int mt_bpf_open(struct mt_bpf **out, const struct mt_bpf_opts *o, char *err, size_t errlen)
{
	(void)o;
	*out = NULL;
	mt_bpf_available(err, errlen);
	return -1;
}

#define UNREACHABLE(...) return -1
int mt_bpf_trace_pid(struct mt_bpf *b, pid_t pid, char *err, size_t errlen)
{
	UNREACHABLE();
}
int mt_bpf_trace_exec(struct mt_bpf *b, pid_t pid, const char *exe, char *err, size_t errlen)
{
	UNREACHABLE();
}
int mt_bpf_trace_all(struct mt_bpf *b, char *err, size_t errlen)
{
	UNREACHABLE();
}
int mt_bpf_rescan(struct mt_bpf *b)
{
	UNREACHABLE();
}
int mt_bpf_rescan_new_code(struct mt_bpf *b)
{
	UNREACHABLE();
}
int mt_bpf_new_code_pending(struct mt_bpf *b)
{
	UNREACHABLE();
}
int mt_bpf_poll(struct mt_bpf *b, int timeout_ms, mt_bpf_event_fn fn, void *ctx)
{
	UNREACHABLE();
}
void mt_bpf_set_wake_fd(struct mt_bpf *b, int fd)
{
	/* nothing to wake: mt_bpf_open failed before */
}
int mt_bpf_exit_status(struct mt_bpf *b, uint32_t pid, int64_t *status, uint64_t *ts)
{
	return 0;
}
const char *mt_bpf_object_path(struct mt_bpf *b, uint32_t object)
{
	return NULL;
}
int mt_bpf_stack(struct mt_bpf *b, uint64_t id, const uint64_t **frames, unsigned *n)
{
	UNREACHABLE();
}
int mt_bpf_read_sites(struct mt_bpf *b, uint64_t min_age_ns,
		      void (*fn)(void *ctx, const struct mt_bpf_site *s), void *ctx)
{
	UNREACHABLE();
}
int mt_bpf_read_live(struct mt_bpf *b, uint32_t pid,
		     void (*fn)(void *ctx, const struct mt_bpf_block *blk), void *ctx)
{
	UNREACHABLE();
}
void mt_bpf_lost(struct mt_bpf *b, uint32_t pid, uint64_t lost[MT_LOST_KIND_COUNT])
{
	memset(lost, 0, sizeof(uint64_t) * MT_LOST_KIND_COUNT);
}
uint64_t mt_bpf_sample_mean(const struct mt_bpf *b)
{
	(void)b;
	return 0;
}

uint64_t mt_bpf_unmatched_frees(struct mt_bpf *b, uint32_t pid)
{
	return 0;
}
uint64_t mt_bpf_untracked(struct mt_bpf *b, uint32_t pid)
{
	return 0;
}
uint64_t mt_bpf_unwind_table_bytes(struct mt_bpf *b)
{
	return 0;
}
void mt_bpf_untrace_pid(struct mt_bpf *b, pid_t pid)
{
}
void mt_bpf_close(struct mt_bpf *b)
{
}
