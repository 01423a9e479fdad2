// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * memtrace.bpf.c - the BPF programs of the BPF backend: uprobes on the
 * allocator entry points of traced processes, and two tracepoints.
 *
 * Six programs, loaded by src/capture/bpf/memtrace.c through the skeleton
 * bpftool makes of this object (memtrace.skel.h, bpf/meson.build); the
 * uprobes are attached by src/capture/bpf/attach.c to every allocator
 * object, with a BPF cookie naming the object and the function:
 *
 *   mt_entry   at the entry of malloc, calloc, realloc, reallocarray,
 *              posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 *              jemalloc's mallocx, rallocx, xallocx, and the allocator
 *              libraries' other functions (src/capture/bpf/extsyms.h,
 *              their arguments placed as the cookie says), and of mallopt
 *              and malloc_trim: saves the arguments in the thread's call slot;
 *   mt_return  at their return: pairs with the entry, takes the stack,
 *              updates the live and per-site maps, emits the event;
 *   mt_free    at the entry of free (and sdallocx, tc_free, mi_free_size...);
 *   mt_new     at the entry of C++'s operator new (every variant): the
 *              allocator call it makes gets the stack of new's caller
 *              (operator delete is not probed: it frees with free(), which is);
 *   mt_sys_exit   at every system call's exit (raw tracepoint): a traced
 *              process's mmap, munmap, mremap and brk ("mapping calls" below);
 *   mt_proc_exit  at a thread's exit: the exit status of a process traced
 *              by pid ("a traced process's exit" below).
 * The two tracepoints are attached by memtrace.c.  The stack unwinder the
 * programs share (dwarf_stack) is unwind.bpf.h, included below; what the
 * programs and the loader share (maps' keys and values, records, cookies,
 * counters) is memtrace.h.
 *
 * Why it is built this way:
 * - A thread's outermost allocator call lives in its slot of the calls
 *   array, paired with its return by function and stack pointer, so that a
 *   call an allocator makes inside another (glibc: malloc's own mmap is not
 *   probed, but realloc(NULL, n) jumps to malloc, realloc(p, 0) calls free,
 *   reallocarray jumps to realloc) cannot overwrite the outer one.  Such
 *   inner calls are not counted at all: the slot says a call at or below
 *   its stack pointer is internal.  A call whose return was missed goes
 *   stale (another process, a higher stack pointer, or older than
 *   MTB_NEST_WINDOW_NS) and is counted.
 * - Uprobe programs run preemptible: nothing here keeps state in per-CPU
 *   scratch between two helpers; all state is per thread.
 * - realloc frees its old block inside the call: the old live record is
 *   taken out at entry (so another thread that gets the same address from
 *   the allocator before our return probe runs is not confused with it) and
 *   put back if the call fails, which frees nothing.
 * - Stacks are taken at return, where the registers are the caller's: the
 *   first frame is the return address even in code without frame pointers.
 *   They are unwound here from the unwind tables the loader compiled from
 *   each object's .eh_frame (dwarf_stack; memtrace.h, bpf/README), and
 *   kept once each in the ustacks map; the kernel's frame-pointer walk
 *   (bpf_get_stackid) is left for what the unwinder cannot do, tried only
 *   where %rbp can be a frame pointer.
 * - Every loss is counted in the stats map, per process.
 * - A recording opens the programs lean: no live or sites map, which cost
 *   more than the rest of a free; the loader pairs the events
 *   (bpf/README, src/capture/bpf/lean.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "memtrace.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* How far above the stack pointer the caller's frame pointer may be. */
#define MTB_FRAME_REACH (1 << 20)

/* How far the stack pointer is above the entry's once the call returned:
 * the return address is popped on x86; arm64 returns through the link
 * register. */
#if defined(__TARGET_ARCH_x86)
#define RET_SP_DELTA 8
#else
#define RET_SP_DELTA 0
#endif

/* Set by the loader before the object is loaded. */
const volatile __u32 events_mode = 0; /* stream events through rb */
const volatile __u64 min_age_ns = 0;  /* frees younger than this are culled */
const volatile __u32 self_tgid = 0;   /* never traced */
const volatile __u32 slot_mask = (1 << 16) - 1; /* calls: entries - 1 */
/* The kernel's user stack walk adds the return address when the probe is on
 * a function's first instruction (endbr64, push %rbp): Linux 6.12. */
const volatile __u32 entry_frames = 0;

/* Stacks from the unwind tables (dwarf_stack) rather than frame pointers. */
const volatile __u32 dwarf_unwind = 0;

/* Lean (a recording: the events are all it reads): no live map, no sites
 * map.  They cost more than the rest of a free (a hash lookup and delete,
 * ~250 ns) and ~200 ns of an allocation's return (an insert, which
 * allocates); the loader pairs the events instead.  Objects marked
 * MTB_OI_LIVE keep their blocks in the live map. */
const volatile __u32 lean = 0;

/* MEMTRACE_BPF_PROBES_ONLY=1 (tools/bench/bench.sh's mt-probes): every
 * program returns at once, so that the same probes at the same places cost
 * what any uprobe tool pays, the floor memtrace's own work is measured
 * against. */
const volatile __u32 probes_only = 0;


/* Changed by the loader at run time. */
__u32 trace_all = 0; /* trace every process not marked MTB_EXCLUDED */

/* Which processes are traced, and which excluded from trace_all: one bit
 * per tgid.  Array lookups are inlined by the verifier; a hash lookup here
 * cost ~80 ns on every call. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MTB_PID_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MTB_PID_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} excluded SEC(".maps");

/* One slot per thread (memtrace.h, struct mtb_call); the loader sets
 * the size, a power of 2, and slot_mask. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 16);
	__type(key, __u32);
	__type(value, struct mtb_call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20);
	__type(key, struct mtb_live_key);
	__type(value, struct mtb_live);
} live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 16);
	__type(key, struct mtb_site_key);
	__type(value, struct mtb_site);
} sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1 << 16);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MTB_MAX_FRAMES * sizeof(__u64));
} stacks SEC(".maps");

/* Per process; not preallocated: 16384 entries made at each start cost
 * more (~4 ms) than the few inserts a run makes (one per process). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct mtb_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MTB_MAX_OBJECTS);
	__type(key, __u32);
	__type(value, struct mtb_objinfo);
} objinfo SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 26);
} rb SEC(".maps");

/* Lean mode: the blocks the programs saw allocated, direct-mapped by a
 * hash of (process, address), holding that hash (0: empty).  A free found
 * here needs no telling whether the allocator made it (internal_free: a
 * read of the return address, ~165 ns, more than the rest of the free);
 * one not found (never seen, or its slot taken since by another block) is
 * told, and the loader drops an internal free of a block it does not know
 * (lean.c).  A slot left by a free not seen says "known" as a stale live
 * record did. */
#define MTB_KNOWN_SLOTS (1 << 18)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MTB_KNOWN_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} known SEC(".maps");

static __always_inline void count(__u32 tgid, __u32 kind, __u64 n)
{
	struct mtb_stats *s = bpf_map_lookup_elem(&stats, &tgid);

	if (!s) {
		struct mtb_stats zero = {};

		bpf_map_update_elem(&stats, &tgid, &zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&stats, &tgid);
		if (!s) {
			__u32 global = 0; /* created by the loader */

			s = bpf_map_lookup_elem(&stats, &global);
			if (!s)
				return;
		}
	}
	if (kind < MTB_ST_COUNT)
		__sync_fetch_and_add(&s->c[kind], n);
}

/* Whether TGID's bit is set in SET (traced or excluded). */
static __always_inline int in_pidset(void *set, __u32 tgid)
{
	__u32 w = tgid / 64;
	__u64 *x = bpf_map_lookup_elem(set, &w);

	return x && (*x & (1ull << (tgid % 64)));
}

static __always_inline int is_traced(__u32 tgid)
{
	if (in_pidset(&traced, tgid))
		return 1;
	return trace_all && tgid != self_tgid && !in_pidset(&excluded, tgid);
}

/* The clock of the call slots' ages (struct mtb_call: ts, new_ts, own):
 * CLOCK_MONOTONIC, as the loader and the tests read them, but told apart
 * only by windows of 16 ms and more (MTB_NEW_TAKEOVER_NS,
 * MTB_NEST_WINDOW_NS).  bpf_ktime_get_ns reads the clock source, ~50 ns
 * on a VM at every allocator entry (1.7% of a sqlite3 run under record);
 * this CPU's last reading serves while the kernel's tick count has not
 * moved (at most a tick old: 4 ms at HZ=250; another CPU's may be fresher,
 * so ages are signed: age, own_age).  Uprobe programs may not read the
 * kernel's coarse clock.  The events' own times are read fresh. */
struct mtb_clk {
	__u64 jiffies, ns;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mtb_clk);
} slotclk SEC(".maps");

static __always_inline __u64 slot_clock(void)
{
	__u32 zero = 0;
	struct mtb_clk *k = bpf_map_lookup_elem(&slotclk, &zero);
	__u64 j = bpf_jiffies64();

	if (k && k->jiffies == j && k->ns)
		return k->ns;
	__u64 ns = bpf_ktime_get_ns();

	if (k) {
		/* (preempted here, another task's reading of the same tick
		 * may land in between: as good) */
		k->ns = ns;
		k->jiffies = j;
	}
	return ns;
}

/* How long ago slot time T was at NOW (signed: a reading of another CPU
 * may be up to a tick ahead of this one's, and is young). */
static __always_inline __s64 age(__u64 now, __u64 t)
{
	return (__s64)(now - t);
}

/* The same of a slot owner's time (OWN: its low 32 bits, in 2^20 ns). */
static __always_inline __s32 own_age(__u64 now, __u64 own)
{
	return (__s32)((__u32)(now >> MTB_OWN_SHIFT) - (__u32)own);
}

static __always_inline struct mtb_call *slot_of(__u32 tid)
{
	__u32 i = tid & slot_mask;

	return bpf_map_lookup_elem(&calls, &i);
}

/* A call of process TGID whose return never came: count it, and the NESTED
 * calls it made us ignore. */
static __always_inline void count_stale(__u32 tgid, __u64 nested)
{
	count(tgid, MTB_ST_MISSED_RETURN, 1);
	if (nested)
		count(tgid, MTB_ST_MISSED_NESTED, nested);
}

/* Frees slot C of a stale call (OWN), and counts it: unless the loader's
 * reaper (a thread id reused after its thread died) got there first. */
static __always_inline void release_stale(struct mtb_call *c, __u64 own)
{
	__u32 tgid = c->tgid;
	__u64 nested = c->nested;

	if (__sync_val_compare_and_swap(&c->own, own, 0) == own)
		count_stale(tgid, nested);
}

/* Is this call (at stack pointer SP) inside another allocator call of the
 * same thread?  Then the outer call accounts for it.  A call of the thread
 * left in its slot that cannot be around this one (another process, a frame
 * already gone, too old) is stale: counted and dropped. */
static __always_inline int nested_call(struct mtb_call *c, __u32 tgid, __u32 tid, __u64 sp, __u64 now)
{
	__u64 own = c->own;

	if (MTB_OWN_TID(own) != tid)
		return 0;
	if (!now)
		now = slot_clock(); /* only now: free does not need it otherwise */
	if (c->tgid == tgid && sp <= c->sp && age(now, c->ts) < (__s64)MTB_NEST_WINDOW_NS) {
		c->nested++; /* only its own thread writes it */
		return 1;
	}
	release_stale(c, own);
	return 0;
}

/* Takes slot C for a call of thread TID (after nested_call: it is free or
 * another thread's); 0 if another thread's call holds it. */
static __always_inline int claim(struct mtb_call *c, __u32 tid, __u64 now)
{
	__u64 own = c->own, mine = (__u64)tid << 32 | (__u32)(now >> MTB_OWN_SHIFT);

	if (own && own_age(now, own) < (__s32)(MTB_NEST_WINDOW_NS >> MTB_OWN_SHIFT))
		return 0;
	__u32 tgid = c->tgid;
	__u64 nested = c->nested;

	if (__sync_val_compare_and_swap(&c->own, own, mine) != own)
		return 0;
	if (own)
		count_stale(tgid, nested); /* another thread's, whose return never came */
	return 1;
}

static __always_inline struct mtb_site *site_get(__u32 tgid, __u64 kstack)
{
	struct mtb_site_key k = { .tgid = tgid, .kstack = kstack };
	struct mtb_site *s = bpf_map_lookup_elem(&sites, &k);

	if (s)
		return s;
	struct mtb_site zero = {};
	bpf_map_update_elem(&sites, &k, &zero, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&sites, &k);
	if (!s)
		count(tgid, MTB_ST_SITES_FULL, 1);
	return s;
}

#include "sample.bpf.h"

/* A live block of TGID (SIZE bytes at WEIGHT, of stack KSTACK, made at
 * TS) was freed at NOW. */
static __always_inline void site_release(__u32 tgid, __u64 size, __u64 weight, __u64 kstack, __u64 ts,
					 __u64 now)
{
	struct mtb_site_key k = { .tgid = tgid, .kstack = kstack };
	struct mtb_site *s = lean ? NULL : bpf_map_lookup_elem(&sites, &k);
	__u64 bytes = weighed(size, weight);

	if (!s)
		return;
	__sync_fetch_and_add(&s->live_allocations, -weight);
	__sync_fetch_and_add(&s->live_bytes, -bytes);
	if (min_age_ns && now - ts < min_age_ns) {
		__sync_fetch_and_add(&s->culled, weight);
		__sync_fetch_and_add(&s->culled_bytes, bytes);
	}
}

/* Takes the live record of block PTR out of the live map; 1 if there was one. */
static __always_inline int live_take(__u32 tgid, __u64 ptr, struct mtb_live *out)
{
	struct mtb_live_key k = { .ptr = ptr, .tgid = tgid };
	struct mtb_live *l = bpf_map_lookup_elem(&live, &k);

	if (!l)
		return 0;
	*out = *l;
	/* Only the one whose delete succeeds owns it (a double free racing). */
	return bpf_map_delete_elem(&live, &k) == 0;
}

static __always_inline void emit_flags(__u32 type, __u32 fn, __u32 object, __u64 pid_tgid, __u64 ptr,
				       __u64 old_ptr, __u64 size, __u64 kstack, __u64 caller, __u32 flags)
{
	struct mtb_rec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);

	if (!r) {
		count(pid_tgid >> 32, MTB_ST_RINGBUF_FULL, 1);
		return;
	}
	r->type = type;
	r->fn = fn;
	r->flags = flags;
	r->object = object;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	/* Taken after the reservation, so that ring order and time order agree. */
	r->ts = bpf_ktime_get_ns();
	r->ptr = ptr;
	r->old_ptr = old_ptr;
	r->size = size;
	r->kstack = kstack;
	r->caller = caller;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

static __always_inline void emit(__u32 type, __u32 fn, __u32 object, __u64 pid_tgid, __u64 ptr,
				 __u64 old_ptr, __u64 size, __u64 kstack, __u64 caller)
{
	emit_flags(type, fn, object, pid_tgid, ptr, old_ptr, size, kstack, caller, 0);
}

/* Sampling: a call of the thread of slot C not recorded (a free of address
 * 0 says it, once after each block recorded: figures.c). */
static __always_inline void touched(struct mtb_call *c, __u64 pid_tgid)
{
	if (!c || !c->touch || !events_mode)
		return;
	c->touch = 0;
	emit(MTB_REC_FREE, MTB_FN_FREE, 0, pid_tgid, 0, 0, 0, 0, 0);
}

/* The slot of block PTR of process TGID in known, and its key there. */
static __always_inline __u64 *known_slot(__u32 tgid, __u64 ptr, __u64 *key)
{
	/* (two blocks of one process never share a key: the multiply is one
	 * to one, and the bit | 1 sets is the same in both, blocks being
	 * 8-aligned) */
	__u64 h = ptr * 0x9e3779b97f4a7c15ull ^ (__u64)tgid * 0xbf58476d1ce4e5b9ull;
	__u32 i = (__u32)(h >> 32) & (MTB_KNOWN_SLOTS - 1);

	*key = h | 1;
	return bpf_map_lookup_elem(&known, &i);
}

static __always_inline void known_put(__u32 tgid, __u64 ptr)
{
	__u64 key, *k = known_slot(tgid, ptr, &key);

	if (k)
		*k = key;
}

/* 1 if block PTR was seen allocated (and now forgets it). */
static __always_inline int known_take(__u32 tgid, __u64 ptr)
{
	__u64 key, *k = known_slot(tgid, ptr, &key);

	if (!k || *k != key)
		return 0;
	*k = 0;
	return 1;
}

/* Are the blocks of allocator OBJECT kept in the live map? */
static __always_inline int keeps_live(__u32 object)
{
	if (!lean)
		return 1;
	struct mtb_objinfo *oi = bpf_map_lookup_elem(&objinfo, &object);

	return oi && (oi->flags & MTB_OI_LIVE);
}

/* Argument I (0..2) of the call, from where the loader said it is.  Read
 * through bpf_probe_read_kernel: clang turns a switch of plain ctx loads
 * into one load at a computed offset, which the verifier refuses. */
#define REG(f)                                                             \
	do {                                                               \
		bpf_probe_read_kernel(&v, sizeof(v), &ctx->f);             \
		return v;                                                  \
	} while (0)

static __always_inline __u64 reg_by_number(struct pt_regs *ctx, __u32 r)
{
	__u64 v = 0;

#if defined(__TARGET_ARCH_x86)
	switch (r) {
	case 0: REG(ax);
	case 1: REG(cx);
	case 2: REG(dx);
	case 3: REG(bx);
	case 5: REG(bp);
	case 6: REG(si);
	case 7: REG(di);
	case 8: REG(r8);
	case 9: REG(r9);
	case 10: REG(r10);
	case 11: REG(r11);
	case 12: REG(r12);
	case 13: REG(r13);
	case 14: REG(r14);
	case 15: REG(r15);
	}
#endif
	return v;
}
#undef REG

static __always_inline __u64 arg(struct pt_regs *ctx, __u64 cookie, int i)
{
	if (cookie & MTB_COOKIE_ARGREGS)
		return reg_by_number(ctx, MTB_COOKIE_REG(cookie, i));
	return i == 0 ? PT_REGS_PARM1(ctx) :
	       i == 1 ? PT_REGS_PARM2(ctx) :
	       i == 2 ? PT_REGS_PARM3(ctx) :
			PT_REGS_PARM4(ctx);
}

static __always_inline __u64 mul_or_max(__u64 a, __u64 b)
{
	if (!b)
		return 0;
	__u64 limit = ~0ull / b;

	/* Keeps clang from turning the test into a 128-bit multiply, which
	 * BPF does not have. */
	barrier_var(limit);
	if (a > limit)
		return ~0ull; /* overflow: the call fails */
	return a * b;
}

/* The return address of a call, at a probe where %rsp still points at it
 * (the entry, or a place past instructions that leave %rsp alone). */
static __always_inline __u64 return_address(struct pt_regs *ctx)
{
	__u64 ret = 0;

#if defined(__TARGET_ARCH_x86)
	bpf_probe_read_user(&ret, sizeof(ret), (void *)PT_REGS_SP(ctx));
#else
	ret = PT_REGS_RET(ctx);
#endif
	return ret;
}

/* Called (at SP, returning to RET) from the innermost operator new of the
 * thread's marker in slot C, or jumped to from it?  (Then it works for new's
 * caller.) */
static __always_inline int from_new(struct mtb_call *c, __u32 tgid, __u32 tid, __u64 sp, __u64 ret, __u64 now)
{
	if (MTB_OWN_TID(c->new_own) != tid || c->new_tgid != tgid || age(now, c->new_ts) >= (__s64)MTB_NEST_WINDOW_NS)
		return 0;
	return sp < c->new_sp ? ret - c->new_lo < c->new_hi - c->new_lo : sp == c->new_sp && ret == c->new_ret;
}

/* Is this allocator call, at SP, made by the operator new the thread is in? */
static __always_inline int made_by_new(struct pt_regs *ctx, struct mtb_call *c, __u32 tgid, __u32 tid,
				       __u64 sp, __u64 now)
{
	if (MTB_OWN_TID(c->new_own) != tid || sp > c->new_sp)
		return 0; /* the common case: no helper call */
	return from_new(c, tgid, tid, sp, return_address(ctx), now);
}

SEC("uprobe")
int mt_entry(struct pt_regs *ctx)
{
	if (probes_only)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	if (!is_traced(tgid))
		return 0;

	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 fn = MTB_COOKIE_FN(cookie);
	__u64 sp = PT_REGS_SP(ctx);
	__u64 now = slot_clock();
	struct mtb_call *c = slot_of(tid);

	if (!c || nested_call(c, tgid, tid, sp, now))
		return 0;

	/* a0, a1 where the cookie's layout says (the loader knows each
	 * function): size (malloc, valloc, pvalloc, aligned_alloc, memalign,
	 * calloc: the product); old block and size (realloc, reallocarray,
	 * rallocx, xallocx); out-pointer and size (posix_memalign).  Only the
	 * arguments used are read: from moved registers each is a helper call. */
	__u64 a0 = 0, a1 = 0;
	__u32 layout = fn == MTB_FN_NEW ? 0 : MTB_COOKIE_LAYOUT(cookie);

	switch (layout) {
	case MTB_LA_SIZE0:
		a0 = arg(ctx, cookie, 0);
		break;
	case MTB_LA_SIZE1:
		a0 = arg(ctx, cookie, 1);
		break;
	case MTB_LA_PROD0:
		a0 = mul_or_max(arg(ctx, cookie, 0), arg(ctx, cookie, 1));
		break;
	case MTB_LA_PROD1:
		a0 = mul_or_max(arg(ctx, cookie, 1), arg(ctx, cookie, 2));
		break;
	case MTB_LA_PTRSIZE0:
		a0 = arg(ctx, cookie, 0);
		a1 = arg(ctx, cookie, 1);
		break;
	case MTB_LA_PTRSIZE1:
		a0 = arg(ctx, cookie, 1);
		a1 = arg(ctx, cookie, 2);
		break;
	case MTB_LA_PTRPROD0:
		a0 = arg(ctx, cookie, 0);
		a1 = mul_or_max(arg(ctx, cookie, 1), arg(ctx, cookie, 2));
		break;
	case MTB_LA_PTRPROD1:
		a0 = arg(ctx, cookie, 1);
		a1 = mul_or_max(arg(ctx, cookie, 2), arg(ctx, cookie, 3));
		break;
	case MTB_LA_PTR0SIZE2:
		a0 = arg(ctx, cookie, 0);
		a1 = arg(ctx, cookie, 2);
		break;
	default:
		return 0;
	}

	/* Sampling: a call that makes no sampled block, and frees none, is
	 * not recorded: its return gives the slot up at once, with no stack
	 * walk.  (It still claims the slot, so that the allocator's calls to
	 * itself inside it stay unrecorded, as always: glibc's realloc(NULL,
	 * n) calls malloc, which would be sampled a second time.)  A resize's
	 * old block was sampled if it is known: the live map, or recording,
	 * the sampled one. */
	__u32 resize = fn == MTB_FN_REALLOC || fn == MTB_FN_REALLOCARRAY || fn == MTB_FN_RALLOCX ||
		       fn == MTB_FN_XALLOCX;
	__u32 hit = 1, old_hit = 0;

	if (sample_mean && fn != MTB_FN_MALLOPT && fn != MTB_FN_MALLOC_TRIM) {
		hit = sample_hit(layout >= MTB_LA_PTRSIZE0 ? a1 : a0);
		if (resize && a0) {
			struct mtb_live_key lk = { .ptr = a0, .tgid = tgid };

			old_hit = lean ? sampled_has(tgid, a0, 0) :
					 bpf_map_lookup_elem(&live, &lk) != NULL;
		}
	}

	if (!claim(c, tid, now)) {
		count(tgid, MTB_ST_PENDING_FULL, 1);
		return 0;
	}
	c->sample_new = hit;
	c->sample_old = old_hit;
	if (!hit && !old_hit)
		touched(c, pid_tgid);
	c->tgid = tgid;
	c->fn = fn;
	c->sp = sp;
	c->ts = now;
	c->a0 = a0;
	c->a1 = a1;
	c->nested = 0;
	c->old_valid = 0;
	c->via_new = made_by_new(ctx, c, tgid, tid, sp, now);
	if (resize && a0 && keeps_live(MTB_COOKIE_OBJECT(cookie))) {
		struct mtb_live old;

		if (live_take(tgid, a0, &old)) {
			c->old_valid = 1;
			c->old_size = old.size;
			c->old_kstack = old.kstack;
			c->old_ts = old.ts;
			c->old_weight = old.weight;
		}
	}
	return 0;
}

/* The kernel walks frame pointers from the caller's %rbp (x29).  Code
 * built without them uses the register for anything: the walk would follow
 * garbage, or fault on it, and a page fault costs most of a microsecond in a
 * virtual machine.  Walk only when it looks like a frame pointer: aligned,
 * just above the stack pointer.  Otherwise the stack is the caller alone,
 * which is all such code would give. */
static __always_inline int fp_walkable(struct pt_regs *ctx)
{
	__u64 fp = PT_REGS_FP(ctx), sp = PT_REGS_SP(ctx);

	return fp >= sp && fp - sp < MTB_FRAME_REACH && !(fp & 7);
}

#include "unwind.bpf.h"

/* Records a new block, allocated by function FN: live map, site totals.
 * KSTACK: the stack key, or 0 to take it here (at the return: the registers
 * are the caller's).  Returns the stack key. */
/* The stack key of the call returning now: KSTACK if already taken, else
 * the kernel's frame-pointer walk (or the caller alone). */
static __always_inline __u64 stack_key(struct pt_regs *ctx, __u32 tgid, __u64 kstack)
{
	if (!kstack) {
		kstack = MTB_KSTACK_CALLER | PT_REGS_IP(ctx);
		if (fp_walkable(ctx)) {
			long id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);

			if (id >= 0)
				kstack = id;
			else
				count(tgid, MTB_ST_STACK_ERROR, 1);
		}
	}
	return kstack;
}

static __always_inline __u64 record_alloc(struct pt_regs *ctx, __u32 tgid, __u32 object, __u32 fn, __u64 ptr,
					  __u64 size, __u64 now, __u64 kstack)
{
	kstack = stack_key(ctx, tgid, kstack);
	if (!keeps_live(object))
		return kstack; /* lean: the events are all */
	if (!now)
		now = bpf_ktime_get_ns();

	struct mtb_live_key lk = { .ptr = ptr, .tgid = tgid };
	__u64 w = sample_weight_of(size), bytes = weighed(size, w);
	struct mtb_live lv = { .size = size, .kstack = kstack, .ts = now, .weight = w };
	int tracked = 1;

	if (bpf_map_update_elem(&live, &lk, &lv, BPF_NOEXIST)) {
		struct mtb_live old;

		/* An address handed out again whose free we did not see: the
		 * old record is dead; replace it. */
		if (live_take(tgid, ptr, &old) && !lean)
			site_release(tgid, old.size, old.weight, old.kstack, old.ts, now);
		if (bpf_map_update_elem(&live, &lk, &lv, BPF_NOEXIST)) {
			tracked = 0;
			count(tgid, MTB_ST_LIVE_FULL, 1);
		}
	}

	struct mtb_site *s = lean ? NULL : site_get(tgid, kstack);

	if (s) {
		s->object_plus1 = object + 1;
		s->fn_plus1 = fn + 1;
		__sync_fetch_and_add(&s->allocations, w);
		__sync_fetch_and_add(&s->allocated_bytes, bytes);
		if (tracked) {
			__sync_fetch_and_add(&s->live_allocations, w);
			__sync_fetch_and_add(&s->live_bytes, bytes);
		}
	}
	return kstack;
}

/* The real size jemalloc (default configuration: 16-byte quantum, four
 * size classes per doubling) gives a request of S bytes. */
static __always_inline __u64 je_usable(__u64 s)
{
	if (s <= 8)
		return 8;
	if (s <= 128)
		return (s + 15) & ~15ull;
	__u64 x = s - 1;
	__u32 lg = 0;

	if (x >> 32) {
		lg += 32;
		x >>= 32;
	}
	if (x >> 16) {
		lg += 16;
		x >>= 16;
	}
	if (x >> 8) {
		lg += 8;
		x >>= 8;
	}
	if (x >> 4) {
		lg += 4;
		x >>= 4;
	}
	if (x >> 2) {
		lg += 2;
		x >>= 2;
	}
	if (x >> 1)
		lg += 1;
	__u64 delta = 1ull << (lg - 2);

	return (s + delta - 1) & ~(delta - 1);
}

/* The call returning now, once its slot says it is the thread's outermost
 * call of this function, at this stack pointer; NULL if it is not (not
 * traced, not paired, an inner call), or if its own return was missed (the
 * slot is given up as stale). */
static __always_inline struct mtb_call *returning_call(struct pt_regs *ctx, __u64 pid_tgid, __u64 cookie)
{
	__u32 tid = (__u32)pid_tgid;
	struct mtb_call *c = slot_of(tid);

	/* Not ours: untraced, or a call that was not paired. */
	if (!c || MTB_OWN_TID(c->own) != tid || c->tgid != pid_tgid >> 32)
		return NULL;
	/* An inner call of another function. */
	if (c->fn != MTB_COOKIE_FN(cookie))
		return NULL;

	/* After the return the stack pointer is RET_SP_DELTA above the entry's. */
	__u64 sp = PT_REGS_SP(ctx);

	if (sp != c->sp + RET_SP_DELTA) {
		if (sp < c->sp + RET_SP_DELTA)
			return NULL; /* an inner call of the same function */
		/* Back above the call: its own return was missed. */
		release_stale(c, c->own);
		return NULL;
	}
	return c;
}

/* The stack of the call returning now (C, its slot), unwound here, where one
 * path of the program goes: the verifier goes through the unwinder once,
 * not once per path (a failed call, rare, is unwound for nothing).  A call
 * made by operator new has its caller's stack already.  0 without one. */
static __always_inline __u64 return_stack(struct pt_regs *ctx, struct mtb_call *c)
{
	__u64 dstack = 0;

	/* (made by operator new: the stack of new's caller, from the registers
	 * new's entry kept, once per new; its frames are all still there) */
	if (dwarf_unwind && (!c->via_new || !c->new_kstack)) {
		int vn = c->via_new;

		dstack = dwarf_stack(c, vn ? c->new_caller : PT_REGS_IP(ctx), vn ? c->new_usp : PT_REGS_SP(ctx),
				     vn ? c->new_ubp : PT_REGS_FP(ctx), 0);
		if (vn)
			c->new_kstack = dstack ? dstack : MTB_KSTACK_CALLER | c->new_caller;
	}
	return dstack;
}

/* The block a returning call made: PTR, of SIZE bytes, replacing the block
 * at OLD (0: none), recorded as TYPE (MTB_REC_ALLOC or MTB_REC_REALLOC). */
struct made {
	__u64 ptr, size, old;
	__u32 type;
};

/* xallocx (P, the call; RET its result): in place or not at all; RET is the
 * block's real size.  It was resized if that is not the size jemalloc gives
 * the old requested size (je_usable: what sallocx says of a block of mallocx
 * without alignment, the shim's before-size).  1 if it was (M says how),
 * else 0, the old block's live record put back. */
static __always_inline int xallocx_made(struct mtb_call *p, __u64 ret, __u64 now, struct made *m)
{
	__u32 tgid = p->tgid;
	__u64 ptr = p->a0, size = p->a1;
	struct mtb_live_key lk = { .ptr = ptr, .tgid = tgid };

	if (!p->old_valid || !size)
		return 0;
	if (ret == je_usable(p->old_size)) {
		struct mtb_live lv = { .size = p->old_size,
						.kstack = p->old_kstack,
						.ts = p->old_ts,
						.weight = p->old_weight };

		bpf_map_update_elem(&live, &lk, &lv, BPF_NOEXIST);
		return 0;
	}
	site_release(tgid, p->old_size, p->old_weight, p->old_kstack, p->old_ts, now);
	m->ptr = m->old = ptr;
	m->size = size;
	m->type = MTB_REC_REALLOC;
	return 1;
}

/* realloc, reallocarray or rallocx (P, the call, by function FN of OBJECT;
 * RET its result; CALLER where it was called from): 1 if it made a block (M
 * says which), else 0: it failed (the old block's live record is put back)
 * or only freed (emitted here as a free). */
static __always_inline int realloc_made(struct mtb_call *p, __u32 fn, __u32 object, __u64 pid_tgid, __u64 ret,
					__u64 now, __u64 caller, struct made *m)
{
	__u32 tgid = p->tgid;
	__u64 old = p->a0, size = p->a1;

	if (!old) {
		if (!ret)
			return 0;
		m->ptr = ret;
		m->size = size;
		return 1;
	}
	if (!ret && size) {
		/* Failed: the old block is still there. */
		if (p->old_valid) {
			struct mtb_live_key lk = { .ptr = old, .tgid = tgid };
			struct mtb_live lv = { .size = p->old_size,
						.kstack = p->old_kstack,
						.ts = p->old_ts,
						.weight = p->old_weight };

			bpf_map_update_elem(&live, &lk, &lv, BPF_NOEXIST);
		}
		return 0;
	}
	/* The old block is gone: freed (size 0, NULL) or replaced. */
	if (p->old_valid)
		site_release(tgid, p->old_size, p->old_weight, p->old_kstack, p->old_ts, now);
	else if (!lean && !sample_mean)
		count(tgid, MTB_ST_UNMATCHED_FREE, 1);
	if (!ret) {
		if (events_mode && (!sample_mean || p->sample_old))
			emit(MTB_REC_FREE, fn, object, pid_tgid, old, 0, 0, 0, caller);
		if (lean)
			sample_mean ? sampled_has(tgid, old, 1) : known_take(tgid, old);
		return 0;
	}
	m->ptr = ret;
	m->old = old;
	m->size = size;
	m->type = MTB_REC_REALLOC;
	return 1;
}

SEC("uretprobe")
int mt_return(struct pt_regs *ctx)
{
	if (probes_only)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct mtb_call *c = returning_call(ctx, pid_tgid, cookie);

	if (!c)
		return 0;
	if (!c->sample_new && !c->sample_old) {
		/* sampling: nothing of it is recorded */
		if (c->via_new && MTB_OWN_TID(c->new_own) == tid)
			c->new_sp = 0;
		barrier();
		c->own = 0;
		return 0;
	}

	__u64 dstack = return_stack(ctx, c);
	struct mtb_call p = *c;

	/* The copy is made before the slot is given up. */
	barrier();
	c->own = 0;

	__u32 tgid = p.tgid, fn = p.fn, object = MTB_COOKIE_OBJECT(cookie);
	__u64 ret = PT_REGS_RC(ctx), caller = PT_REGS_IP(ctx);
	/* For the live and sites maps (the event takes its own time): lean,
	 * only record_alloc's live record needs it, where it is taken then. */
	__u64 now = lean ? 0 : bpf_ktime_get_ns();
	/* Made by operator new: its caller's stack, taken at new's entry. */
	__u64 kstack = p.via_new ? p.new_kstack : dstack;

	if (p.via_new) {
		caller = p.new_caller;
		/* new is done once its allocator call returns: the next new
		 * from the same place (same %rsp, same return address) is
		 * another call, with a stack of its own. */
		if (MTB_OWN_TID(c->new_own) == tid)
			c->new_sp = 0;
	}

	/* A call that tuned the allocator: its arguments and result, no block. */
	if (fn == MTB_FN_MALLOPT || fn == MTB_FN_MALLOC_TRIM) {
		if (events_mode)
			emit(MTB_REC_MALLOPT, fn, object, pid_tgid, p.a0, p.a1, ret,
			     stack_key(ctx, tgid, kstack), caller);
		return 0;
	}

	/* The block the call made, recorded after the switch. */
	struct made m = { .type = MTB_REC_ALLOC };

	switch (fn) {
	case MTB_FN_POSIX_MEMALIGN: {
		__u64 ptr = 0;

		if ((int)ret != 0)
			return 0;
		if (bpf_probe_read_user(&ptr, sizeof(ptr), (void *)p.a0) || !ptr)
			return 0;
		m.ptr = ptr;
		m.size = p.a1;
		break;
	}
	case MTB_FN_XALLOCX:
		if (!xallocx_made(&p, ret, now, &m))
			return 0;
		break;
	case MTB_FN_REALLOC:
	case MTB_FN_REALLOCARRAY:
	case MTB_FN_RALLOCX:
		if (!realloc_made(&p, fn, object, pid_tgid, ret, now, caller, &m))
			return 0;
		break;
	default:
		if (!ret)
			return 0;
		m.ptr = ret;
		m.size = p.a0;
		break;
	}
	if (sample_mean) {
		/* the old block's part and the new one's, each as sampled */
		if (lean && m.old && p.sample_old)
			sampled_has(tgid, m.old, 1);
		if (!p.sample_new) {
			if (events_mode && m.old && p.sample_old)
				emit(MTB_REC_FREE, fn, object, pid_tgid, m.old, 0, 0, 0, caller);
			return 0;
		}
		if (m.old && !p.sample_old) {
			m.type = MTB_REC_ALLOC;
			m.old = 0;
		}
		if (lean)
			sampled_put(tgid, m.ptr);
	}
	kstack = record_alloc(ctx, tgid, object, fn, m.ptr, m.size, now, kstack);
	if (lean && !sample_mean) {
		if (m.old)
			known_take(tgid, m.old);
		known_put(tgid, m.ptr);
	}
	if (events_mode)
		emit(m.type, fn, object, pid_tgid, m.ptr, m.old, m.size, kstack, caller);
	if (sample_mean)
		c->touch = 1;
	return 0;
}

/* Is this free() (of a block we do not know) called from the allocator's
 * own code? */
static __always_inline int internal_free(struct pt_regs *ctx, __u32 object)
{
	struct mtb_objinfo *oi = bpf_map_lookup_elem(&objinfo, &object);

	if (!oi || !oi->text_hi)
		return 0;
	/* The probe is where %rsp still points at the return address. */
	__u64 ret = return_address(ctx);

	if (!ret)
		return 0;
	/* The object's load bias: page aligned, whatever the IP is past the
	 * breakpoint. */
	__u64 bias = (PT_REGS_IP(ctx) - oi->free_vaddr) & ~0xfffull;

	return ret - bias >= oi->text_lo && ret - bias < oi->text_hi;
}

SEC("uprobe")
int mt_free(struct pt_regs *ctx)
{
	if (probes_only)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 ptr = arg(ctx, cookie, 0);

	if (!ptr || !is_traced(tgid))
		return 0;

	struct mtb_call *c = slot_of(tid);

	if (c && nested_call(c, tgid, tid, PT_REGS_SP(ctx), 0))
		return 0;

	struct mtb_live old;

	__u32 object = MTB_COOKIE_OBJECT(cookie);

	if (!keeps_live(object)) {
		/* sampling: a sampled block's free alone */
		if (sample_mean) {
			if (sampled_has(tgid, ptr, 1))
				emit(MTB_REC_FREE, MTB_FN_FREE, object, pid_tgid, ptr, 0, 0, 0, 0);
			else
				touched(c, pid_tgid);
			return 0;
		}
		/* lean: the loader pairs it, and drops an internal free of a
		 * block it does not know */
		int internal = !known_take(tgid, ptr) && internal_free(ctx, object);

		emit_flags(MTB_REC_FREE, MTB_FN_FREE, object, pid_tgid, ptr, 0, 0, 0, 0,
			   internal ? MTB_RF_INTERNAL : 0);
		return 0;
	}
	if (live_take(tgid, ptr, &old)) {
		site_release(tgid, old.size, old.weight, old.kstack, old.ts, min_age_ns ? bpf_ktime_get_ns() : 0);
	} else if (sample_mean) {
		touched(c, pid_tgid);
		return 0; /* not a sampled block */
	} else if (internal_free(ctx, object)) {
		count(tgid, MTB_ST_INTERNAL_FREE, 1);
		return 0;
	} else {
		count(tgid, MTB_ST_UNMATCHED_FREE, 1);
	}
	if (events_mode)
		emit(MTB_REC_FREE, MTB_FN_FREE, object, pid_tgid, ptr, 0, 0, 0, 0);
	return 0;
}

/* Claims slot C's operator new marker for thread TID: free, already its
 * own, or another thread's old enough to take over. */
static __always_inline int claim_new(struct mtb_call *c, __u32 tid, __u64 now)
{
	__u64 own = c->new_own, mine = (__u64)tid << 32 | (__u32)(now >> MTB_OWN_SHIFT);

	if (own && MTB_OWN_TID(own) != tid &&
	    own_age(now, own) < (__s32)(MTB_NEW_TAKEOVER_NS >> MTB_OWN_SHIFT))
		return 0;
	return __sync_val_compare_and_swap(&c->new_own, own, mine) == own;
}

/*
 * C++'s operator new (every variant): it allocates through malloc,
 * aligned_alloc and the like, whose probes count the call; here the thread
 * is marked as inside new, with the stack of new's caller taken at its
 * entry, which the allocator call it makes takes as its own (made_by_new):
 * frames[0] is then the return address into the code that called new, even
 * when new itself has no frame pointer.  No return probe: new throws
 * (bad_alloc, or whatever a new_handler throws), and the trampoline a
 * return probe puts in the stack stops the unwinder: std::terminate.
 */
SEC("uprobe")
int mt_new(struct pt_regs *ctx)
{
	if (probes_only)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	if (!is_traced(tgid))
		return 0;

	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 sp = PT_REGS_SP(ctx);
	__u64 now = slot_clock();
	struct mtb_call *c = slot_of(tid);

	if (!c)
		return 0;
	/* Inside an allocator call: that call is what counts. */
	if (MTB_OWN_TID(c->own) == tid && c->tgid == tgid && sp <= c->sp && age(now, c->ts) < (__s64)MTB_NEST_WINDOW_NS)
		return 0;

	__u64 ret = return_address(ctx);
	__u64 lo = PT_REGS_IP(ctx), hi = lo + MTB_COOKIE_SIZE(cookie);

	/* Called by the operator new in progress (nothrow new calls new, new[]
	 * jumps to new): the stack of its caller stands. */
	if (from_new(c, tgid, tid, sp, ret, now)) {
		c->new_sp = sp;
		c->new_ret = ret;
		c->new_lo = lo;
		c->new_hi = hi;
		return 0;
	}
	if (!claim_new(c, tid, now)) {
		/* Another thread's, sharing the slot: the allocator call will
		 * have its own caller, in new. */
		count(tgid, MTB_ST_STACK_ERROR, 1);
		return 0;
	}
	/* At new's entry the caller's frame is at %rsp + 8, its %rbp in %rbp:
	 * unwound from there by mt_return, at the return of the allocator
	 * call new makes (new_kstack 0 until then), where new's caller's
	 * frames are still all there.  Else the kernel's frame-pointer walk,
	 * here. */
	__u64 kstack = 0;

	if (!dwarf_unwind) {
		kstack = MTB_KSTACK_CALLER | ret;
		if (entry_frames && (cookie & MTB_COOKIE_ENTRY_FRAME) && fp_walkable(ctx)) {
			long id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);

			if (id >= 0)
				kstack = MTB_KSTACK_SKIP1 | id;
			else
				count(tgid, MTB_ST_STACK_ERROR, 1);
		}
	}
	c->new_usp = sp + 8;
	c->new_ubp = PT_REGS_FP(ctx);
	c->new_tgid = tgid;
	c->new_ts = now;
	c->new_sp = sp;
	c->new_ret = ret;
	c->new_lo = lo;
	c->new_hi = hi;
	c->new_caller = ret;
	c->new_kstack = kstack;
	return 0;
}

#include "mmaps.bpf.h"

/* ---- a traced process's exit ----
 *
 * sched_process_exit(struct task_struct *p, ...): each thread's exit, in
 * do_exit, after it took itself off signal->live and set its exit_code.
 * The last thread's (live 0: the thread group is dead) sends the process's
 * exit status, MTB_REC_EXIT, with a wake-up: a process attached to (-p) is
 * not the loader's child, which cannot wait for it (its recording and
 * report said "still running when tracing stopped").  In both modes:
 * aggregation's ring (one page) carries these alone.  Only processes
 * traced by pid (the traced bitmap), not trace_all's. */
struct signal_struct___mtx {
	struct {
		int counter;
	} live;
	unsigned int flags;
	int group_exit_code;
} __attribute__((preserve_access_index));
struct task_struct___mtx {
	int tgid;
	int exit_code;
	struct signal_struct___mtx *signal;
} __attribute__((preserve_access_index));

#define MTB_SIGNAL_GROUP_EXIT 0x4 /* include/linux/sched/signal.h */

SEC("tp_btf/sched_process_exit")
int BPF_PROG(mt_proc_exit, struct task_struct___mtx *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);

	/* a process traced by pid (-p, record's command): not every exit of
	 * the machine under trace_all (sweep), which reads no status */
	if (!in_pidset(&traced, tgid) || BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	/* exit_group and a fatal signal set the group's code, which wait()
	 * reports, whichever thread is last; threads that each called exit
	 * leave the last one's own */
	int code = BPF_CORE_READ(p, exit_code);

	if (BPF_CORE_READ(p, signal, flags) & MTB_SIGNAL_GROUP_EXIT)
		code = BPF_CORE_READ(p, signal, group_exit_code);
	struct mtb_exitrec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);

	if (!r)
		return 0; /* (no event lost: the status alone is unknown) */
	r->type = MTB_REC_EXIT;
	r->pad[0] = r->pad[1] = r->pad[2] = 0;
	r->pid = tgid;
	r->code = code;
	r->pad2 = 0;
	r->ts = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* ---- a traced process's children ----
 *
 * sched_process_fork(struct task_struct *parent, struct task_struct *child):
 * every clone, threads too.  A new process (another thread group) started
 * by a process traced by pid, in events mode (record, which follows no
 * fork with the BPF backend): one MTB_REC_CHILD, so that the recording
 * names the children it did not trace, as the shim's does. */
struct task_struct___mtc {
	int tgid;
} __attribute__((preserve_access_index));

SEC("tp_btf/sched_process_fork")
int BPF_PROG(mt_proc_fork, struct task_struct___mtc *parent, struct task_struct___mtc *child)
{
	if (!events_mode)
		return 0;
	__u32 tgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);

	if (ctgid == tgid || !in_pidset(&traced, tgid))
		return 0;
	struct mtb_childrec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);

	if (!r)
		return 0; /* (the child goes uncounted) */
	r->type = MTB_REC_CHILD;
	r->pad[0] = r->pad[1] = r->pad[2] = 0;
	r->pid = tgid;
	r->child = ctgid;
	r->pad2 = 0;
	r->ts = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}
