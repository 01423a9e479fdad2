/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * unwind.bpf.h - the in-kernel stack unwinder of the BPF programs:
 * dwarf_stack, which walks a user stack by the unwind tables the loader
 * compiled from each object's .eh_frame (src/capture/bpf/unwind.c builds
 * them; their rows and keys are memtrace.h's), its maps and its per-CPU
 * scratch.  How it works, and what each of its limits saved: bpf/README,
 * "Stacks: unwinding in the kernel".
 *
 * Included once, by memtrace.bpf.c, after its helpers: the programs and the
 * unwinder must be one BPF object (one set of maps, one skeleton), and the
 * unwinder uses the includer's count() (the loss counters) and
 * MTB_FRAME_REACH.
 */
#ifndef MEMTRACE_UNWIND_BPF_H
#define MEMTRACE_UNWIND_BPF_H

/* ---- the unwinder's maps (memtrace.h) ---- */

/* (process, address space, 2 MB granule) -> the file mappings seen there:
 * bpf_find_vma once per mapping and granule, not per cold PC. */
#define MTB_VGRAN_SHIFT 21
#define MTB_VSET 4
struct mtb_vkey {
	__u64 gran;
	__u32 tgid, mm;
};
struct mtb_vent {
	__u64 start, end, pgoff, dev, ino;
};
struct mtb_vset {
	struct mtb_vent e[MTB_VSET];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 14);
	__type(key, struct mtb_vkey);
	__type(value, struct mtb_vset);
} uvmas SEC(".maps");

/* One object's rows; the loader creates one of its own size per object. */
struct urows {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	/* sizes, not types: clang leaves the row's type a declaration here */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct mtb_urow));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MTB_MAX_UTABS);
	__type(key, __u32);
	__array(values, struct urows);
} utabs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MTB_MAX_UTABS);
	__type(key, struct mtb_utab_key);
	__type(value, struct mtb_utab);
} utab_ids SEC(".maps");

/* (process, address space, PC) -> its row, direct-mapped: an array, whose
 * lookup the verifier inlines (a hash map's costs a helper call and a
 * hash), once warm instead of finding the mapping and searching the table.
 * Entries are written by any CPU without a lock: each carries a check of
 * its key and row, and a torn one is a miss. */
#define MTB_URCACHE_SLOTS (1 << 16)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MTB_URCACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct mtb_ucache);
} urcache SEC(".maps");

/* The stacks unwound, by a hash of their frames. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 16);
	__type(key, __u64);
	__type(value, struct mtb_ustack);
} ustacks SEC(".maps");

/* Stacks put in ustacks, per CPU: the loader empties the map when half of
 * it has been filled since it last did (stacks.c, mtb_stacks_prune), so
 * that a program with more distinct stacks than it holds loses none. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ustk_ins SEC(".maps");

/* Where a stack is unwound into, per CPU: too big for the BPF stack.  A
 * program can be preempted (not migrated) in the middle, and another task's
 * on the same CPU find the scratch busy: it then uses frame pointers. */
/* The walk's state (uw_step is bpf_loop's callback).  In the scratch map,
 * not on the BPF stack: the verifier follows constants on its own stack,
 * and would verify the callback once per frame count. */
struct uwalk {
	__u64 pc, sp, bp; /* the frame's: pc a return address */
	__u64 hash;
	__u32 tgid, n;
	__u32 mm; /* which address space (the cache's key): a new one after exec */
	/* this frame's rule is the frame pointer's, for want of one (uw_frame:
	 * here, not on the BPF stack, where the verifier would follow both
	 * values through the rest of the frame: twice the instructions) */
	__u32 guess;
	__u32 why;   /* MTB_ST_UW_* of the first trouble, 0 if none */
	__u32 flags; /* MTB_USTACK_* */
	/* the mapping of the last PC looked up: [vstart, vend), file offset
	 * = pc + vdelta, its table (vhave) */
	__u64 vstart, vend, vdelta;
	__u32 vtab, vnrows, vhave, pad;
	__u64 top; /* the highest CFA met */
	__u32 exact; /* pc is the interrupted instruction (after a signal frame) */
	__u32 sig;   /* past a signal frame: return addresses may be hijacked */
};

/* A binary search of a table (bs_step), in the scratch map too. */
struct bsearch {
	__u64 off;
	__u32 tab, lo, hi, fail;
};

/* The stack window: up to 16 KB, read at once.  A read costs ~70 ns and
 * ~13 ns a KB more here: 4 KB at a time, sqlite3's stacks took 2.7 reads
 * each; as far as the thread's last walk went (its slot's stk_reach), one
 * or two. */
#define MTB_UWIN_WORDS 2048
#define MTB_UWIN_FIRST 4096 /* bytes read when the last walk says nothing */
#define MTB_UHOLES 4
#define MTB_USEEN 512
#define UW_PER_STEP 1
struct mtb_uscratch {
	struct mtb_uwcount cnt; /* first: the loader reads it */
	__u64 busy;
	struct mtb_ustack st;
	/* [win_lo, win_lo + 8 * win_n) of the user stack, read at once: most
	 * frames' words come from here, not from a helper call each */
	__u64 win_lo, win_n;
	__u64 win[MTB_UWIN_WORDS];
	/* The stack mapping of the stack being walked (the thread's slot
	 * keeps it: struct mtb_call), 0 if not known; windows end there: a
	 * read past it faults, and a fault costs more than the rest of the
	 * walk. */
	__u64 stk_lo, stk_hi;
	/* Pages of the stack of process hole_tgid (address space hole_mm)
	 * that a read failed on: not present (a big buffer in a frame that
	 * nothing ever wrote; sqlite3's shell has one, and one stack in two
	 * paid two faults, 1.8 us, for it).  Windows stop before them. */
	__u64 hole[MTB_UHOLES];
	/* Keys of stacks this CPU found or put in ustacks, direct-mapped
	 * (0: none; a key is never 0, MTB_KSTACK_DWARF is not in it but a
	 * hash of 48 bits is 0 once in 2^48). */
	__u64 seen[MTB_USEEN];
	__u32 hole_tgid, hole_mm, hole_next, hole_pad;
	/* How far up the stack the thread's last walk read (its outermost
	 * CFA; the slot's stk_reach): a window is read up to there, at most
	 * 16 KB. */
	__u64 reach;
	struct uwalk w;
	struct bsearch bs;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mtb_uscratch);
} uscratch SEC(".maps");

/* ---- DWARF unwinding (memtrace.h: the tables) ---- */

/* The kernel's structures read here, as CO-RE flavours: they need nothing
 * of vmlinux.h (the committed copy has only pt_regs). */
struct super_block___mt {
	__u32 s_dev;
} __attribute__((preserve_access_index));
struct inode___mt {
	unsigned long i_ino;
	struct super_block___mt *i_sb;
} __attribute__((preserve_access_index));
struct file___mt {
	struct inode___mt *f_inode;
} __attribute__((preserve_access_index));
struct return_instance___mt {
	unsigned long stack, orig_ret_vaddr;
	struct return_instance___mt *next;
} __attribute__((preserve_access_index));
struct uprobe_task___mt {
	struct return_instance___mt *return_instances;
} __attribute__((preserve_access_index));
struct task_struct___mt {
	void *mm;
	struct uprobe_task___mt *utask;
} __attribute__((preserve_access_index));
struct vm_area_struct___mt {
	unsigned long vm_start, vm_end, vm_pgoff;
	struct file___mt *vm_file;
} __attribute__((preserve_access_index));

struct uvma {
	__u64 start, end, pgoff, dev, ino;
	__u32 file, pad;
};

static long vma_cb(void *task, struct vm_area_struct___mt *vma, struct uvma *v)
{
	struct file___mt *f = BPF_CORE_READ(vma, vm_file);

	v->start = BPF_CORE_READ(vma, vm_start);
	v->end = BPF_CORE_READ(vma, vm_end);
	v->pgoff = BPF_CORE_READ(vma, vm_pgoff);
	if (f) {
		v->ino = BPF_CORE_READ(f, f_inode, i_ino);
		v->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
		v->file = 1;
	}
	return 0;
}

/* The check of a rule cache entry. */
static __always_inline __u32 ucache_check(__u64 pc, __u32 tgid, __u32 mm, const struct mtb_urow *r)
{
	__u64 h = pc * 0x9e3779b97f4a7c15ull ^ ((__u64)tgid << 32 | mm);

	h ^= ((__u64)r->pc << 32 | (__u32)r->off) * 0xbf58476d1ce4e5b9ull;
	h ^= ((__u64)(__u16)r->boff << 16 | (__u64)r->kind << 8 | r->bhow) * 0x94d049bb133111ebull;
	return (__u32)(h >> 32) | 1; /* never 0: a zeroed slot is empty */
}

/* The word at user address A (8-aligned), from the CPU's stack window S,
 * which is read anew when A is not in it: 4 KB, or as far as the last walk
 * of the process went (up to 16 KB), less where the stack ends sooner or a
 * page is known not to be there.  0, or -1 if it cannot be read. */
static __always_inline int stack_word(struct mtb_uscratch *s, __u64 a, __u64 *v)
{
	__u64 i = (a - s->win_lo) / 8;

	if (a >= s->win_lo && i < s->win_n && !(a & 7)) {
		*v = s->win[i & (MTB_UWIN_WORDS - 1)];
		return 0;
	}
	s->win_n = 0;
	if (a & 7)
		return bpf_probe_read_user(v, sizeof(*v), (void *)a) ? -1 : 0;
	/* From a little below A: a frame's saved %rbp is below its return
	 * address, and the walk reads the return address first. */
	__u64 lo = a - 64, hi = lo + MTB_UWIN_FIRST;

	if (s->reach > hi)
		hi = s->reach + 64 < lo + sizeof(s->win) ? s->reach + 64 : lo + sizeof(s->win);

	if (a >= s->stk_lo && a < s->stk_hi) {
		if (hi > s->stk_hi)
			hi = s->stk_hi;
		if (lo < s->stk_lo)
			lo = a;
	}
	for (int k = 0; k < MTB_UHOLES; k++) {
		__u64 h = s->hole[k];

		if (h > a && h < hi)
			hi = h;
	}
	__u32 len = (__u32)(hi - lo) & (sizeof(s->win) * 2 - 8);

	/* (bounds the verifier can see) */
	barrier_var(len);
	if (len > sizeof(s->win))
		len = sizeof(s->win);
	s->win_lo = lo;
	s->cnt.reads++;
	if (len > a - lo && !bpf_probe_read_user(s->win, len, (void *)lo)) {
		s->win_n = len / 8;
		*v = s->win[((a - lo) / 8) & (MTB_UWIN_WORDS - 1)];
		return 0;
	}
	/* Up to the end of A's page, which is there if A is: then the page
	 * after it was not, and later windows stop before it. */
	__u64 pend = (a + 4096) & ~4095ull;

	len = 4096 - (__u32)(a & 4095);
	barrier_var(len);
	s->cnt.read_fails++;
	s->win_lo = a;
	if (len > sizeof(s->win) || bpf_probe_read_user(s->win, len, (void *)a))
		return -1;
	if (pend < hi)
		s->hole[s->hole_next++ & (MTB_UHOLES - 1)] = pend;
	s->win_n = len / 8;
	*v = s->win[0];
	return 0;
}

/* One step of the binary search of table B->tab for the last row at or
 * below B->off, in [B->lo, B->hi). */
static long bs_step(__u32 i, void *ctx)
{
	__u32 zero = 0;
	struct mtb_uscratch *s = bpf_map_lookup_elem(&uscratch, &zero);

	if (!s)
		return 1;
	struct bsearch *b = &s->bs;

	if (b->lo >= b->hi)
		return 1;
	void *rows = bpf_map_lookup_elem(&utabs, &b->tab);
	__u32 mid = b->lo + (b->hi - b->lo) / 2;
	struct mtb_urow *m = rows ? bpf_map_lookup_elem(rows, &mid) : NULL;

	if (!m) {
		b->fail = 1;
		return 1;
	}
	if (m->pc <= b->off)
		b->lo = mid + 1;
	else
		b->hi = mid;
	return 0;
}

/* The file mapping of process U at address Q: from the mapping cache, else
 * from the kernel (bpf_find_vma, which gives up when another thread holds
 * the address space's lock: mmap, munmap, thread stacks), remembered for
 * Q's granule.  1 with *V, 0 if not known now. */
static __always_inline int mapping_of(struct uwalk *u, __u64 q, struct uvma *v)
{
	struct mtb_vkey k = { .gran = q >> MTB_VGRAN_SHIFT, .tgid = u->tgid, .mm = u->mm };
	struct mtb_vset *set = bpf_map_lookup_elem(&uvmas, &k);

	if (set) {
		for (int i = 0; i < MTB_VSET; i++) {
			struct mtb_vent *e = &set->e[i];

			if (q >= e->start && q < e->end) {
				v->start = e->start;
				v->end = e->end;
				v->pgoff = e->pgoff;
				v->dev = e->dev;
				v->ino = e->ino;
				v->file = 1;
				return 1;
			}
		}
	}
	if (bpf_find_vma(bpf_get_current_task_btf(), q, vma_cb, v, 0) || !v->file)
		return 0;
	if (!set) {
		struct mtb_vset zero = {};

		bpf_map_update_elem(&uvmas, &k, &zero, BPF_NOEXIST);
		set = bpf_map_lookup_elem(&uvmas, &k);
	}
	if (set) {
		/* A granule holds few mappings: the first free entry, else by
		 * address. */
		__u32 at = (__u32)(q >> 12) & (MTB_VSET - 1);

		for (int i = 0; i < MTB_VSET; i++)
			if (!set->e[i].end) {
				at = i;
				break;
			}
		struct mtb_vent *e = &set->e[at & (MTB_VSET - 1)];

		e->end = 0; /* (a reader meanwhile sees an empty entry) */
		e->start = v->start;
		e->pgoff = v->pgoff;
		e->dev = v->dev;
		e->ino = v->ino;
		e->end = v->end;
	}
	return 1;
}

/* The row covering return address PC (the call is at PC - 1) in process
 * U->tgid: 1 with *OUT (kind 0: the object has no rule there), 0 when its
 * object has no table (not remembered: the loader may load it soon). */
static __always_inline int find_rule(struct uwalk *u, __u64 pc, struct mtb_urow *out)
{
	__u64 q = pc - 1;
	__u32 slot = (__u32)(((pc ^ ((__u64)u->tgid << 32 | u->mm)) * 0x9e3779b97f4a7c15ull) >> 48) &
		     (MTB_URCACHE_SLOTS - 1);
	struct mtb_ucache *c = bpf_map_lookup_elem(&urcache, &slot);

	if (c && c->pc == pc && c->tgid == u->tgid && c->mm == u->mm) {
		struct mtb_urow r = c->row;

		if (c->check == ucache_check(pc, u->tgid, u->mm, &r)) {
			*out = r;
			return 1;
		}
	}
	if (q < u->vstart || q >= u->vend) {
		struct uvma v = {};

		u->vhave = 0;
		u->vstart = u->vend = 0;
		if (!mapping_of(u, q, &v))
			return 0;
		u->vstart = v.start;
		u->vend = v.end;
		u->vdelta = (v.pgoff << 12) - v.start;

		struct mtb_utab_key tk = { .dev = v.dev, .ino = v.ino };
		struct mtb_utab *t = bpf_map_lookup_elem(&utab_ids, &tk);

		if (t) {
			u->vhave = 1;
			u->vtab = t->id;
			u->vnrows = t->nrows;
		}
	}
	if (!u->vhave)
		return 0;
	void *rows = bpf_map_lookup_elem(&utabs, &u->vtab);

	if (!rows)
		return 0;
	__u64 off = q + u->vdelta;
	/* The last row at or below OFF (tables have under 2^24 rows); one
	 * bpf_loop step per halving, which the verifier looks at once. */
	__u32 zero = 0;
	struct mtb_uscratch *s = bpf_map_lookup_elem(&uscratch, &zero);

	if (!s)
		return 0;
	s->cnt.rule_miss++;
	s->bs.tab = u->vtab;
	s->bs.lo = 0;
	s->bs.hi = u->vnrows;
	s->bs.off = off;
	s->bs.fail = 0;
	bpf_loop(24, bs_step, NULL, 0);
	if (s->bs.fail)
		return 0;
	__builtin_memset(out, 0, sizeof(*out));
	__u32 found = s->bs.lo;

	if (found > 0 && off >> 32 == 0) {
		__u32 at = found - 1;
		struct mtb_urow *m = bpf_map_lookup_elem(rows, &at);

		if (m)
			*out = *m;
	}
	if (c) {
		c->pc = pc;
		c->tgid = u->tgid;
		c->mm = u->mm;
		c->row = *out;
		c->check = ucache_check(pc, u->tgid, u->mm, out);
	}
	return 1;
}

static __always_inline void uw_trouble(struct uwalk *u, __u32 why, __u32 flag)
{
	if (!u->why)
		u->why = why;
	u->flags |= flag;
}

/* One frame: records U->pc, then finds its caller's pc, sp and bp.
 * Returns 1 to stop. */
/* The return address in stack slot SLOT, read as RA: a uretprobe (ours,
 * on the allocator the signal interrupted) replaces it with its trampoline
 * until the function returns; the kernel keeps the one it replaced, by
 * slot, in the thread's return instances.  Only past a signal frame: at
 * our own return probes, no function the walk goes through is inside an
 * allocator call. */
static __noinline __u64 uw_hijacked(__u64 slot, __u64 ra)
{
	if (!bpf_core_field_exists(struct task_struct___mt, utask))
		return ra;
	struct task_struct___mt *task = (void *)bpf_get_current_task();
	struct return_instance___mt *ri = BPF_CORE_READ(task, utask, return_instances);

	for (int k = 0; k < 8 && ri; k++) {
		if (BPF_CORE_READ(ri, stack) == slot)
			return BPF_CORE_READ(ri, orig_ret_vaddr);
		ri = BPF_CORE_READ(ri, next);
	}
	return ra;
}

#if defined(__TARGET_ARCH_x86)
/* The rule at PC if it is in the kernel's uretprobe trampoline (Linux
 * 6.11: the first slot of the [uprobes] page, which a function with a
 * return probe returns into): push %rax; push %rcx; push %r11; mov
 * $__NR_uretprobe, %rax; syscall; pop %r11; pop %rcx; ret.  The syscall
 * leaves the real return address where %rax was pushed, and a signal
 * that was pending during it (our return probe's program ran in it) is
 * taken right after it: interrupted at the pops or the ret, the frame is
 * at %rsp + 24, 16, 8.  1 with *R, 0 if PC is not there. */
static __noinline int uw_tramp_rule(__u64 pc, struct mtb_urow *r)
{
	__u64 code[3] = {}, at = pc & 4095;

	if (!r || (at != 0xd && at != 0xf && at != 0x10))
		return 0;
	/* 50 51 41 53 48 c7 c0 4f 01 00 00 0f 05 41 5b 59 c3 */
	if (bpf_probe_read_user(code, 17, (void *)(pc & ~4095ull)) || code[0] != 0x4fc0c74853415150ull ||
	    code[1] != 0x595b41050f000001ull || (code[2] & 0xff) != 0xc3)
		return 0;
	r->pc = 0;
	r->kind = MTB_UK_RSP;
	r->off = at == 0xd ? 24 : at == 0xf ? 16 : 8;
	r->bhow = MTB_UK_B_SAME;
	r->boff = 0;
	return 1;
}

/* Offsets in the x86-64 kernel's signal frame (struct rt_sigframe, after
 * its return address): the ucontext's saved %rbp, %rsp and %rip
 * (uc_mcontext.gregs[REG_RBP], [REG_RSP], [REG_RIP]). */
#define UC_RBP 120
#define UC_RSP 160
#define UC_RIP 168

/* A frame at __restore_rt, the signal trampoline (its FDE is marked as a
 * signal frame): a handler returns into it, with %rsp at the ucontext the
 * kernel saved the interrupted registers in.  The next frame is the
 * interrupted one, at the exact instruction.  Checked against the
 * trampoline's code (mov $15, %rax; syscall: rt_sigreturn), as the shim's
 * unwinder does.  Returns 1 to stop. */
static __noinline long uw_signal(struct mtb_uscratch *s, struct uwalk *u)
{
	__u64 code[2] = {}, sp, nsp, npc, nbp;

	if (!s || !u)
		return 1;
	sp = u->sp;
	/* 48 c7 c0 0f 00 00 00 0f 05 */
	if (bpf_probe_read_user(code, 9, (void *)u->pc) || code[0] != 0x0f0000000fc0c748ull ||
	    (code[1] & 0xff) != 0x05)
		goto lost;
	if (stack_word(s, sp + UC_RSP, &nsp) || stack_word(s, sp + UC_RIP, &npc) ||
	    stack_word(s, sp + UC_RBP, &nbp)) {
		uw_trouble(u, MTB_ST_UW_FAULT, MTB_USTACK_CUT);
		return 1;
	}
	/* Interrupted on the same stack, above the frame (a handler on an
	 * alternate stack comes from another: cut there). */
	if (nsp <= sp || (nsp & 7) || nsp - sp >= MTB_FRAME_REACH * 64 || npc < 4096)
		goto lost;
	u->pc = npc;
	u->sp = nsp;
	u->bp = nbp;
	u->exact = 1;
	u->sig = 1;
	u->top = sp + UC_RIP + 8;
	return 0;
lost:
	uw_trouble(u, MTB_ST_UW_LOST_FRAME, MTB_USTACK_CUT);
	return 1;
}
#endif

struct vm_area_struct___mtf {
	unsigned long vm_flags;
} __attribute__((preserve_access_index));

#define MTB_VM_EXEC 0x4 /* include/linux/mm.h */

static long exec_cb(void *task, struct vm_area_struct___mtf *vma, __u64 *flags)
{
	*flags = BPF_CORE_READ(vma, vm_flags);
	return 0;
}

/* Whether RA, a return address read where a frame pointer would have its
 * frame's, can be one: not in the thread's stack [LO, HI) (known or 0),
 * and in an executable mapping when the kernel can tell.  The guess reads
 * whatever the code keeps there: libffi's ffi_call_unix64 keeps a stack
 * address (python3's ctypes had a frame "libffi+0x6f79 < 0x7fff...").
 * Only for frames without a rule: one bpf_find_vma each. */
static __noinline int uw_code_addr(__u64 lo, __u64 hi, __u64 ra)
{
	__u64 flags = 0;

	if (ra >= lo && ra < hi)
		return 0;
	long err = bpf_find_vma(bpf_get_current_task_btf(), ra, exec_cb, &flags, 0);

	if (err == -16 /* EBUSY: another thread holds the lock; cannot tell */)
		return 1;
	return !err && (flags & MTB_VM_EXEC);
}

static __always_inline long uw_frame(struct mtb_uscratch *s)
{
	struct uwalk *u = &s->w;
	__u32 n = u->n;

	if (n >= MTB_MAX_FRAMES) {
		/* a frame more than the stack holds */
		uw_trouble(u, MTB_ST_UW_DEPTH, MTB_USTACK_TRUNCATED);
		return 1;
	}
	s->st.pc[n] = u->pc;
	u->n = n + 1;
	u->hash = (u->hash ^ u->pc) * 0x9e3779b97f4a7c15ull;
	u->hash ^= u->hash >> 29;

	struct mtb_urow r;
	__u64 sp = u->sp, bp = u->bp, cfa = 0, ra = 0;

	u->guess = 0;

	/* (after a signal frame, the rule of the interrupted instruction
	 * itself, not of the one before it) */
	int have = find_rule(u, u->pc + u->exact, &r);

#if defined(__TARGET_ARCH_x86)
	if (!have && u->exact)
		have = uw_tramp_rule(u->pc, &r);
#endif

	if (!have) {
		uw_trouble(u, MTB_ST_UW_NO_TABLE, 0);
		r.kind = 0;
	}
	if (r.kind == 0) {
		/* No rule: a frame pointer, if %rbp looks like one.  Else, in
		 * an object with a table, code without CFI (_dl_start_user, a
		 * hand-written _start): the end, as the shim's unwinder takes
		 * it. */
		if (bp < sp || bp - sp >= MTB_FRAME_REACH || (bp & 7)) {
			if (!have)
				uw_trouble(u, MTB_ST_UW_LOST_FRAME, MTB_USTACK_CUT);
			return 1;
		}
		r.kind = MTB_UK_RBP;
		r.off = 16;
		r.bhow = MTB_UK_B_AT_CFA;
		r.boff = -16;
		u->guess = 1;
	}
	switch (r.kind) {
	case MTB_UK_RSP:
	case MTB_UK_PLT:
		cfa = sp + r.off;
		break;
	case MTB_UK_RBP:
		cfa = bp + r.off;
		break;
	case MTB_UK_DEREF_RBP:
		if (stack_word(s, bp + r.off, &cfa)) {
			uw_trouble(u, MTB_ST_UW_FAULT, MTB_USTACK_CUT);
			return 1;
		}
		break;
#if defined(__TARGET_ARCH_x86)
	case MTB_UK_SIGNAL:
		return uw_signal(s, u);
#endif
	default:
		return 1; /* the outermost frame (or CFI we do not follow) */
	}
	if (cfa <= sp || (cfa & 7) || cfa - sp >= MTB_FRAME_REACH * 64) {
		uw_trouble(u, MTB_ST_UW_LOST_FRAME, MTB_USTACK_CUT);
		return 1;
	}
	u->top = cfa; /* (each frame's is above the last's) */
	if (stack_word(s, cfa - 8, &ra)) {
		uw_trouble(u, MTB_ST_UW_FAULT, MTB_USTACK_CUT);
		return 1;
	}
	if (u->sig)
		ra = uw_hijacked(cfa - 8, ra);
	switch (r.bhow) {
	case MTB_UK_B_SAME:
		break;
	case MTB_UK_B_AT_CFA:
		if (stack_word(s, cfa + r.boff, &bp))
			bp = 0;
		break;
	case MTB_UK_B_AT_RBP:
		if (stack_word(s, bp + r.boff, &bp))
			bp = 0;
		break;
	default:
		bp = 0;
		break;
	}
	if (ra < 4096)
		return 1; /* the end: a zero return address */
	if (u->guess && !uw_code_addr(s->stk_lo, s->stk_hi, ra)) {
		/* %rbp was no frame pointer: a frame lost, the stack cut */
		uw_trouble(u, MTB_ST_UW_LOST_FRAME, MTB_USTACK_CUT);
		return 1;
	}
	u->pc = ra;
	u->sp = cfa;
	u->bp = bp;
	u->exact = 0;
	return 0;
}

/* bpf_loop's callback: UW_PER_STEP frames a call.  Four a call saved
 * ~80 ns a stack of sqlite3's (17 frames), but the verifier, which looks
 * at each copy, took 80 ms more to load the programs: more than the 616k
 * stacks of sqlite3's workload saved. */
static long uw_step(__u32 i, void *ctx)
{
	__u32 zero = 0;
	struct mtb_uscratch *s = bpf_map_lookup_elem(&uscratch, &zero);

	if (!s)
		return 1;
	for (int k = 0; k < UW_PER_STEP; k++)
		if (uw_frame(s))
			return 1;
	return 0;
}

/* The stack of a frame at PC (a return address), SP, BP of thread TID (its
 * call slot C, which keeps where its stack is), unwound with the
 * tables into the ustacks map: its key (MTB_KSTACK_DWARF set), or 0 when it
 * could not be kept (counted; the caller falls back on frame pointers).
 * QUIET: a mapping call's stack, whose troubles are no lost allocation
 * events, and are not counted. */
__noinline __u64 dwarf_stack(struct mtb_call *c, __u64 pc, __u64 sp, __u64 bp, int quiet)
{
	__u32 zero = 0;
	struct mtb_uscratch *s = bpf_map_lookup_elem(&uscratch, &zero);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	if (!s || !c)
		return 0;
	if (__sync_val_compare_and_swap(&s->busy, 0, 1) != 0) {
		if (!quiet)
			count(tgid, MTB_ST_UW_BUSY, 1);
		return 0;
	}
	struct uwalk *u = &s->w;
	struct task_struct___mt *task = (void *)bpf_get_current_task();

	__builtin_memset(u, 0, sizeof(*u));
	u->pc = pc;
	u->sp = sp;
	u->bp = bp;
	u->tgid = tgid;
	u->hash = 0x2545f4914f6cdd1dull;
	u->mm = (__u32)((__u64)BPF_CORE_READ(task, mm) >> 6);
	s->win_n = 0; /* another process's, or this one's stack long ago */
	if (c->stk_tid != tid || c->stk_mm != u->mm || sp < c->stk_lo || sp >= c->stk_hi) {
		/* Once per thread (its slot keeps it): the kernel gives up
		 * when the address space's lock is held. */
		struct uvma v = {};

		s->cnt.stk_vma++;
		c->stk_hi = 0;
		c->stk_reach = 0;
		if (!bpf_find_vma(bpf_get_current_task_btf(), sp, vma_cb, &v, 0) && v.end > sp) {
			c->stk_lo = v.start;
			c->stk_hi = v.end;
			c->stk_tid = tid;
			c->stk_mm = u->mm;
		}
	}
	s->stk_lo = c->stk_lo;
	s->stk_hi = c->stk_hi;
	s->reach = c->stk_reach;
	if (s->hole_tgid != tgid || s->hole_mm != u->mm) {
		__builtin_memset(s->hole, 0, sizeof(s->hole));
		s->hole_tgid = tgid;
		s->hole_mm = u->mm;
	}
	bpf_loop((MTB_MAX_FRAMES + UW_PER_STEP) / UW_PER_STEP, uw_step, NULL, 0);
	if (c->stk_tid == tid)
		c->stk_reach = u->top;
	s->cnt.stacks++;
	s->cnt.frames += u->n;
	s->st.n = u->n;
	s->st.flags = u->flags;
	if (u->why && !quiet)
		count(tgid, u->why, 1);

	__u64 key = ((u->hash ^ u->flags) * 0x9e3779b97f4a7c15ull) >> 16;
	__u64 ret = MTB_KSTACK_DWARF | key;

	__u64 *seen = &s->seen[(__u32)key & (MTB_USEEN - 1)];

	/* A stack this CPU saw stored needs no lookup (the loader deletes
	 * stacks only once it has read them: a later event naming one finds
	 * it in the loader's own table). */
	if (*seen != key) {
		long err = 1;

		if (!bpf_map_lookup_elem(&ustacks, &key))
			err = bpf_map_update_elem(&ustacks, &key, &s->st, BPF_NOEXIST);
		if (!err) {
			__u64 *ins = bpf_map_lookup_elem(&ustk_ins, &zero);

			if (ins)
				(*ins)++;
		}
		if (err < 0 && !bpf_map_lookup_elem(&ustacks, &key)) {
			if (!quiet)
				count(tgid, MTB_ST_UW_MAP_FULL, 1);
			ret = 0;
		} else {
			*seen = key;
		}
	}
	barrier();
	s->busy = 0; /* after the copy above */
	return ret;
}
#endif /* MEMTRACE_UNWIND_BPF_H */
