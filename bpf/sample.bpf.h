/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * sample.bpf.h - sampled recording in the kernel (--sample): each CPU
 * counts down the bytes allocated on it to its next sample point, a
 * Poisson process along them as the shim's is along each thread's
 * (src/capture/shim/sample.c); the distances are drawn from quantiles of
 * an exponential distribution and a sampled block's weight read from a
 * table (memtrace.h: BPF has no floating point), both filled by the loader
 * (src/capture/bpf/memtrace.c, configure_sampling).
 *
 * Included once, by memtrace.bpf.c, after its helpers: it uses the
 * includer's count() (the loss counters) and its live map's key.
 */
#ifndef MEMTRACE_SAMPLE_BPF_H
#define MEMTRACE_SAMPLE_BPF_H

/* Sampled recording (record/attach/top/sweep --sample): the mean in bytes
 * (0: every call), the distances drawn and the weights (memtrace.h).  Each
 * CPU counts down the bytes allocated on it to its next sample point: a
 * Poisson process along them, as the shim's is along each thread's. */
const volatile __u64 sample_mean = 0;
const volatile __u64 sample_gaps[MTB_SAMPLE_GAPS] = {};
const volatile __u32 sample_weight[MTB_SAMPLE_WEIGHTS] = {};

/* Sampling: the bytes left to each CPU's next sample point (0: none drawn
 * yet), and, recording (lean), the sampled blocks, whose frees alone are
 * recorded (the live map says it otherwise). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} sample_left SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20);
	__type(key, struct mtb_live_key);
	__type(value, __u8);
} sampled SEC(".maps");

/* Sampling: 1 when a call allocating SIZE bytes is recorded (always, when
 * every call is). */
static __always_inline int sample_hit(__u64 size)
{
	__u32 zero = 0;
	__s64 *left, l;

	if (!sample_mean)
		return 1;
	left = bpf_map_lookup_elem(&sample_left, &zero);
	if (!left)
		return 0;
	l = *left;
	if (!l) /* the CPU's first call: a fresh distance */
		l = sample_gaps[bpf_get_prandom_u32() & (MTB_SAMPLE_GAPS - 1)];
	l -= (__s64)size;
	if (l > 0) {
		*left = l;
		return 0;
	}
	*left = sample_gaps[bpf_get_prandom_u32() & (MTB_SAMPLE_GAPS - 1)];
	return 1;
}

/* What a block of SIZE bytes adds to its site's counts: 1, or sampling,
 * the allocations it stands for, 1 / (1 - exp(-SIZE/mean)), in 16.16. */
static __always_inline __u64 sample_weight_of(__u64 size)
{
	__u64 x;

	if (!sample_mean)
		return 1;
	if (!size || size > (1ull << 40))
		return MTB_SAMPLE_ONE;
	x = (size << 8) / sample_mean;
	if (x >= MTB_SAMPLE_WEIGHTS)
		return MTB_SAMPLE_ONE;
	if (x < 128) /* x < 1/2: 1/x + 1/2 + x/12, within 0.02% */
		return (sample_mean << 16) / size + (MTB_SAMPLE_ONE >> 1) +
		       (size << 16) / (12 * sample_mean);
	return sample_weight[x];
}

/* Its bytes, at WEIGHT. */
static __always_inline __u64 weighed(__u64 size, __u64 weight)
{
	return sample_mean ? (size * weight) >> 16 : size;
}

static __always_inline void sampled_put(__u32 tgid, __u64 ptr)
{
	struct mtb_live_key k = { .ptr = ptr, .tgid = tgid };
	__u8 one = 1;

	if (bpf_map_update_elem(&sampled, &k, &one, BPF_ANY))
		count(tgid, MTB_ST_LIVE_FULL, 1);
}

/* 1 if block PTR is sampled (TAKE: and forgets it). */
static __always_inline int sampled_has(__u32 tgid, __u64 ptr, int take)
{
	struct mtb_live_key k = { .ptr = ptr, .tgid = tgid };

	if (take)
		return bpf_map_delete_elem(&sampled, &k) == 0;
	return bpf_map_lookup_elem(&sampled, &k) != NULL;
}

#endif
