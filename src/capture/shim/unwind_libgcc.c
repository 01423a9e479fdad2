/*
 * unwind_libgcc.c - mt_unwind() on libgcc's unwinder (_Unwind_Backtrace,
 * the one C++ exceptions use): the unwinder of MIPS64.
 *
 * libunwind would do, but on MIPS its check for a signal frame reads the
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
extern uintptr_t _Unwind_GetIP(struct _Unwind_Context *);

enum { MT_URC_NO_REASON = 0, MT_URC_END_OF_STACK = 5 };

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
	return w.out;
}

void mt_unwind_modules_changed(void)
{
}
