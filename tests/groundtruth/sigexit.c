/*
 * sigexit.c - a signal handler that allocates one block and calls exit()
 * while the main thread churns malloc/free (so the signal often lands while
 * the shim holds its channel lock, and the handler's event is held back).
 *
 * main:           churn_once() (malloc(32); free) in a loop, SIGALRM due
 *                 after 5 to 24 ms (setitimer, one shot, by the pid).
 * on_alarm:       handler_block() (malloc(4242), kept), then exit(7).
 *
 * Figures: handler_block one allocation of 4242 B, leaked; the exit status
 * is 7.  The event of the block is either in the recording or counted in
 * lost_events: it is never silently missing (the held-back event cannot be
 * written by a thread whose interrupted code holds the lock for good).
 * churn_once's figures depend on where the signal came, and the churn event
 * the signal interrupted may be neither recorded nor counted.
 *
 * glibc's malloc is not async-signal-safe: main's churn is served from the
 * thread's tcache and never takes the arena lock, the handler's size is
 * beyond the tcache's.
 */
#include "gt.h"

#include <signal.h>
#include <sys/time.h>

NOINLINE void churn_once(void)
{
	void *p = malloc(32); /* @site:churn_once */
	gt_keep(p);
	free(p);
}

NOINLINE void handler_block(void)
{
	void *q = malloc(4242); /* @site:handler_block */
	gt_keep(q);
}

static void on_alarm(int sig)
{
	(void)sig;
	handler_block(); /* @call:handler_block */
	exit(7);
}

int main(void)
{
	churn_once(); /* warm-up: a chunk of the churn's size in the tcache */
	struct sigaction sa = { .sa_handler = on_alarm };
	sigemptyset(&sa.sa_mask);
	GT_REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
	long due_us = 5000 + (long)(getpid() % 20) * 1000;
	struct itimerval it = { .it_value = { 0, due_us } };
	GT_REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
	for (;;)
		churn_once();
}
