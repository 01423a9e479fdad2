/*
 * thread.c - the shim's own threads (channel.c's flusher, serve.c's
 * server): started the one way a thread inside a traced program must be.
 *
 * All signals are blocked in it (it inherits the mask it was created
 * under), so that none meant for the program lands on a thread the program
 * does not know of; it is detached, since nobody joins it; and its stack
 * is the size its caller says rather than the 8 MiB default, which would
 * show in the program's own mappings.
 */
#include "shim.h"

#include <pthread.h>
#include <signal.h>

int mt_shim_thread(void *(*fn)(void *), void *arg, size_t stack)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, stack);
	int r = pthread_create(&t, &a, fn, arg);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r == 0 ? 0 : -1;
}
