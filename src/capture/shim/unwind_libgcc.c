/*
 * unwind_libgcc.c - mt_unwind() on libgcc's unwinder (_Unwind_Backtrace,
 * the one C++ exceptions use): the unwinder of ARMv7 (from .ARM.exidx,
 * where libunwind's is a hundred times slower) and MIPS64.
 *
 * On MIPS libunwind would do, but its check for a signal frame reads the
 * instruction after each return address as an 8-byte word, unaligned for
 * every other instruction: the kernel fixes such loads up, qemu-user does
 * not (SIGBUS), so the shim could not be tested there.  libgcc reads the
 * same instructions as 4-byte words, and walks .eh_frame through
 * PT_GNU_EH_FRAME's binary-search table: no allocation, whole stacks
 * without frame pointers.  Signals are held off during a walk (see
 * mt_unwind).  On ARM a walk ends at the frame a signal interrupted (see
 * one_frame).
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>

#include "unwind.h"

/* libgcc's own <unwind.h> has the same name as ours, which the include
 * path finds first: the two functions used, as libgcc defines them
 * (_Unwind_Reason_Code is an int-sized enum; 0 goes on, 5 stops). */
struct _Unwind_Context;
typedef int (*mt_unwind_trace_fn)(struct _Unwind_Context *, void *);
extern int _Unwind_Backtrace(mt_unwind_trace_fn, void *);
#if defined(__arm__)
/* ARM's EHABI unwinder has no _Unwind_GetIP function (its header makes it
 * a macro): the pc is core register 15, with the Thumb bit dropped. */
extern int _Unwind_VRS_Get(struct _Unwind_Context *, int regclass, uint32_t regno, int repr,
			   void *value);
static uintptr_t _Unwind_GetIP(struct _Unwind_Context *ctx)
{
	uint32_t pc = 0;
	_Unwind_VRS_Get(ctx, 0 /* _UVRSC_CORE */, 15, 0 /* _UVRSD_UINT32 */, &pc);
	return pc & ~(uint32_t)1;
}
#else
extern uintptr_t _Unwind_GetIP(struct _Unwind_Context *);
#endif

enum { MT_URC_NO_REASON = 0, MT_URC_END_OF_STACK = 5 };

#if defined(__arm__)
#define UNW_LOCAL_ONLY
#include <libunwind.h>

/* mt_unwind() on libunwind (as unwind_libunwind.c), inlined into
 * mt_unwind so that the frames to drop are the same two. */
static inline __attribute__((always_inline)) int fallback_libunwind(uint64_t *pcs, int max,
								    int skip)
{
	enum { BUF = 160 };
	void *buf[BUF];
	int n = unw_backtrace(buf, max + skip + 2 < BUF ? max + skip + 2 : BUF);
	int out = 0;
	for (int i = 2 + skip; i < n && out < max; i++)
		pcs[out++] = (uint64_t)((uintptr_t)buf[i] & ~(uintptr_t)1); /* the Thumb bit */
	return out;
}
#endif

struct walk {
	uint64_t *pcs;
	int max, skip, seen, out;
	int after_signal; /* the previous frame was a signal's return trampoline */
};

#if defined(__arm__)
/* Whether PC is a signal's return trampoline: `mov r7, #NR; svc 0` with NR
 * 119 (sigreturn) or 173 (rt_sigreturn), as Thumb-2 code (glibc's
 * restorers on armhf: mov.w then svc), 16-bit Thumb (movs; the kernel's)
 * or ARM code (the kernel's, whose svc may also name NR for the old ABI).
 * The unwinder found an .ARM.exidx entry for PC: it lies in a loaded
 * object's code. */
static int is_sigreturn(uintptr_t pc)
{
	const volatile uint16_t *h = (const uint16_t *)pc;
	if (h[0] == 0x2777 || h[0] == 0x27ad)
		return h[1] == 0xdf00;
	if (h[0] == 0xf04f)
		return (h[1] == 0x0777 || h[1] == 0x07ad) && h[2] == 0xdf00;
	if (pc & 3)
		return 0;
	const volatile uint32_t *w = (const uint32_t *)pc;
	if (w[0] != 0xe3a07077 && w[0] != 0xe3a070ad)
		return 0;
	uint32_t nr = w[0] & 0xff;
	return w[1] == 0xef000000 || w[1] == (0xef900000 | nr); /* svc 0, or the OABI's svc */
}
#else
static int is_sigreturn(uintptr_t pc)
{
	(void)pc;
	return 0;
}
#endif

/* Called by the unwinder with each frame, before it unwinds that frame
 * with the frame's table entry.
 *
 * On ARM the walk stops at the frame a signal interrupted (the one past
 * the trampoline), once its pc is taken: .ARM.exidx describes a function
 * at its call sites only, not at every instruction.  A handler's stack
 * reaches the code it interrupted through the trampoline's entry (the
 * registers saved in the signal frame), at whatever instruction the
 * signal came: qemu-user delivers signals between translation blocks, so
 * often at a function's first one, before its prologue.  Unwinding that
 * frame then applies the whole prologue in reverse (`vsp = r7` with the
 * caller's r7, the shim's malloc being one such function), and libgcc
 * reads its registers back from wherever that points: past the stack, a
 * SIGSEGV.  Past the interrupted pc, nothing is known for sure. */
static int one_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t pc = _Unwind_GetIP(ctx);
	int interrupted = w->after_signal;
	w->after_signal = pc && is_sigreturn(pc);
	/* frame 0 is mt_unwind itself, frame 1 the hook that called it */
	if (w->seen++ < 2 + w->skip)
		return interrupted ? MT_URC_END_OF_STACK : MT_URC_NO_REASON;
	if (!pc)
		return MT_URC_END_OF_STACK;
	w->pcs[w->out++] = (uint64_t)pc;
	return w->out < w->max && !interrupted ? MT_URC_NO_REASON : MT_URC_END_OF_STACK;
}

int mt_unwind(uint64_t *pcs, int max, int skip)
{
	struct walk w = { .pcs = pcs, .max = max, .skip = skip };
	sigset_t all, old;
	if (max <= 0)
		return 0;
	/* libgcc finds FDEs under a lock (the objects crtbegin registers): a
	 * signal handler that allocates while this thread holds it would
	 * wait for itself.  Signals wait until the walk is done instead, as
	 * libunwind makes them wait on the other architectures. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	_Unwind_Backtrace(one_frame, &w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#if defined(__arm__)
	/* ARM's unwinder reports a frame only once it has found its
	 * .ARM.exidx entry: an allocation made straight from code without
	 * one (much of libc: stdio's buffers; code built without
	 * -funwind-tables) would have no frame at all.  libunwind still
	 * names that one frame, the allocation's caller: asked for no more
	 * (guessing its way further through code without tables costs it
	 * milliseconds an unwind under qemu). */
	if (w.out == 0)
		return fallback_libunwind(pcs, max < 1 ? max : 1, skip);
#endif
	return w.out;
}

void mt_unwind_modules_changed(void)
{
}
