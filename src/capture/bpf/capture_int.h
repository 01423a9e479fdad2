/*
 * capture_int.h - what the files of the BPF capture layer share.  Calls run
 * one way: memtrace.c (loading, life cycle, events) -> attach.c (processes, objects,
 * probes) -> maps.c (the BPF maps: sites, losses, dropping a process) ->
 * stacks.c (stacks interned by content); attach.c -> elf.c (symbols, where
 * each probe goes) -> place.c (the instructions at a function's entry);
 * attach.c -> unwind.c (each object's unwind table, for the kernel's
 * unwinder).
 * Not part of the API: tests include it to check pieces.
 */
#ifndef MEMTRACE_BPF_CAPTURE_INT_H
#define MEMTRACE_BPF_CAPTURE_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "base/ptrmap.h"
#include "capture.h"
#include "extsyms.h"
#include "memtrace.h"

/* ---- elf.c ------------------------------------------------------------ */

/* The symbols probed: the allocator functions, by function id (MTB_FN_*),
 * then the variants of C++'s operator new (new, new[]; nothrow, aligned),
 * whose probes are mt_new's (function id MTB_FN_NEW).  operator delete is
 * not among them: it frees with free(). */
#define MTB_SYM_NEW MTB_FN_COUNT
/* then the allocator libraries' own entry points (extsyms.h) */
#define MTB_SYM_EXT (MTB_FN_COUNT + 8)
#define MTB_SYM_COUNT (MTB_SYM_EXT + MTB_SYM_EXT_COUNT)
extern const char *const mtb_sym_name[MTB_SYM_COUNT];
/* The function id and argument layout (MTB_LA_*) of each extsyms.h entry. */
struct mtb_sym_ext {
	int fn, layout;
};
extern const struct mtb_sym_ext mtb_sym_ext[MTB_SYM_EXT_COUNT];
static inline int mtb_sym_fn(int sym)
{
	return sym < MTB_SYM_NEW ? sym :
	       sym < MTB_SYM_EXT ? MTB_FN_NEW :
				   mtb_sym_ext[sym - MTB_SYM_EXT].fn;
}
/* Where the arguments of SYM's entry are (MTB_LA_*): an extsyms.h entry
 * says where it differs from the function it is reported as; the rest are
 * where that function has them. */
static inline int mtb_sym_layout(int sym)
{
	static const unsigned char by_fn[MTB_FN_FREE] = {
#define MTB_FN_LAYOUT(id, name, nargs, layout) [MTB_FN_##id] = MTB_LA_##layout,
		MT_ALLOC_FNS(MTB_FN_LAYOUT)
#undef MTB_FN_LAYOUT
	};
	int fn = mtb_sym_fn(sym);
	int own = sym < MTB_SYM_EXT ? 0 : mtb_sym_ext[sym - MTB_SYM_EXT].layout;
	return own ? own : fn >= 0 && fn < MTB_FN_FREE ? by_fn[fn] : 0;
}

/* The symbols an ELF object defines, and where to probe each.  Operator
 * new is probed where the allocator it calls is somebody else's: in objects
 * that do not define malloc (libstdc++), and in programs (static ones link
 * libstdc++ and libc in).  An allocator library's own new (jemalloc,
 * tcmalloc, mimalloc) allocates without calling its malloc: its calls are
 * not seen. */
struct mtb_elf_syms {
	int found[MTB_SYM_COUNT];
	uint64_t vaddr[MTB_SYM_COUNT]; /* symbol value */
	uint64_t size[MTB_SYM_COUNT];
	uint64_t offset[MTB_SYM_COUNT];	  /* file offset of the symbol */
	uint64_t probe[MTB_SYM_COUNT];	  /* file offset of the probe */
	uint8_t argreg[MTB_SYM_COUNT][3]; /* where the arguments are there */
	int moved[MTB_SYM_COUNT];	  /* argreg is not the calling convention's */
	/* operator new: the probe (at the entry) is on endbr64 or push %rbp,
	 * where the kernel's stack walk adds the return address */
	int entry_frame[MTB_SYM_COUNT];
	/* Another symbol at the same address (glibc's memalign is
	 * aligned_alloc): probed once, as the lower index; -1 if none. */
	int alias_of[MTB_SYM_COUNT];
	char why[MTB_SYM_COUNT][48]; /* how the probe place was chosen */
	uint64_t text_lo, text_hi;   /* executable segments (link-time addresses) */
	int executable;		     /* a program (ET_EXEC, or defines main) */
	int memtrace_shim;	     /* libmemtrace-preload.so (exports memtrace_marker) */
};

/* Reads the dynamic symbols (and .symtab when there is one, for static
 * executables) of the ELF file open on FD.  Returns 1 if it defines malloc,
 * free or an operator new to probe (with probe places filled in), 0 if not
 * (or not an ELF object of this machine), -1 on a read error. */
int mtb_elf_analyze(int fd, struct mtb_elf_syms *out);

/* What a dynamically linked program needs: DT_NEEDED, DT_RUNPATH, DT_RPATH,
 * and whether it has an interpreter (PT_INTERP).  0, or -1 if FD is not an
 * ELF object of this machine. */
#define MTB_MAX_NEEDED 64
struct mtb_elf_deps {
	int dynamic;
	unsigned nneeded;
	char needed[MTB_MAX_NEEDED][128];
	char runpath[1024], rpath[1024];
};
int mtb_elf_deps(int fd, struct mtb_elf_deps *out);

/* ---- place.c ---------------------------------------------------------- */

/* One x86-64 instruction, as far as placing a probe needs. */
struct mtb_x86_insn {
	unsigned len;
	unsigned emulated : 1;	/* the kernel emulates it at a uprobe */
	unsigned jz : 1;	/* je/jz */
	unsigned stop : 1;	/* changes %rsp or writes memory through it */
	int test_reg;		/* `test %r,%r` of one register: r; else -1 */
	uint16_t writes;	/* general registers it writes (x86 numbering) */
	int copy_dst, copy_src; /* a 64-bit register-to-register move; else -1 */
	const char *name;
};
/* Decodes the instruction at P (N bytes there): its length, or 0 if it is
 * not one of the forms this decoder knows completely. */
unsigned mtb_x86_decode(const uint8_t *p, size_t n, struct mtb_x86_insn *in);

/* A place for a function's probe: the offset from its entry, and the
 * registers that hold its first three arguments there. */
#define MTB_PLACE_MAX_STEPS 24
struct mtb_place {
	unsigned off;
	uint8_t argreg[3];
	/* instruction starts after the entry, up to and including OFF: where a
	 * jump from elsewhere must not land */
	unsigned nbounds;
	uint16_t bounds[MTB_PLACE_MAX_STEPS];
	char why[48];
};
/* The possible places for a function of NARGS arguments whose code is
 * CODE[0..N), best first, the entry last; NULL_ARG_EXITS: a NULL first
 * argument makes the call do nothing (free).  Returns how many (<= MAX). */
unsigned mtb_probe_places(const uint8_t *code, size_t n, unsigned nargs, int null_arg_exits,
			  struct mtb_place *out, unsigned max);

/* ---- the handle ------------------------------------------------------- */

struct bpf_link;
struct bpf_program;
struct memtrace_bpf;
struct ring_buffer;

/* An ELF object that was looked at, allocator or not (device and inode as
 * /proc/PID/maps gives them). */
struct mtb_object {
	uint64_t dev, ino;
	char *path;    /* as the process names it */
	int allocator; /* defines malloc, free or an operator new to probe */
	struct mtb_elf_syms syms;
};

/* One link: a libbpf uprobe link (one probe), or the file descriptor of a
 * uprobe_multi link (every probe of one program on one object). */
struct mtb_link {
	struct bpf_link *l;
	int fd;
};

/* The probes of one object for one process (pid -1: every process). */
struct mtb_attach {
	uint32_t object;
	pid_t pid;
	unsigned nentry, nret;
	struct mtb_link entry[MTB_SYM_COUNT], ret[MTB_SYM_COUNT];
};

/* A process traced by pid. */
struct mtb_proc {
	pid_t pid;
	uint64_t start;	  /* start time (/proc/PID/stat), to notice pid reuse */
	int exited;	  /* its probes are gone; figures kept */
	int exec_pending; /* trace_exec: not exec'd yet when last looked at */
	int new_code;	  /* mapped a file executable since (mtb_note_new_code) */
	/* seen to exit (mt_proc_exit's record: mtb_note_exit): its exit code
	 * >= 0 or -signal, and when (CLOCK_MONOTONIC ns) */
	int has_status;
	int64_t status;
	uint64_t exit_ts;
};

/* One distinct stack, interned in user space: id = index + 1. */
struct mtb_stack {
	uint64_t hash;
	unsigned n;
	uint64_t *frames;
};

struct mt_bpf {
	struct memtrace_bpf *skel;
	struct mt_bpf_opts o;
	struct bpf_program *p_entry, *p_return, *p_free, *p_new;
	/* the mapping calls' tracepoints (memtrace.bpf.c), attached at open */
	struct bpf_link *map_links[8];
	/* uprobe_multi links (Linux 6.6): one per program and object, whose
	 * removal waits for one grace period, not one per probe */
	int multi;
	int fd_traced, fd_excluded, fd_calls, fd_live, fd_sites, fd_stacks, fd_stats, fd_objinfo;
	/* the unwinder (unwind.c): on unless MEMTRACE_BPF_UNWIND=fp; its
	 * tables, and the stacks it unwinds */
	int dwarf;
	int fd_utabs, fd_utab_ids, fd_ustacks, fd_ustk_ins;
	uint32_t nutabs;
	uint64_t utab_rows;
	uint32_t utab_refused;	       /* objects over the row limits (unwind.c) */
	struct mt_ptrmap utab_charged; /* pid + 1 -> rows of the tables its objects made */
	/* tables made, not yet in the maps (mtb_unwind_flush) */
	struct mtb_upend {
		int fd;
		struct mtb_utab_key k;
		struct mtb_utab t;
	} * upend;
	size_t nupend, capupend;
	/* the calls array, mapped: one slot per thread (memtrace.h) */
	struct mtb_call *calls;
	uint32_t nslots;
	size_t calls_bytes;
	struct ring_buffer *rb;
	pid_t self;
	int all;	     /* mt_bpf_trace_all */
	unsigned max_frames; /* frames per stack map entry */

	/* mt_bpf_poll's callback while it runs */
	mt_bpf_event_fn cb;
	void *cb_ctx;
	int delivered;
	int wake_fd; /* mt_bpf_set_wake_fd, or -1 */
	/* traced processes' exits (memtrace.bpf.c, mt_proc_exit; their
	 * statuses are kept in procs) */
	struct bpf_link *exit_link;
	/* the children they start (mt_proc_fork; events mode) */
	struct bpf_link *fork_link;

	struct mtb_object *objs;
	size_t nobjs, capobjs;
	struct mt_ptrmap objidx; /* hash(dev, ino) | 1 -> index + 1 */

	struct mtb_attach *atts;
	size_t natts, capatts;

	struct mtb_proc *procs;
	size_t nprocs, capprocs;
	int new_code; /* some process's new_code is set */

	/* stacks: kernel stack id -> our id; caller-only keys -> our id */
	uint32_t *kid;
	size_t nkid;
	struct mtb_stack *stacks;
	size_t nstacks, capstacks;
	struct mt_ptrmap stkidx;  /* content hash (odd) -> id */
	struct mt_ptrmap callkey; /* caller-only kernel key (flagged) -> id */
	/* stacks the programs put in ustacks (all CPUs' ustk_ins) when it was
	 * last emptied */
	uint64_t ustk_pruned;
	uint64_t nrecs; /* records read from the ring */

	/* missed returns noticed in user space (threads that died inside a
	 * call), by tgid */
	struct mtb_missed {
		uint32_t tgid;
		uint64_t n;
	} * missed;
	size_t nmissed, capmissed;

	/* lean mode (lean.c): the blocks each process has, by address */
	struct mtb_leanproc {
		uint32_t pid;
		struct mt_ptrmap live;
	} * lean;
	size_t nlean, caplean, lean_last;
};

/* ---- memtrace.c ------------------------------------------------------- */

/* The checks mt_bpf_open makes before loading, against the tree at ROOT
 * ("/" normally; tests point it elsewhere): privileges, kernel BTF, uprobe
 * PMU, kernel version.  0 if all is well, else -1 with one line in ERR. */
int mtb_check_support(const char *root, char *err, size_t errlen);

/* The one line mt_bpf_open gives for a failed load, out of libbpf's log. */
void mtb_load_error(const char *log, int errnum, char *err, size_t errlen);

/* ---- attach.c --------------------------------------------------------- */

void mtb_objects_init(struct mt_bpf *b);
void mtb_free_objects(struct mt_bpf *b);
/* Detaches every probe at once (closing: no figure is read afterwards). */
void mtb_detach_all(struct mt_bpf *b);
/* attach.c: traced process PID mapped a file executable (a dlopen): the
 * next mt_bpf_rescan_new_code reads its table. */
void mtb_note_new_code(struct mt_bpf *b, pid_t pid);
void mtb_note_exit(struct mt_bpf *b, pid_t pid, int64_t status, uint64_t ts);

/* ---- lean.c ----------------------------------------------------------- */

/* Whether the ring buffer's event R goes on (0: an internal free of a block
 * the process was not seen to allocate); notes the blocks it makes and
 * frees. */
int mtb_lean_pass(struct mt_bpf *b, const struct mtb_rec *r);
/* Forgets the blocks of process PID (traced anew). */
void mtb_lean_forget(struct mt_bpf *b, uint32_t pid);
void mtb_lean_free(struct mt_bpf *b);

/* ---- maps.c ----------------------------------------------------------- */

/* A walk over a hash map by batches; FN returns nonzero to stop.  0, or -1
 * with errno. */
int mtb_map_walk(int fd, size_t ksz, size_t vsz,
		 int (*fn)(void *ctx, const void *key, const void *val), void *ctx);
/* Drops every entry of process TGID from the maps (not its stats). */
void mtb_drop_process(struct mt_bpf *b, uint32_t tgid);
/* The same for the N processes TGID[], in one walk of each map. */
void mtb_drop_processes(struct mt_bpf *b, const uint32_t *tgid, size_t n);
/* Fresh counters for a process traced anew. */
void mtb_reset_stats(struct mt_bpf *b, uint32_t tgid);
/* Frees the call slots of threads that no longer exist: their calls are
 * missed returns. */
void mtb_reap_dead_threads(struct mt_bpf *b);
void mtb_set_trace_all(struct mt_bpf *b, int on);

/* ---- unwind.c --------------------------------------------------------- */

/* Builds the unwind table of the ELF object open on FD, (DEV, INO) as
 * stat gives them, named PATH, and loads it for the kernel's unwinder;
 * nothing if it has no .eh_frame (or the unwinder is off). */
void mtb_unwind_add(struct mt_bpf *b, int fd, uint64_t dev, uint64_t ino, const char *path,
		    pid_t pid);
/* Whether a table of N rows fits: ALL rows made so far, PROC of them
 * charged to the process that mapped the object first.  (unwind.c) */
int mtb_unwind_fits(uint64_t n, uint64_t all, uint64_t proc);
size_t mtb_unwind_rows(int fd, struct mtb_urow **rows);
/* Makes the tables added so far visible to the kernel's unwinder (they are
 * put in its maps together: see unwind.c). */
void mtb_unwind_flush(struct mt_bpf *b);

/* ---- stacks.c --------------------------------------------------------- */

/* Kernel stack ids below NKID are remembered in an array. */
void mtb_stacks_init(struct mt_bpf *b, size_t nkid);
void mtb_stacks_prune(struct mt_bpf *b);
void mtb_stacks_check(struct mt_bpf *b);
void mtb_stacks_free(struct mt_bpf *b);
/* Our id for a kernel stack key (a stack map id, or MTB_KSTACK_CALLER or
 * MTB_KSTACK_SKIP1 flagged); CALLER is the return address when known (0
 * otherwise).  0 if the stack is not known yet. */
uint64_t mtb_stack_uid(struct mt_bpf *b, uint64_t kstack, uint64_t caller);

#endif
