/*
 * files.c - a served recording between the thread that loads it (again,
 * when it grows) and the requests that read it (server.h).
 *
 * A request holds the file from its parsing to its end, in different
 * threads, so a count of holders under a mutex stands in for a lock: a new
 * load waits until the count is zero, while new requests wait for it to be
 * swapped in (a swap is a few pointers: they wait as long as the longest
 * request running, not as long as a load).
 */
#include "server.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void srv_file_init(struct srv_file *f, const char *path)
{
	memset(f, 0, sizeof *f);
	f->path = path;
	f->state = SRV_LOADING;
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cond, &ca);
	pthread_condattr_destroy(&ca);
}

void srv_file_destroy(struct srv_file *f)
{
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
}

int srv_file_acquire(struct srv_file *f, const volatile int *stopping, unsigned timeout_s)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_s;
	int rc = 1;
	pthread_mutex_lock(&f->lock);
	for (;;) {
		if (f->state == SRV_FAILED) {
			rc = -1;
			break;
		}
		if (f->state == SRV_READY && !f->swapping) {
			f->readers++;
			rc = 0;
			break;
		}
		if (stopping && *stopping)
			break;
		/* a second at a time: a stopping server says so to no one */
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec > until.tv_sec ||
		    (t.tv_sec == until.tv_sec && t.tv_nsec >= until.tv_nsec))
			break;
		t.tv_sec++;
		if (t.tv_sec > until.tv_sec ||
		    (t.tv_sec == until.tv_sec && t.tv_nsec > until.tv_nsec))
			t = until;
		int e = pthread_cond_timedwait(&f->cond, &f->lock, &t);
		if (e && e != ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void srv_file_release(struct srv_file *f)
{
	pthread_mutex_lock(&f->lock);
	if (!--f->readers)
		pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

void srv_file_publish(struct srv_file *f, struct srv_file *fresh)
{
	pthread_mutex_lock(&f->lock);
	f->swapping = 1;
	while (f->readers)
		pthread_cond_wait(&f->cond, &f->lock);
	struct mt_selection sel = f->sel;
	struct srv_proc *procs = f->procs;
	struct mt_qdb *qdb = f->qdb;
	int had = f->state == SRV_READY;
	f->sel = fresh->sel;
	f->procs = fresh->procs;
	f->qdb = NULL;
	fresh->procs = had ? procs : NULL;
	fresh->qdb = had ? qdb : NULL;
	if (had)
		fresh->sel = sel;
	else
		memset(&fresh->sel, 0, sizeof fresh->sel);
	f->state = SRV_READY;
	f->generation++;
	f->swapping = 0;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

void srv_file_fail(struct srv_file *f, char *error)
{
	pthread_mutex_lock(&f->lock);
	if (f->state == SRV_LOADING) {
		f->error = error;
		f->state = SRV_FAILED;
		error = NULL;
	}
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	free(error); /* a load of a file that grew: the one before stays */
}

enum srv_file_state srv_file_status(struct srv_file *f, unsigned *generation, double *progress)
{
	pthread_mutex_lock(&f->lock);
	enum srv_file_state s = f->state;
	*generation = f->generation;
	uint64_t done = __atomic_load_n(&f->progress, __ATOMIC_RELAXED);
	*progress = f->size ? (double)done / (double)f->size : 0;
	if (*progress > 1)
		*progress = 1;
	pthread_mutex_unlock(&f->lock);
	return s;
}
