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
 * mt_unwind).
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
};

static int one_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	/* frame 0 is mt_unwind itself, frame 1 the hook that called it */
	if (w->seen++ < 2 + w->skip)
		return MT_URC_NO_REASON;
	uintptr_t pc = _Unwind_GetIP(ctx);
	if (!pc)
		return MT_URC_END_OF_STACK;
	w->pcs[w->out++] = (uint64_t)pc;
	return w->out < w->max ? MT_URC_NO_REASON : MT_URC_END_OF_STACK;
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
