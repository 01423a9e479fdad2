/*
 * unwind_x86_64.c - stack unwinder for x86_64 (see unwind.h).
 *
 * Unwinds with the .eh_frame call frame information of each loaded module,
 * so code built without frame pointers (glibc, most distribution packages)
 * gives whole stacks.  Only what the x86_64 ABI needs is tracked: the CFA
 * (rsp+off, rbp+off, or *(rbp+off) for gcc's realigned frames), the return
 * address (always at CFA-8) and rbp (the only callee-saved register a CFA
 * rule may depend on).  Signal frames are followed through the ucontext that
 * the kernel pushed, also from a handler on the sigaltstack back to the
 * interrupted stack.
 *
 * Hot path: the rule for a return address is compiled into one 64-bit word
 * (tag + rule) and kept in a global 2-way set-associative cache; one frame
 * costs a hash, one or two loads of the cache and the load of the return
 * address (plus one for rbp when the frame saved it).  Each cache word is
 * written with one atomic store and carries its own tag, so threads share the
 * cache without locks.  On a miss the rule is computed from the module's
 * .eh_frame_hdr search table and the CIE/FDE instructions.  Rules that do
 * not fit a word (CFA offset of 4 MB or more, PLT stubs, rbp saved more
 * than 488 bytes below the CFA) and PCs in no module are recomputed each
 * time.
 *
 * No memory comes from malloc: the cache and the module tables are mmap'd,
 * and no libc function that may allocate is called.  The module table is
 * kept current with dl_iterate_phdr (a recursive lock, so safe from malloc
 * during dlopen in the same thread): on each cache miss its dlpi_adds/subs
 * counters are compared, and the table is rebuilt when they moved or after
 * mt_unwind_modules_changed().  It is never called while holding a lock of
 * ours.  Callers must not hold a lock that a thread inside dlopen could
 * wait for when they call mt_unwind().
 *
 * Memory safety: every stack word read lies between the current frame's sp
 * (or its red zone, for a frame interrupted by a signal) and the next CFA,
 * and the CFA must move up and stay within 64 MB of the starting sp.  Each
 * thread also remembers a range of its stack proven readable (checked page
 * by page with process_vm_readv, which fails instead of faulting), so even a
 * wrong rule or a corrupt stack cannot make us read an unmapped or PROT_NONE
 * page.  (Residual risk: a coroutine stack unmapped and its addresses reused
 * for a smaller stack in the same thread; if process_vm_readv is forbidden,
 * e.g. by seccomp, only the CFA bounds protect the reads.)
 *
 * When unsure the unwinder stops: PC 0, PC in no module or without FDE,
 * unsupported CFI (CFA in a register other than rsp/rbp, CFA expressions
 * other than gcc's realignment and the PLT form, RA rule other than CFA-8),
 * rip undefined (outermost frame: _start, thread start), stack pointer not
 * increasing, more than 64 MB of stack, a signal frame whose interrupted sp
 * is not above it unless the handler ran on the recorded sigaltstack, a
 * stack word that is not readable.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "unwind.h"

#include "format/cfi.h"

#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_STACK_SPAN ((uintptr_t)64 << 20)
#define PAGE ((uintptr_t)4096)

/* ------------------------------------------------------------------ */
/* Compiled rules                                                     */

/* How the CFA is found and where %rbp is: format/cfi.h's rules. */
#define K_NONE MT_CFI_NONE
#define K_RSP MT_CFI_RSP
#define K_RBP MT_CFI_RBP
#define K_DEREF_RBP MT_CFI_DEREF_RBP
#define K_STOP MT_CFI_STOP
#define K_SIGNAL MT_CFI_SIGNAL
#define B_SAME MT_CFI_B_SAME
#define B_AT_CFA MT_CFI_B_AT_CFA
#define B_AT_RBP MT_CFI_B_AT_RBP
#define B_UNDEF MT_CFI_B_UNDEF

/* Cache word: [31:0] tag = k >> 15, [37:32] rbp code, [40:38] kind,
 * [63:41] CFA offset in bytes (signed, so one arithmetic shift extracts it).
 * rbp code: 0 unchanged, 1..61 saved at CFA - 8*code, 62 saved at
 * *(rbp + 0), 63 undefined.  The key k is the return address (the rule is
 * that of k - 1, the call), or the exact PC + 1 after a signal frame.  The
 * set is given by k's low 15 bits, so (set, tag) identifies k for any
 * k < 2^47; a larger k has a tag of more than 32 bits and never matches,
 * and a zero word has kind K_NONE.  (Each step of the hot loop depends on
 * the previous one's loads, so the hash is kept to a shift and a mask.) */
#define CACHE_SETS_LOG 15
#define CACHE_SETS ((uintptr_t)1 << CACHE_SETS_LOG)
#define CACHE_BYTES ((size_t)CACHE_SETS * 2 * sizeof(uint64_t))
#define Q_MAX ((uintptr_t)1 << 47)
#define E_KIND(e) ((unsigned)((e) >> 38) & 7)
#define E_RB(e) ((unsigned)((e) >> 32) & 63)
#define E_OFF(e) ((int64_t)(e) >> 41)
#define RB_AT_RBP 62
#define RB_UNDEF 63

static uint64_t *g_cache;

static inline uint64_t *cache_set(uint64_t *cache, uintptr_t k)
{
	return (uint64_t *)((char *)cache + ((k << 4) & ((CACHE_SETS - 1) << 4)));
}

static inline void rule_decode(uint64_t e, struct mt_cfi_rule *r)
{
	unsigned rb = E_RB(e);
	r->kind = E_KIND(e);
	r->off = E_OFF(e);
	r->boff = 0;
	if (rb == 0) {
		r->bhow = B_SAME;
	} else if (rb < RB_AT_RBP) {
		r->bhow = B_AT_CFA;
		r->boff = -8 * (int64_t)rb;
	} else if (rb == RB_AT_RBP) {
		r->bhow = B_AT_RBP;
	} else {
		r->bhow = B_UNDEF;
	}
}

/* Returns 0 when the rule does not fit in a cache word. */
static uint64_t rule_encode(uintptr_t k, const struct mt_cfi_rule *r)
{
	uint64_t rb;
	if (k >= Q_MAX || r->kind == K_NONE)
		return 0;
	if (r->off < -((int64_t)1 << 22) || r->off >= ((int64_t)1 << 22))
		return 0;
	switch (r->bhow) {
	case B_SAME:
		rb = 0;
		break;
	case B_AT_CFA:
		if ((r->boff & 7) || r->boff > -8 || r->boff < -8 * (RB_AT_RBP - 1))
			return 0;
		rb = (uint64_t)(-r->boff / 8);
		break;
	case B_AT_RBP:
		if (r->boff != 0)
			return 0;
		rb = RB_AT_RBP;
		break;
	default:
		rb = RB_UNDEF;
		break;
	}
	return ((uint64_t)r->off << 41) | ((uint64_t)r->kind << 38) | (rb << 32) |
	       (uint64_t)(k >> CACHE_SETS_LOG);
}

static uint64_t *cache_get(void)
{
	uint64_t *c = __atomic_load_n(&g_cache, __ATOMIC_ACQUIRE);
	if (c)
		return c;
	void *m =
		mmap(NULL, CACHE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	uint64_t *expected = NULL;
	if (!__atomic_compare_exchange_n(&g_cache, &expected, (uint64_t *)m, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		munmap(m, CACHE_BYTES);
		return expected;
	}
	return (uint64_t *)m;
}

/* Empties the cache by mapping fresh zero pages over it: concurrent readers
 * see either old words or zeros, never a torn word. */
static void cache_flush(void)
{
	uint64_t *c = __atomic_load_n(&g_cache, __ATOMIC_ACQUIRE);
	if (c && mmap(c, CACHE_BYTES, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		for (size_t i = 0; i < CACHE_BYTES / sizeof(uint64_t); i++)
			__atomic_store_n(&c[i], 0, __ATOMIC_RELAXED);
	}
}

static void cache_insert(uint64_t *cache, uintptr_t k, uint64_t e)
{
	uint64_t *set = cache_set(cache, k);
	uint64_t e0 = __atomic_load_n(&set[0], __ATOMIC_RELAXED);
	if (E_KIND(e0) != K_NONE && (uint32_t)e0 != (uint32_t)e)
		__atomic_store_n(&set[1], e0, __ATOMIC_RELAXED); /* demote */
	__atomic_store_n(&set[0], e, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Module table                                                       */

struct mod {
	uintptr_t start, end; /* an executable PT_LOAD */
	const uint8_t *hdr;   /* its module's .eh_frame_hdr, or NULL */
};

struct modtab {
	size_t mapsize;
	unsigned long long adds, subs;
	struct modtab *retired_next;
	size_t n;
	struct mod m[];
};

static struct modtab *g_mods;
static struct modtab *g_retired;
/* A retired table that no reader can hold, kept for the next build: the
 * tables take turns instead of being mapped anew, so that the shim maps
 * nothing while a program loads and unloads libraries, and the loader
 * places them where it would without the shim (a library loaded after a
 * dlclose lands where the closed one was). */
static struct modtab *g_spare;
static int g_mods_stale;
static int g_pub_lock;
static unsigned g_readers;

struct build_ctx {
	struct modtab *t;
	size_t cap;
	int overflow, have_counts, check_only;
	unsigned long long adds, subs;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct build_ctx *b = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		b->have_counts = 1;
		b->adds = info->dlpi_adds;
		b->subs = info->dlpi_subs;
	}
	if (b->check_only)
		return 1;
	const uint8_t *hdr = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			hdr = (const uint8_t *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0)
			continue;
		if (b->t->n == b->cap) {
			b->overflow = 1;
			return 1;
		}
		struct mod *m = &b->t->m[b->t->n++];
		m->start = info->dlpi_addr + ph->p_vaddr;
		m->end = m->start + ph->p_memsz;
		m->hdr = hdr;
	}
	return 0;
}

static struct modtab *modtab_build(void)
{
	size_t cap = 256;
	for (int tries = 0; tries < 8; tries++, cap *= 4) {
		size_t sz = (sizeof(struct modtab) + cap * sizeof(struct mod) + PAGE - 1) &
			    ~(PAGE - 1);
		void *mem = __atomic_exchange_n(&g_spare, NULL, __ATOMIC_ACQUIRE);
		if (mem && ((struct modtab *)mem)->mapsize >= sz) {
			sz = ((struct modtab *)mem)->mapsize;
			cap = (sz - sizeof(struct modtab)) / sizeof(struct mod);
		} else {
			if (mem)
				munmap(mem, ((struct modtab *)mem)->mapsize);
			mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
			if (mem == MAP_FAILED)
				return NULL;
		}
		struct modtab *t = mem;
		memset(t, 0, sizeof *t);
		t->mapsize = sz;
		struct build_ctx b = { .t = t, .cap = cap };
		dl_iterate_phdr(phdr_cb, &b);
		if (b.overflow) {
			munmap(mem, sz);
			continue;
		}
		t->adds = b.adds;
		t->subs = b.subs;
		/* insertion sort by start: small n, and qsort may malloc */
		for (size_t i = 1; i < t->n; i++) {
			struct mod x = t->m[i];
			size_t j = i;
			while (j > 0 && t->m[j - 1].start > x.start) {
				t->m[j] = t->m[j - 1];
				j--;
			}
			t->m[j] = x;
		}
		return t;
	}
	return NULL;
}

static const struct mod *modtab_find(const struct modtab *t, uintptr_t pc)
{
	if (!t)
		return NULL;
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->m[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= t->m[lo - 1].end)
		return NULL;
	return &t->m[lo - 1];
}

/* Makes g_mods current.  Never holds a lock while in dl_iterate_phdr; a
 * publication that finds the publish lock taken (another thread, or this one
 * interrupted by a signal) is dropped, the next miss retries. */
static void modtab_refresh(void)
{
	struct modtab *old = __atomic_load_n(&g_mods, __ATOMIC_SEQ_CST);
	if (old && !__atomic_load_n(&g_mods_stale, __ATOMIC_SEQ_CST)) {
		struct build_ctx b = { .check_only = 1 };
		dl_iterate_phdr(phdr_cb, &b);
		if (!b.have_counts || (b.adds == old->adds && b.subs == old->subs))
			return;
	}
	__atomic_store_n(&g_mods_stale, 0, __ATOMIC_SEQ_CST);
	struct modtab *t = modtab_build();
	if (!t)
		return;
	if (__atomic_exchange_n(&g_pub_lock, 1, __ATOMIC_ACQUIRE)) {
		munmap(t, t->mapsize);
		return;
	}
	struct modtab *cur = __atomic_load_n(&g_mods, __ATOMIC_SEQ_CST);
	if (cur && (t->adds < cur->adds || t->subs < cur->subs)) {
		/* another thread published a newer table meanwhile */
		__atomic_store_n(&g_pub_lock, 0, __ATOMIC_RELEASE);
		munmap(t, t->mapsize);
		return;
	}
	__atomic_store_n(&g_mods, t, __ATOMIC_SEQ_CST);
	if (cur) {
		if (cur->subs != t->subs)
			cache_flush(); /* something was unloaded */
		cur->retired_next = g_retired;
		g_retired = cur;
	}
	/* A reader announces itself before loading g_mods; if none is active
     * now, none can hold a retired table. */
	if (__atomic_load_n(&g_readers, __ATOMIC_SEQ_CST) == 0) {
		while (g_retired) {
			struct modtab *r = g_retired, *none = NULL;
			g_retired = r->retired_next;
			if (!__atomic_compare_exchange_n(&g_spare, &none, r, 0, __ATOMIC_RELEASE,
							 __ATOMIC_RELAXED))
				munmap(r, r->mapsize);
		}
	}
	__atomic_store_n(&g_pub_lock, 0, __ATOMIC_RELEASE);
}

void mt_unwind_modules_changed(void)
{
	__atomic_store_n(&g_mods_stale, 1, __ATOMIC_SEQ_CST);
	cache_flush();
}

/* Computes the rule for lookup address Q of module M (PC is the frame's
 * actual PC, for the PLT form): format/cfi.c.  Returns 1 if the rule may be
 * cached. */
static int rule_from_module(const struct mod *m, uintptr_t q, uintptr_t pc, struct mt_cfi_rule *r)
{
	return mt_cfi_rule_from_hdr(m->hdr, q, pc, r);
}

/* Slow path: rule for Q; returns 1 if it may be cached.  The module table
 * is checked against the loader's counters on every miss, so modules loaded
 * or unloaded behind our back (libc's internal dlopen of NSS or gconv
 * modules) are seen before their memory is trusted. */
static int rule_lookup_slow(uintptr_t q, uintptr_t pc, struct mt_cfi_rule *r)
{
	modtab_refresh();
	__atomic_add_fetch(&g_readers, 1, __ATOMIC_SEQ_CST);
	const struct modtab *t = __atomic_load_n(&g_mods, __ATOMIC_SEQ_CST);
	const struct mod *m = modtab_find(t, q);
	int res = 0;
	if (m)
		res = rule_from_module(m, q, pc, r);
	else
		r->kind = K_STOP; /* in no module: JIT code, garbage */
	__atomic_sub_fetch(&g_readers, 1, __ATOMIC_SEQ_CST);
	return res;
}

static __attribute__((noinline)) void rule_miss(uint64_t *cache, uintptr_t q, uintptr_t pc,
						struct mt_cfi_rule *r)
{
	if (rule_lookup_slow(q, pc, r) && cache) {
		uint64_t e = rule_encode(q + 1, r);
		if (e)
			cache_insert(cache, q + 1, e);
	}
}

/* ------------------------------------------------------------------ */
/* Readable stack range                                               */

/* Per thread: [lo, hi) of the stack known to be mapped and readable, packed
 * in one word (lo page number << 28 | page count) so that a signal handler
 * unwinding in between never sees half an update. */
static __thread uint64_t t_stack_ok __attribute__((tls_model("initial-exec")));
static int g_probe_broken;

/* Returns how many of the NPAGES pages from ADDR are readable, in order
 * (process_vm_readv stops at the first that is not). */
static size_t probe_pages(uintptr_t addr, size_t npages)
{
	struct iovec remote[64], local;
	char buf[64];
	for (size_t i = 0; i < npages; i++) {
		remote[i].iov_base = (void *)(addr + i * PAGE);
		remote[i].iov_len = 1;
	}
	local.iov_base = buf;
	local.iov_len = npages;
	int saved = errno;
	long n =
		syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, remote, (long)npages, 0L);
	if (n < 0) {
		if (errno == ENOSYS || errno == EPERM) /* e.g. seccomp */
			__atomic_store_n(&g_probe_broken, 1, __ATOMIC_RELAXED);
		n = 0;
	}
	errno = saved;
	return (size_t)n;
}

/* Extends *HI so that [.., NEED) is readable; NEED must not pass LIMIT.
 * Probes up to 16 pages ahead so a thread's first unwinds make few calls. */
static __attribute__((noinline)) int stack_extend(uintptr_t *hi, uintptr_t need, uintptr_t limit)
{
	if (need > limit)
		return 0;
	while (*hi < need) {
		if (__atomic_load_n(&g_probe_broken, __ATOMIC_RELAXED)) {
			*hi = need; /* cannot check: trust the CFA bounds alone */
			return 1;
		}
		size_t want = (need - *hi + PAGE - 1) / PAGE;
		size_t np = want < 16 ? 16 : want > 64 ? 64 : want;
		size_t got = probe_pages(*hi, np);
		*hi += got * PAGE;
		if (got < np && *hi < need && !__atomic_load_n(&g_probe_broken, __ATOMIC_RELAXED))
			return 0;
	}
	return 1;
}

/* ------------------------------------------------------------------ */
/* Entry                                                              */

/* mt_unwind is a stub that hands the caller's state to the C code: at its
 * entry (%rsp) is the return address into the caller, the caller's sp is
 * %rsp+8 and its rbp is still in %rbp. */
__asm__(".pushsection .text\n"
	".globl mt_unwind\n"
	".hidden mt_unwind\n"
	".type mt_unwind, @function\n"
	".p2align 4\n"
	"mt_unwind:\n"
	".cfi_startproc\n"
#if defined(__CET__) && (__CET__ & 1)
	"endbr64\n"
#endif
	"mov %rsp, %rcx\n"
	"mov %rbp, %r8\n"
	"jmp mt_unwind_from\n"
	".cfi_endproc\n"
	".size mt_unwind, .-mt_unwind\n"
	".popsection\n");

/* Unwinding state outside the hot loop's registers. */
struct ustate {
	/* (the fields the hot loop copies are kept apart, or gcc packs them in
     * a vector register) */
	uintptr_t pc;
	uintptr_t lo; /* [lo, hi) of the current stack is readable */
	uintptr_t sp;
	uintptr_t limit;   /* the stack may not extend past this */
	uintptr_t rbp;	   /* 0: unknown */
	uintptr_t save_lo; /* the first stack's range, once left */
	uintptr_t hi;
	uintptr_t save_hi;
	int exact;    /* pc is exact (after a signal frame) */
	int switched; /* left the first stack (sigaltstack) */
};

static inline int readable(struct ustate *st, uintptr_t need)
{
	return need <= st->hi || stack_extend(&st->hi, need, st->limit);
}

/* Through a signal frame: pc is the sigreturn trampoline
 * (mov $15,%rax; syscall) and sp points at the ucontext the kernel saved. */
static int step_signal(struct ustate *st)
{
	static const uint8_t tramp[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	uintptr_t sp = st->sp;
	if (memcmp((const void *)st->pc, tramp, sizeof tramp) != 0 || (sp & 7))
		return 0;
	const ucontext_t *uc = (const ucontext_t *)sp;
	if (!readable(st,
		      sp + offsetof(ucontext_t, uc_mcontext.gregs) + sizeof(uc->uc_mcontext.gregs)))
		return 0;
	uintptr_t nsp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	if (nsp <= sp || nsp > st->limit) {
		/* Only a handler running on the alternate stack (which the kernel
         * records in uc_stack) may come from another stack: continue there
         * with a new bound and an empty readable range. */
		uintptr_t ss = (uintptr_t)uc->uc_stack.ss_sp;
		size_t ssz = uc->uc_stack.ss_size;
		if (sp - ss >= ssz || (uc->uc_stack.ss_flags & SS_ONSTACK) || nsp - ss < ssz ||
		    nsp < PAGE)
			return 0;
		if (!st->switched) {
			st->switched = 1;
			st->save_lo = st->lo;
			st->save_hi = st->hi;
		}
		st->lo = st->hi = nsp & ~(PAGE - 1);
		st->limit = nsp + MAX_STACK_SPAN;
	}
	st->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	st->rbp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	st->sp = nsp;
	st->exact = 1;
	return 1;
}

/* One step with any rule and every check (cache miss, rules the fast path
 * does not take, readable range to extend).  Returns 0 to stop. */
static __attribute__((noinline)) int step_general(struct ustate *st, uint64_t *cache, uint64_t e)
{
	uintptr_t q = st->pc - 1 + (uintptr_t)st->exact;
	uintptr_t sp = st->sp, rbp = st->rbp, cfa, a;
	struct mt_cfi_rule r;
	if (E_KIND(e) == K_NONE)
		rule_miss(cache, q, st->pc, &r);
	else
		rule_decode(e, &r);
	switch (r.kind) {
	case K_RSP:
		cfa = sp + (uintptr_t)r.off;
		break;
	case K_RBP:
		if (!rbp)
			return 0;
		cfa = rbp + (uintptr_t)r.off;
		break;
	case K_DEREF_RBP:
		if (!rbp)
			return 0;
		a = rbp + (uintptr_t)r.off;
		if (a < sp || (a & 7) || !readable(st, a + 8))
			return 0;
		cfa = *(const uintptr_t *)a;
		break;
	case K_SIGNAL:
		return step_signal(st);
	default:
		return 0;
	}
	if (cfa < sp + 8 || (cfa & 7) || !readable(st, cfa))
		return 0;
	switch (r.bhow) {
	case B_SAME:
		break;
	case B_AT_CFA:
		a = cfa + (uintptr_t)r.boff;
		goto load_rbp;
	case B_AT_RBP:
		if (!rbp)
			break;
		a = rbp + (uintptr_t)r.boff;
load_rbp:
		/* In a frame interrupted by a signal, the slot may already be below
         * sp (epilogue after the pop), in the intact red zone. */
		if (a < st->lo || a < sp - 128 || a + 8 > cfa || (a & 7))
			rbp = 0;
		else
			rbp = *(const uintptr_t *)a;
		break;
	default:
		rbp = 0;
		break;
	}
	st->pc = ((const uintptr_t *)cfa)[-1];
	st->sp = cfa;
	st->rbp = rbp;
	st->exact = 0;
	return 1;
}

__attribute__((used, noinline, visibility("hidden"))) int
mt_unwind_from(uint64_t *pcs, int max, int skip, uintptr_t entry_sp, uintptr_t rbp);

int mt_unwind_from(uint64_t *pcs, int max, int skip, uintptr_t entry_sp, uintptr_t rbp)
{
	if (max <= 0)
		return 0;
	uint64_t *cache = __atomic_load_n(&g_cache, __ATOMIC_RELAXED);
	if (__builtin_expect(!cache, 0) && !(cache = cache_get()))
		return 0;

	struct ustate st;
	uint64_t ok = t_stack_ok;
	st.lo = (uintptr_t)(ok >> 28) * PAGE;
	st.hi = st.lo + (uintptr_t)(ok & ((1u << 28) - 1)) * PAGE;
	if (entry_sp < st.lo || entry_sp >= st.hi) {
		st.lo = entry_sp & ~(PAGE - 1);
		st.hi = st.lo + PAGE;
	}
	const uintptr_t lo0 = st.lo, hi0 = st.hi;
	st.limit = entry_sp + MAX_STACK_SPAN;
	st.switched = 0;

	/* the caller's frame: its pc (not reported), sp and rbp; k is the
     * cache key, pc + exact */
	uintptr_t k = *(const uintptr_t *)entry_sp, sp = entry_sp + 8;
	uintptr_t hi = st.hi;
	int exact = 0, n = 0; /* (rbp 0 is taken as unknown) */

	for (;;) {
		/* Hot path: CFA = rsp or rbp + off, rbp unchanged or saved in the
         * frame, everything within the readable range. */
		uintptr_t tag = k >> CACHE_SETS_LOG, cfa;
		const uint64_t *set = cache_set(cache, k);
		uint64_t e = __atomic_load_n(&set[0], __ATOMIC_RELAXED);
		if ((uint32_t)e != tag) {
			e = __atomic_load_n(&set[1], __ATOMIC_RELAXED);
			if ((uint32_t)e != tag)
				e = 0;
		}
		unsigned mid = (unsigned)(e >> 32) & 0x1ff; /* kind, rbp code */
		unsigned rb = mid & 63;
		if (__builtin_expect(mid - (K_RSP << 6) < RB_AT_RBP, 1))
			cfa = sp + (uintptr_t)E_OFF(e);
		else if (mid - (K_RBP << 6) < RB_AT_RBP)
			cfa = rbp + (uintptr_t)E_OFF(e);
		else
			goto general;
		{
			uintptr_t a = cfa - 8 * (uintptr_t)rb;
			if (__builtin_expect(cfa < sp + 8 || (cfa & 7) || cfa > hi || a < sp, 0))
				goto general;
			if (rb)
				rbp = *(const uintptr_t *)a;
			k = ((const uintptr_t *)cfa)[-1];
			sp = cfa;
			exact = 0;
		}
		if (k == 0)
			break;
		goto record;
general:
		st.pc = k - (uintptr_t)exact;
		st.sp = sp;
		st.rbp = rbp;
		st.hi = hi;
		st.exact = exact;
		if (!step_general(&st, cache, e) || st.pc == 0)
			break;
		exact = st.exact;
		k = st.pc + (uintptr_t)exact;
		sp = st.sp;
		rbp = st.rbp;
		hi = st.hi;
record:
		if (skip > 0) {
			skip--;
		} else {
			pcs[n++] = k - (uintptr_t)exact;
			if (n >= max)
				break;
		}
	}

	if (!st.switched) {
		st.save_lo = st.lo;
		st.save_hi = hi;
	}
	if (st.save_hi != hi0 || st.save_lo != lo0)
		t_stack_ok = ((uint64_t)(st.save_lo / PAGE) << 28) |
			     (uint64_t)((st.save_hi - st.save_lo) / PAGE);
	return n;
}
