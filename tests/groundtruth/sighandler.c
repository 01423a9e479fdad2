/*
 * sighandler.c - a signal handler that allocates, 1000 times a second, while
 * the main thread churns malloc/free (so most signals land inside the shim,
 * often while it holds its channel lock).
 *
 * main:         churn_once() (malloc(32); free) once, then with SIGALRM every
 *               millisecond (setitimer), until the handler has run CALLS
 *               times; then the timer is stopped, SIGALRM blocked, and
 *               main frees the block handler_move() left.  It prints
 *               "churn=N calls=C": N churn_once() calls, C handler runs
 *               (the handler counts itself; C is CALLS, or one more if a
 *               signal came between the last check and the timer's stop).
 * on_alarm:     each run: handler_temp() (malloc(64); free: temporary),
 *               handler_keep() (malloc(200), kept: leaked), handler_move()
 *               (realloc of one block, 300 and 600 bytes in turn; the first
 *               from NULL).
 *
 * Figures (run i = 0..C-1):
 *   churn_once    N allocations of 32 B, N frees, nothing leaked
 *   handler_temp  C x 64 B, C frees, C temporary (its free is the thread's
 *                 next allocator call: the signal is blocked in its handler)
 *   handler_keep  C x 200 B, no frees, C leaked (200 C bytes)
 *   handler_move  C allocations of 300 + 300 (i & 1) B, C frees (C - 1 by
 *                 the next realloc, the last by main), nothing leaked
 * Every handler allocation must be recorded, whatever it interrupted, and
 * none lost (lost_events 0): the shim records a handler's call itself, or
 * holds it back and writes it right after the record it interrupted.
 *
 * glibc's malloc is not async-signal-safe; this program stays within what
 * works in practice: main's churn is served from the thread's tcache (the
 * warm-up puts a chunk of its size there) and never takes the arena lock,
 * and the handler's sizes are its own.
 */
#include "gt.h"

#include <signal.h>
#include <sys/time.h>

#define CALLS 500

static volatile sig_atomic_t calls;
static void *kept[CALLS + 16];
static void *moved;

NOINLINE void churn_once(void)
{
	void *p = malloc(32); /* @site:churn_once */
	gt_keep(p);
	free(p);
}

NOINLINE void handler_temp(void)
{
	void *q = malloc(64); /* @site:handler_temp */
	gt_keep(q);
	free(q);
}

NOINLINE void handler_keep(int i)
{
	kept[i] = malloc(200); /* @site:handler_keep */
	gt_keep(kept[i]);
}

NOINLINE void handler_move(int i)
{
	moved = realloc(GT_HIDE(moved), 300 + (size_t)(i & 1) * 300); /* @site:handler_move */
	gt_keep(moved);
}

static void on_alarm(int sig)
{
	(void)sig;
	int i = calls;
	if (i >= CALLS + 16)
		return;
	handler_temp();	  /* @call:handler_temp */
	handler_keep(i);  /* @call:handler_keep */
	handler_move(i);  /* @call:handler_move */
	calls = i + 1;
}

int main(void)
{
	long n = 0;
	churn_once(); /* warm-up: a chunk of the churn's size in the tcache */
	n++;
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	GT_REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
	struct itimerval it = { .it_interval = { 0, 1000 }, .it_value = { 0, 1000 } };
	GT_REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
	while (calls < GT_N(CALLS)) {
		churn_once();
		n++;
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	sigprocmask(SIG_BLOCK, &s, NULL);
	int c = calls;
	free(moved);
	gt_say("churn=%ld calls=%d\n", n, c);
	return 0;
}
