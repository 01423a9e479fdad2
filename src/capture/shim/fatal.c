/*
 * fatal.c - the standalone shim's last write before a signal kills the
 * program.
 *
 * Standalone, the shim writes its own file, half a second behind at most:
 * a program killed by a signal would take the last events with it.  So the
 * shim handles the signals whose default action ends the process (SIGSEGV,
 * SIGABRT, SIGTERM...): its handler has what is buffered written out (the
 * caller's FLUSH, preload.c), then puts the default action back and raises
 * the signal again, so that the process dies of it as it would have, core
 * dump included.
 *
 * Only where the program keeps the default: a signal it handles or ignores
 * is its own.  And the program must not see the difference, so sigaction
 * and signal are interposed for those signals: the program reads back the
 * disposition it set (SIG_DFL while ours is installed); setting SIG_DFL
 * keeps ours installed; setting a handler or SIG_IGN replaces ours, until
 * it sets SIG_DFL again.  (glibc's sigset, sysv_signal and bsd_signal go
 * to the kernel without these and replace ours for good: the default then
 * loses the last events, as before.)  Under `memtrace record` nothing here
 * is installed: the recorder holds the buffer and sees the death.
 *
 * The handler runs in any thread at any moment: it uses no heap and no
 * lock of its own, only system calls, atomics and FLUSH, which is written
 * for that.
 */
#include "shim.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* The signals whose default action ends the process, that the shim takes
 * over where the program leaves them at the default. */
static const int fatal_signals[] = { SIGHUP,  SIGINT,  SIGQUIT, SIGILL,	 SIGTRAP,
				     SIGABRT, SIGBUS,  SIGFPE,	SIGSEGV, SIGPIPE,
				     SIGALRM, SIGTERM, SIGXCPU, SIGXFSZ, SIGSYS };

#define NSIG_MAX 65
/* Per signal: 1 while our handler is installed in place of the program's
 * SIG_DFL; 0 otherwise (never taken over, or the program set a handler or
 * SIG_IGN of its own, which is installed). */
static int ours[NSIG_MAX];
/* Per signal taken over at start: the disposition the program last set
 * (what sigaction reads back). */
static struct sigaction theirs[NSIG_MAX];
static int managed[NSIG_MAX];

static void (*flush_fn)(int sig);
/* glibc's sigaction under its other name: no dlsym (which may allocate,
 * and programs set handlers before anything else) */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);
#define real_sigaction __sigaction

static void on_fatal(int sig, siginfo_t *info, void *uctx)
{
	(void)info;
	(void)uctx;
	int saved = errno;
	void (*fn)(int) = __atomic_load_n(&flush_fn, __ATOMIC_ACQUIRE);
	if (fn)
		fn(sig);
	/* The default action, and the signal again: pending (it is blocked
	 * while this runs), it is delivered when the handler returns.  A fault
	 * (SIGSEGV of a bad access) would come again anyway from the
	 * instruction, now with the default. */
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigemptyset(&dfl.sa_mask);
	real_sigaction(sig, &dfl, NULL);
	__atomic_store_n(&ours[sig], 0, __ATOMIC_RELEASE);
	raise(sig);
	errno = saved;
}

static int install(int sig)
{
	struct sigaction sa = { .sa_sigaction = on_fatal,
				.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK };
	sigemptyset(&sa.sa_mask);
	if (real_sigaction(sig, &sa, NULL) < 0)
		return -1;
	__atomic_store_n(&ours[sig], 1, __ATOMIC_RELEASE);
	return 0;
}

void mt_fatal_install(void (*flush)(int sig))
{
	__atomic_store_n(&flush_fn, flush, __ATOMIC_RELEASE);
	for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++) {
		int sig = fatal_signals[i];
		struct sigaction cur;
		if (real_sigaction(sig, NULL, &cur) < 0 || (cur.sa_flags & SA_SIGINFO) ||
		    cur.sa_handler != SIG_DFL)
			continue; /* the program's (or inherited ignored) */
		theirs[sig] = cur;
		if (install(sig) == 0)
			managed[sig] = 1;
	}
}

static int is_default(const struct sigaction *act)
{
	return !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig <= 0 || sig >= NSIG_MAX || !managed[sig])
		return real_sigaction(sig, act, old);
	struct sigaction was = theirs[sig];
	if (act && is_default(act)) {
		/* the program's default is ours to keep (again) */
		if (!__atomic_load_n(&ours[sig], __ATOMIC_ACQUIRE) && install(sig) < 0)
			return -1;
	} else if (act) {
		if (real_sigaction(sig, act, NULL) < 0)
			return -1;
		__atomic_store_n(&ours[sig], 0, __ATOMIC_RELEASE);
	} else if (!__atomic_load_n(&ours[sig], __ATOMIC_ACQUIRE)) {
		/* the program's own handler is installed: the kernel's answer */
		return real_sigaction(sig, NULL, old);
	}
	if (act)
		theirs[sig] = *act;
	if (old)
		*old = was;
	return 0;
}

/* glibc's signal() sets its disposition without our sigaction: the same
 * here, with its BSD semantics (SA_RESTART, the signal blocked in its
 * handler; siginterrupt's exceptions aside). */
EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}
