/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * mmaps.bpf.h - the program that records a traced process's mapping calls
 * (mmap, munmap, mremap, brk) at their system call's exit, with its maps;
 * what it sees and why there, below.
 *
 * Included once, by memtrace.bpf.c, after its helpers and the allocator
 * programs: it uses the includer's is_traced(), slot_of(), count(), the
 * stack key and the ring buffer (emit's record).
 */
#ifndef MEMTRACE_MMAPS_BPF_H
#define MEMTRACE_MMAPS_BPF_H

/* ---- mapping calls: mmap, munmap, mremap, brk ----
 *
 * The raw tracepoint of every system call's exit alone (no uprobe: every
 * mapping of a traced process is seen, the allocator's own too, and the C
 * library's; raw, not syscalls:sys_exit_mmap and the like: those are found
 * by their ids in tracefs, which many machines do not mount).  At the exit
 * the user registers still hold the call's number and arguments (only the
 * result register changed), and the stack is the one the call was made
 * from: the whole record is made there, with the result, and the entry's
 * tracepoint is not attached.  Every uretprobe return is a system call on
 * x86-64 since Linux 6.11 (616k a sqlite3 run): each attached tracepoint
 * runs at all of them (the entry's cost a sqlite3 run ~0.11 s of CPU with
 * bpf_stats on, which doubled it with its clock reads; a few tens of ms
 * without).  What only the entry saw, the
 * break before brk, is kept per process (brks).  A call made while the
 * thread's allocator call slot is held is the allocator's.  Attached by the
 * loader unless record --no-mmap. */

/* The system calls' numbers: the architecture's table. */
#if defined(__TARGET_ARCH_x86)
#define MTB_NR_MMAP 9
#define MTB_NR_MUNMAP 11
#define MTB_NR_MREMAP 25
#define MTB_NR_BRK 12
#define MTB_SYSCALL_PARM6(r) ((r)->r9) /* libbpf 1.1 names five */
#define MTB_SYSCALL_NR_FIELD orig_ax
#else /* the generic table (arm64, riscv) */
#define MTB_NR_MMAP 222
#define MTB_NR_MUNMAP 215
#define MTB_NR_MREMAP 216
#define MTB_NR_BRK 214
#define MTB_SYSCALL_PARM6(r) ((r)->regs[5])
#if defined(__TARGET_ARCH_arm64)
#define MTB_SYSCALL_NR_FIELD syscallno
#else
#error "where the system call's number is in pt_regs on this architecture"
#endif
#endif

struct mm_struct___mt {
	unsigned long start_brk;
} __attribute__((preserve_access_index));
struct task_struct___mtm {
	struct mm_struct___mt *mm;
	struct task_struct___mtm *real_parent;
	int tgid;
} __attribute__((preserve_access_index));

/* The break each traced process was last seen to leave (its last brk's
 * result): the break before its next brk.  After an exec it is stale, but
 * the C library's first brk then is a query (brk(0): the break is its
 * result), which sets it right. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} brks SEC(".maps");

/* MT_MAP_* of codec.h */
#define MTB_MAP_MMAP 0
#define MTB_MAP_MUNMAP 1
#define MTB_MAP_MREMAP 2
#define MTB_MAP_BRK 3

/* The four calls' numbers, as bits of a mask of 256. */
#define MAP_WORD(w) (MAP_BIT_W(MTB_NR_MMAP, w) | MAP_BIT_W(MTB_NR_MUNMAP, w) | \
		     MAP_BIT_W(MTB_NR_MREMAP, w) | MAP_BIT_W(MTB_NR_BRK, w))
#define MAP_BIT_W(nr, w) ((nr) / 64 == (w) ? 1ull << ((nr) % 64) : 0)
static const volatile __u64 map_mask[4] = { MAP_WORD(0), MAP_WORD(1), MAP_WORD(2), MAP_WORD(3) };

/* The mapping kind of system call NR, or -1. */
static __always_inline int map_kind(long nr)
{
	switch (nr) {
	case MTB_NR_MMAP:
		return MTB_MAP_MMAP;
	case MTB_NR_MUNMAP:
		return MTB_MAP_MUNMAP;
	case MTB_NR_MREMAP:
		return MTB_MAP_MREMAP;
	case MTB_NR_BRK:
		return MTB_MAP_BRK;
	}
	return -1;
}

/* The break before brk(A0) of process TGID, which returned RET (the break
 * after: the old one when it failed or asked), remembering RET for the
 * next.  Not known yet (a process forked since we last saw its parent's
 * break, or attached to): the parent's, else where the heap starts. */
static __always_inline __u64 brk_before(__u32 tgid, __u64 a0, __u64 ret)
{
	__u64 *last = bpf_map_lookup_elem(&brks, &tgid), old;

	if (!a0 || ret != a0)
		old = ret; /* a query, or a failure: the break did not move */
	else if (last)
		old = *last;
	else {
		struct task_struct___mtm *task = (void *)bpf_get_current_task();
		__u32 ptgid = BPF_CORE_READ(task, real_parent, tgid);
		__u64 *pl = bpf_map_lookup_elem(&brks, &ptgid);

		old = pl ? *pl : BPF_CORE_READ(task, mm, start_brk);
	}
	if (last)
		*last = ret;
	else
		bpf_map_update_elem(&brks, &tgid, &ret, BPF_ANY);
	return old;
}

/* sys_exit(struct pt_regs *regs, long ret): every system call's exit, the
 * uretprobe trampoline's among them, comes here: turned away by the call's
 * number first (a BTF tracepoint: REGS read directly, no copy).  A mapping
 * call of a traced process: one MTB_REC_MAP, with the stack unwound from
 * the user registers, which are still the call's. */
SEC("tp_btf/sys_exit")
int BPF_PROG(mt_sys_exit, struct pt_regs *regs, long ret)
{
	if (!events_mode)
		return 0;
	/* The four calls' numbers as a mask: a test that leaves the verifier
	 * no number to tell paths apart by until after the walk (a switch
	 * here would have it go through the unwinder once per kind: 46k
	 * instructions instead of 12k, ~30 ms of each start-up). */
	__u64 nr = (__u64)regs->MTB_SYSCALL_NR_FIELD;

	if (nr >= 256 || !(map_mask[nr / 64] & (1ull << (nr % 64))))
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	if (!is_traced(tgid))
		return 0;
	__u64 a[6] = { PT_REGS_PARM1_SYSCALL(regs), PT_REGS_PARM2_SYSCALL(regs),
		       PT_REGS_PARM3_SYSCALL(regs), PT_REGS_PARM4_SYSCALL(regs),
		       PT_REGS_PARM5_SYSCALL(regs), MTB_SYSCALL_PARM6(regs) };
	__u64 caller = PT_REGS_IP(regs);
	struct mtb_call *c = slot_of(tid);
	__u64 kstack = 0;

	/* (the walk, one path of the program: a branch on KIND before it
	 * would have the verifier go through the unwinder once per kind) */
	if (dwarf_unwind && c)
		kstack = dwarf_stack(c, caller, PT_REGS_SP(regs), PT_REGS_FP(regs), 1);
	if (!kstack) {
		long sid = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);

		kstack = sid >= 0 ? (__u64)sid : MTB_KSTACK_CALLER | caller;
	}
	int kind = map_kind((long)nr);

	if (kind < 0)
		return 0;
	__u32 by = c && MTB_OWN_TID(c->own) == tid && c->tgid == tgid;
	__u64 old_brk = kind == MTB_MAP_BRK ? brk_before(tgid, a[0], (__u64)ret) : 0;
	struct mtb_maprec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);

	if (!r) {
		count(tgid, MTB_ST_RINGBUF_FULL, 1);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->type = MTB_REC_MAP;
	r->kind = (__u32)kind;
	r->by = by;
	r->pid = tgid;
	r->tid = tid;
	r->fd = -1;
	r->ts = bpf_ktime_get_ns();
	r->kstack = kstack;
	r->caller = caller;
	/* the kernel's errors are -4095..-1 */
	int failed = ret < 0 && ret >= -4095;

	r->error = failed && kind != MTB_MAP_BRK ? (__s32)-ret : 0;
	switch (kind) {
	case MTB_MAP_MMAP: /* addr, len, prot, flags, fd, off */
		r->addr = failed ? 0 : (__u64)ret;
		r->old_addr = a[0];
		r->len = a[1];
		r->prot = (__u32)a[2];
		r->flags = (__u32)a[3];
		r->fd = (r->flags & 0x20) ? -1 : (__s32)a[4];
		r->offset = a[5];
		break;
	case MTB_MAP_MUNMAP: /* addr, len */
		r->addr = a[0];
		r->len = a[1];
		break;
	case MTB_MAP_MREMAP: /* old_addr, old_len, new_len, flags, new_addr */
		r->addr = failed ? 0 : (__u64)ret;
		r->old_addr = a[0];
		r->old_len = a[1];
		r->len = a[2];
		r->flags = (__u32)a[3];
		break;
	default: /* brk(addr): the new break (the old one when it failed) */
		r->addr = (__u64)ret;
		r->len = a[0];
		r->old_addr = old_brk;
		r->error = a[0] && (__u64)ret != a[0] ? 12 /* ENOMEM */ : 0;
		break;
	}
	/* A file mapped executable (a dlopen, rare) wakes the loader at once:
	 * it reads the object's unwind table before stacks through it are cut
	 * (the rest waits for its next poll, 5-10 ms). */
	int code = kind == MTB_MAP_MMAP && (r->prot & 4 /* PROT_EXEC */) && r->fd >= 0 && !failed;

	bpf_ringbuf_submit(r, code ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}

#endif
