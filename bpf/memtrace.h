/*
 * memtrace.h - what the BPF programs (memtrace.bpf.c, unwind.bpf.h) and
 * their loader (src/capture/bpf/: memtrace.c, which loads them, and the
 * files it calls) share: map keys and values, the ring buffer record,
 * the function ids carried in each probe's BPF cookie, and the counters.
 *
 * Compiled twice: by clang -target bpf after vmlinux.h, and by the host
 * compiler after <linux/types.h>.  Only fixed-width types, no pointers, no
 * padding left implicit, so both sides agree on every layout.
 */
#ifndef MEMTRACE_BPF_H
#define MEMTRACE_BPF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "../src/format/allocfns.h"

/* Function ids: the allocator functions of src/format/allocfns.h, numbered
 * as codec.h's enum mt_fn (the list makes both), so that a record's
 * function is the recording's; free comes after them.  C++'s operator new,
 * any variant, is an entry probe only (mt_new), which gives the allocator
 * call it makes the stack of new's caller.  The calls that tune the
 * allocator (libc's mallopt(param, value) and malloc_trim(pad)) have entry
 * and return probes like an allocation's, which put an MTB_REC_MALLOPT
 * record in the ring (events mode). */
enum mtb_fn {
#define MTB_FN_ID(id, name, nargs, layout) MTB_FN_##id,
	MT_ALLOC_FNS(MTB_FN_ID)
#undef MTB_FN_ID
	MTB_FN_FREE,
	MTB_FN_COUNT,
	MTB_FN_NEW = MTB_FN_COUNT,
	MTB_FN_MALLOPT,
	MTB_FN_MALLOC_TRIM,
};

/* A probe's BPF cookie: bits 0-7 the function id, 8-31 the allocator
 * object's index in the loader's table; with MTB_COOKIE_ARGREGS, bits
 * 32-43 say in which registers (x86-64 numbering: 0 %rax ... 7 %rdi, 8 %r8
 * ... 15 %r15) the first three arguments are at the probe, which the loader
 * may have put past the function's first instructions (src/capture/bpf/place.c).
 * Operator new's probes are at its entry; their cookies give the function's
 * size in bits 46-63 (at most MTB_COOKIE_SIZE_MAX), and MTB_COOKIE_ENTRY_FRAME
 * says that the instruction there is one where the kernel's user stack walk
 * adds the return address (endbr64 or push %rbp: is_uprobe_at_func_entry,
 * Linux 6.12). */
#define MTB_COOKIE(object, fn) ((((__u64)(object) & 0xffffff) << 8) | (fn))
#define MTB_COOKIE_FN(c) ((__u32)((c) & 0xff))
#define MTB_COOKIE_OBJECT(c) ((__u32)(((c) >> 8) & 0xffffff))
#define MTB_COOKIE_ARGREGS (1ull << 44)
#define MTB_COOKIE_REGS(r0, r1, r2) \
	(MTB_COOKIE_ARGREGS | ((__u64)(r0) << 32) | ((__u64)(r1) << 36) | ((__u64)(r2) << 40))
#define MTB_COOKIE_REG(c, i) ((__u32)(((c) >> (32 + 4 * (i))) & 15))
#define MTB_COOKIE_ENTRY_FRAME (1ull << 45)
#define MTB_COOKIE_SIZE_MAX ((1u << 18) - 1)
#define MTB_COOKIE_WITH_SIZE(n) ((__u64)((n) < MTB_COOKIE_SIZE_MAX ? (n) : MTB_COOKIE_SIZE_MAX) << 46)
#define MTB_COOKIE_SIZE(c) ((__u32)((c) >> 46))
/* Every entry probe but new's says in bits 46-51 where its function's
 * arguments are (the loader knows each function, malloc's as well as an
 * allocator library's mi_heap_malloc(heap, size)): size is argument 0 or 1
 * (SIZE), or the product of arguments 0 and 1, or 1 and 2 (PROD); a block
 * and its new size (PTRSIZE), or a block and the product of the next two
 * (PTRPROD), from argument 0 or 1; posix_memalign's out-pointer and size
 * (PTR0SIZE2). */
#define MTB_LA_SIZE0 1
#define MTB_LA_SIZE1 2
#define MTB_LA_PROD0 3
#define MTB_LA_PROD1 4
#define MTB_LA_PTRSIZE0 5
#define MTB_LA_PTRSIZE1 6
#define MTB_LA_PTRPROD0 7
#define MTB_LA_PTRPROD1 8
#define MTB_LA_PTR0SIZE2 9
#define MTB_COOKIE_WITH_LAYOUT(l) ((__u64)(l) << 46)
#define MTB_COOKIE_LAYOUT(c) ((__u32)(((c) >> 46) & 63))

/* enum bpf_attach_type's BPF_TRACE_UPROBE_MULTI (Linux 6.6), which older
 * UAPI headers do not have. */
#define MTB_TRACE_UPROBE_MULTI 48

/* Record types of the ring buffer: the values of enum mt_rec_type. */
#define MTB_REC_ALLOC 1
#define MTB_REC_FREE 2
#define MTB_REC_REALLOC 3
/* A tuning call: fn MTB_FN_MALLOPT or MTB_FN_MALLOC_TRIM, ptr its first
 * argument (param; pad), old_ptr its second (value), size its result. */
#define MTB_REC_MALLOPT 16
/* A mapping call (struct mtb_maprec): mmap, munmap, mremap, brk. */
#define MTB_REC_MAP 17
/* A traced process's exit (struct mtb_exitrec), both modes. */
#define MTB_REC_EXIT 18

struct mtb_exitrec {
	__u8 type; /* MTB_REC_EXIT */
	__u8 pad[3];
	__u32 pid;  /* tgid */
	__s32 code; /* as wait() gives it: status << 8, or the signal (| 0x80: core) */
	__u32 pad2;
	__u64 ts;
};

/* A traced process started a child process (struct mtb_childrec; events
 * mode): the child is not traced, and the recording says so. */
#define MTB_REC_CHILD 19

struct mtb_childrec {
	__u8 type; /* MTB_REC_CHILD */
	__u8 pad[3];
	__u32 pid;   /* the parent's tgid */
	__u32 child; /* the child's tgid */
	__u32 pad2;
	__u64 ts;
};

/* The frames of one stack in the stack map.  The kernel refuses more than
 * kernel.perf_event_max_stack (127 by default); the loader lowers it to the
 * sysctl's value when that is smaller. */
#define MTB_MAX_FRAMES 127

/* A stack key with this bit set is not a stack map id: bpf_get_stackid
 * failed and the key is the immediate caller's address alone. */
#define MTB_KSTACK_CALLER (1ull << 63)
/* A stack map id taken at operator new's entry: its first frame is new's
 * own address, not a frame of the caller's; the loader drops it. */
#define MTB_KSTACK_SKIP1 (1ull << 62)

/* A stack key with this bit set is a stack of the ustacks map (the
 * in-kernel DWARF unwinder's): the other bits, a hash of its frames. */
#define MTB_KSTACK_DWARF (1ull << 61)
#define MTB_USTACK_HASH_MASK ((1ull << 48) - 1)

/* ---- DWARF unwinding in the kernel ----
 *
 * The loader (src/capture/bpf/unwind.c) compiles the .eh_frame of every
 * executable object a traced process maps (format/cfi.c, the shim's
 * compiler) into a table of rows sorted by PC, one BPF array per object
 * (utabs, an array of maps, at the table's id), found by the object's device
 * and inode (utab_ids; the device as the kernel numbers it, major << 20 |
 * minor).  PCs in a table are file offsets, so a table serves every process
 * and every address the object is mapped at: the unwinder turns a PC into
 * one with the mapping's start and file offset (bpf_find_vma), which also
 * sees objects mapped after the loader last looked.
 *
 * x86-64 rows say how to find the CFA (rsp or rbp + off, *(rbp + off)) and
 * the caller's %rbp (unchanged, at CFA + boff, at rbp + boff); the return
 * address is at CFA - 8.  AArch64 would add: CFA from sp or x29 (the same
 * two kinds, another register pair), the caller's x29 where %rbp's is, and a
 * return address rule, since at a leaf (and in a prologue before it is
 * saved) it is still in x30: a kind "RA in x30" for the first frame, else
 * "at CFA + raoff".  The row has room for it in PAD (an s8 of 8-byte
 * units); the unwinder would take x30 from pt_regs for the first frame. */
struct mtb_urow {
	__u32 pc;   /* file offset of the first byte it covers (up to the next row) */
	__s32 off;  /* CFA offset */
	__s16 boff; /* where the caller's %rbp is, per bhow */
	__u8 kind;  /* MTB_UK_*; 0: no rule here (frame pointers) */
	__u8 bhow;  /* MTB_UK_B_* */
};
/* Row kinds and %rbp rules: the values of format/cfi.h's MT_CFI_* (the
 * loader checks that at compile time). */
#define MTB_UK_NONE 0
#define MTB_UK_RSP 1
#define MTB_UK_RBP 2
#define MTB_UK_DEREF_RBP 3
#define MTB_UK_STOP 4
#define MTB_UK_SIGNAL 5
#define MTB_UK_PLT 6
#define MTB_UK_B_SAME 0
#define MTB_UK_B_AT_CFA 1
#define MTB_UK_B_AT_RBP 2
#define MTB_UK_B_UNDEF 3
#define MTB_MAX_UTABS 4096

struct mtb_utab_key {
	__u64 dev; /* kernel numbering: major << 20 | minor */
	__u64 ino;
};

struct mtb_utab {
	__u32 id; /* index in utabs */
	__u32 nrows;
};

/* A slot of the rule cache: (process, address space, PC) -> the row that
 * covers it (kind 0 where the object's table has none).  MM: bits of the
 * process's mm_struct address, so that an exec, or a pid used again, does
 * not find the rules of the previous program.  (An object unmapped and
 * another mapped at the same addresses would: dlclose then dlopen.)
 * CHECK: a hash of all the rest, 0 for an empty slot. */
struct mtb_ucache {
	__u64 pc;
	__u32 tgid;
	__u32 mm;
	struct mtb_urow row;
	__u32 check;
};

/* One stack of the ustacks map: frames leaf first, frames[0] the return
 * address of the allocator call (or of operator new's). */
#define MTB_USTACK_TRUNCATED 1 /* deeper than MTB_MAX_FRAMES: the rest is cut */
#define MTB_USTACK_CUT 2       /* stopped before the stack's end: a frame without a rule */
struct mtb_ustack {
	__u32 n;
	__u32 flags;
	__u64 pc[MTB_MAX_FRAMES];
};

/* What the unwinder did, per CPU: the first member of its scratch
 * (uscratch), which the loader sums over the CPUs for MEMTRACE_BPF_STATS. */
struct mtb_uwcount {
	__u64 stacks;     /* stacks walked */
	__u64 frames;     /* frames of them */
	__u64 reads;      /* stack windows read (bpf_probe_read_user) */
	__u64 read_fails; /* of which failed */
	__u64 rule_miss;  /* rules not in the rule cache: table searched */
	__u64 stk_vma;    /* stack mappings looked up (bpf_find_vma) */
};

/* One event of the ring buffer (events mode). */
struct mtb_rec {
	__u8 type;    /* MTB_REC_* */
	__u8 fn;      /* MTB_FN_* of the call that made the event */
	__u16 flags;  /* MTB_RF_* */
	__u32 object; /* allocator object (cookie) */
	__u32 pid;    /* tgid */
	__u32 tid;
	__u64 ts;     /* bpf_ktime_get_ns() */
	__u64 ptr;    /* new block (ALLOC, REALLOC) or freed block (FREE) */
	__u64 old_ptr;/* REALLOC: the block it replaced */
	__u64 size;   /* requested size (ALLOC, REALLOC) */
	__u64 kstack; /* stack map id, or MTB_KSTACK_CALLER | caller */
	__u64 caller; /* return address of the allocator call */
};

/* A FREE made by the allocator's own code (mtb_objinfo), sent in lean mode
 * (no live map in the kernel): the loader drops it if the block is not
 * one it knows, as the kernel does with its live map otherwise. */
#define MTB_RF_INTERNAL 1

/* One mapping call of the ring buffer (events mode, MTB_REC_MAP), from the
 * system call's tracepoints: kind and fields as codec.h's struct
 * mt_mapcall (MT_MAP_*); BY 1 when the thread was inside an allocator call
 * (its call slot held: the allocator's own mapping). */
struct mtb_maprec {
	__u8 type;    /* MTB_REC_MAP */
	__u8 kind;
	__u8 by;
	__u8 pad;
	__u32 pid;
	__u32 tid;
	__s32 fd;
	__u32 prot;
	__u32 flags;
	__s32 error;
	__u32 pad2;
	__u64 ts;
	__u64 addr, len, old_addr, old_len, offset;
	__u64 kstack;
	__u64 caller; /* the user IP: the system call's wrapper */
};

/* calls: one slot per thread, at index tid & (slots - 1), holding the
 * outermost allocator call the thread is in: written at entry, completed by
 * the return probe of the same function.  Calls an allocator makes to its
 * own entry points inside it (glibc's realloc(NULL, n) jumps to malloc,
 * realloc(p, 0) calls free, reallocarray jumps to realloc) find it there, at
 * or below its stack pointer, and are not counted twice.  An array: its
 * lookup is inlined, where the hash maps this replaces cost ~0.5 us per
 * malloc/free pair in lookups, updates and deletes.
 *
 * A slot is owned while a call is in flight: OWN is the owner's tid << 32
 * and the time it took the slot (bpf_ktime_get_ns() >> MTB_OWN_SHIFT); 0
 * is free.  Threads whose ids collide (more threads than slots, or ids
 * slots apart) take it in turn with a compare-and-swap; a call that finds
 * it held by another thread is not paired (counted as MTB_ST_PENDING_FULL).
 * The loader maps the array (BPF_F_MMAPABLE) to free the slots of threads
 * that died inside a call. */
#define MTB_OWN_SHIFT 20
#define MTB_OWN_TID(own) ((__u32)((own) >> 32))

struct mtb_call {
	__u64 own;
	__u32 tgid;
	__u32 fn;       /* MTB_FN_* */
	__u64 sp;       /* stack pointer at entry: the return address's slot */
	__u64 ts;       /* entry time */
	__u64 a0, a1;   /* arguments (see memtrace.bpf.c, mt_entry) */
	/* realloc of a known block: its live record, taken out at entry and
	 * put back if the call fails */
	__u64 old_size, old_kstack, old_ts, old_weight;
	__u32 old_valid;
	__u32 via_new;  /* made by operator new for its caller: new_kstack, new_caller */
	__u64 nested;   /* calls suppressed inside it */
	/* sampling: the call's new block is sampled; its old one was */
	__u32 sample_new, sample_old;
	/* sampling: the thread's last event recorded made a block; the next
	 * call not recorded says that one came (a free of address 0), or that
	 * block's free would seem a temporary's */
	__u32 touch, pad2;

	/* The operator new the thread is in (mt_new): owned like OWN, but never
	 * given up (new has no return probe), only refreshed by the owner's
	 * next new or taken over by another thread once MTB_NEW_TAKEOVER_NS
	 * old.  NEW_SP, NEW_RET, NEW_LO..NEW_HI: the entry of the innermost
	 * operator new function (nothrow new calls new, new[] jumps to new); an
	 * allocator call returning into it, or jumped to from it, is made for
	 * new's caller. */
	__u64 new_own;
	__u32 new_tgid;
	__u32 pad;
	__u64 new_ts;
	__u64 new_sp, new_ret, new_lo, new_hi;
	__u64 new_caller; /* return address into new's caller */
	__u64 new_kstack; /* stack key of new's caller */

	/* The thread's stack mapping [stk_lo, stk_hi), as the unwinder last
	 * found it (unwind.bpf.h, dwarf_stack), for thread stk_tid in
	 * address space stk_mm: windows of the stack are read up to its end,
	 * not past it.  Only a hint: a wrong one costs reads, not frames. */
	__u64 stk_lo, stk_hi;
	__u32 stk_tid, stk_mm;
	__u64 stk_reach; /* how far up its last walk read: windows go as far */
	/* Where the stack of new's caller is unwound from (its pc is
	 * new_caller), at the return of the allocator call new makes
	 * (new_kstack 0 until then): mt_new has no unwinder of its own, which
	 * the verifier would check once more at every start. */
	__u64 new_usp, new_ubp;
};

/* Another thread may take over a slot's operator new marker this old. */
#define MTB_NEW_TAKEOVER_NS 16000000ull

/* live: one block allocated while traced and not yet freed. */
struct mtb_live_key {
	__u64 ptr;
	__u32 tgid;
	__u32 pad;
};

struct mtb_live {
	__u64 size;
	__u64 kstack;
	__u64 ts;
	__u64 weight; /* what it adds to its site's counts: 1, or sampling, a
		       * 16.16 fixed-point estimate (mtb_sample_weight) */
};

/* Sampled recording: the distances to the next sample point are drawn from
 * this many quantiles of an exponential distribution (BPF has no floating
 * point), and a sampled block's weight, 1 / (1 - exp(-x)) for x its size
 * over the mean, is read from a table in steps of 1/256 of x up to 8
 * (beyond, 1; below 1/2, from its series). */
#define MTB_SAMPLE_GAPS 1024
#define MTB_SAMPLE_WEIGHTS 2048
#define MTB_SAMPLE_ONE (1u << 16)

/* sites: totals per (process, stack). */
struct mtb_site_key {
	__u32 tgid;
	__u32 pad;
	__u64 kstack;
};

struct mtb_site {
	__u64 allocations;
	__u64 allocated_bytes;
	__u64 live_allocations; /* outstanding */
	__u64 live_bytes;
	__u64 culled;           /* freed younger than min_age_ns */
	__u64 culled_bytes;
	__u32 object_plus1;     /* allocator object of the last call, + 1 */
	__u32 fn_plus1;         /* MTB_FN_* of the last call, + 1 */
};

/* objinfo: per allocator object (cookie index), where its code is, so
 * that free() called by the allocator itself can be told apart: glibc
 * returns a dying thread's cache of already free chunks to the arena by
 * calling free() on each (tcache_thread_shutdown).  A free of a block not in
 * the live map whose caller is in [text_lo, text_hi) is such housekeeping;
 * text_hi 0: do not tell (an executable: its own code is there too). */
#define MTB_MAX_OBJECTS 4096

struct mtb_objinfo {
	__u64 free_vaddr; /* where free's probe is (link-time address) */
	__u64 text_lo, text_hi;
	__u32 flags, pad; /* MTB_OI_* */
};

/* The object has xallocx, whose result says whether the block was resized
 * only against the block's old size: lean mode keeps its blocks in the live
 * map all the same. */
#define MTB_OI_LIVE 1

/* traced, excluded: bitmaps of tgids (PID_MAX_LIMIT, 4M, of them). */
#define MTB_PID_WORDS (4194304 / 64)
#define MTB_TRACED 1
#define MTB_EXCLUDED 2

/* Counters, per tgid in the stats map (tgid 0 takes what finds no slot). */
#define MTB_ST_RINGBUF_FULL 0   /* bpf_ringbuf_reserve failed: event dropped */
#define MTB_ST_LIVE_FULL 1      /* live map full: block not tracked */
#define MTB_ST_PENDING_FULL 2   /* thread's call slot held by another thread: call not paired */
#define MTB_ST_SITES_FULL 3     /* sites map full: totals not kept */
#define MTB_ST_STACK_ERROR 4    /* bpf_get_stackid failed: caller only */
#define MTB_ST_MISSED_RETURN 5  /* a call whose return was never seen */
#define MTB_ST_MISSED_NESTED 6  /* calls taken as nested in a call that never returned */
#define MTB_ST_UNMATCHED_FREE 7 /* a block freed that was not allocated while traced */
#define MTB_ST_INTERNAL_FREE 8  /* free() of an unknown block by the allocator itself */
/* The unwinder (unwind.bpf.h, dwarf_stack): stacks that stopped early,
 * by why.  Counted once per stack, by the first reason met. */
#define MTB_ST_UW_NO_TABLE 9    /* a frame's object has no table (yet): frame pointers tried */
#define MTB_ST_UW_FAULT 10      /* a stack word could not be read: stack cut there */
#define MTB_ST_UW_DEPTH 11      /* deeper than MTB_MAX_FRAMES: cut, marked truncated */
#define MTB_ST_UW_MAP_FULL 12   /* ustacks map full: the caller alone was kept */
#define MTB_ST_UW_BUSY 13       /* the CPU's scratch was in use: frame pointers used */
#define MTB_ST_UW_LOST_FRAME 14 /* no rule and no frame pointer: stack cut there */
#define MTB_ST_COUNT 15

struct mtb_stats {
	__u64 c[MTB_ST_COUNT];
};

/* Calls entered within this long of an allocator call that is still in
 * flight on the same thread, below it on the stack, are taken as nested
 * in it.  Longer than any allocator call; a marker older than this is one
 * whose return was missed. */
#define MTB_NEST_WINDOW_NS 1000000000ull

#endif
