/*
 * load.c - the recordings `memtrace server` serves: each checked at start,
 * then loaded, its sites symbolized, in a thread of its own (the loader),
 * which afterwards looks every second for files that grew (a recording
 * `memtrace record` or `gather` is still writing) and loads them again.  A
 * load is put in the file's place between requests (files.c).
 */
#include "server.h"
#include "query/db.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/progress.h"
#include "base/util.h"
#include "format/format.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Loads PATH as recording ID into F (sel, procs): 0, or -1 with the error
 * in F->error.  The first load of a file says what it loaded, or why not;
 * a load again (the file grew) says nothing. */
static int load_file(struct srv_file *f, size_t id, const char *path, int first)
{
	char err[512];
	f->path = path;
	if (mt_select_load(&f->sel, path, NULL, err, sizeof err) < 0) {
		if (first && !mt_stop)
			mt_warning("%zu: %s; not served", id, err);
		f->error = xstrdup(err);
		return -1;
	}
	if (f->sel.all.truncated && first)
		mt_warning("%s is truncated (%s); serving what it holds", path, f->sel.all.why);
	const struct mt_recording *rec = &f->sel.all;
	f->procs = xcalloc(rec->nprocs ? rec->nprocs : 1, sizeof *f->procs);
	struct mt_progress pr;
	mt_progress_start(&pr, "symbolizing", path);
	uint64_t allocs = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		srv_proc_symbolize(&f->procs[i], rec->procs[i], &pr);
		allocs += rec->procs[i]->figures.t.allocations;
	}
	mt_progress_clear(&pr);
	if (!first)
		return 0;
	char a[32];
	const struct mt_process *p = rec->nprocs ? rec->procs[0] : NULL;
	fprintf(stderr, "memtrace: %zu: ", id);
	mt_text_str(stderr, path);
	fputs(": ", stderr);
	if (p) {
		fprintf(stderr, "pid %u ", p->pid);
		mt_text_str(stderr, p->exe ? p->exe : "?");
		fputs(", ", stderr);
	}
	if (rec->nprocs > 1)
		fprintf(stderr, "%zu more process%s, ", rec->nprocs - 1,
			rec->nprocs == 2 ? "" : "es");
	fprintf(stderr, "%s allocation%s\n", mt_fmt_count(allocs, a), mt_s(allocs));
	return 0;
}

/* What a load of F made: its sites' frames, its tables, its SQL. */
static void free_loaded(struct srv_file *f)
{
	if (!f->procs)
		return;
	for (size_t k = 0; k < f->sel.all.nprocs; k++) {
		struct srv_proc *sp = &f->procs[k];
		if (sp->sym)
			mt_sym_free(sp->sym);
		free(sp->frames);
		free(sp->frame_ids);
		free(sp->site_off);
		free(sp->site_len);
	}
	free(f->procs);
	f->procs = NULL;
	if (f->qdb) {
		mt_qdb_close(f->qdb);
		free(f->qdb);
		f->qdb = NULL;
	}
	mt_select_free(&f->sel);
}

/* The file's size and modification time now: 0, or -1 when it is gone. */
static int file_stamp(const char *path, uint64_t *size, int64_t *mtime)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		return -1;
	*size = (uint64_t)sb.st_size;
	*mtime = (int64_t)mt_timespec_ns(sb.st_mtim);
	return 0;
}

/* Whether PATH opens as a recording (its header): the files that cannot
 * are listed with their error from the start. */
static int check_file(struct srv_file *f, size_t id)
{
	struct mt_file_reader r;
	char err[512];
	file_stamp(f->path, &f->seen_size, &f->seen_mtime);
	if (mt_file_open(&r, f->path, err, sizeof err) < 0) {
		mt_warning("%zu: %s; not served", id, err);
		srv_file_fail(f, xstrdup(err));
		return -1;
	}
	mt_file_close(&r);
	return 0;
}

size_t srv_files_open(struct srv_state *st, char *const *paths, size_t n)
{
	size_t loadable = 0;
	st->files = xcalloc(n, sizeof *st->files);
	st->nfiles = n;
	for (size_t i = 0; i < n; i++) {
		srv_file_init(&st->files[i], paths[i]);
		loadable += check_file(&st->files[i], i) == 0;
	}
	return loadable;
}

void srv_files_free(struct srv_state *st)
{
	for (size_t i = 0; i < st->nfiles; i++) {
		free_loaded(&st->files[i]);
		free(st->files[i].error);
		srv_file_destroy(&st->files[i]);
	}
	free(st->files);
}

/* ---- the loader: first loads, then loads again of files that grew ---- */

struct srv_loader {
	struct srv_state *st;
	pthread_t thread;
	volatile int stop; /* the server ends (or did not start) */
	uint64_t *next;	   /* per file: no new reading before this (mt_now_ns) */
};

/* Loads file ID (again) and puts the load in its place; a failed first
 * load lists it with its error, a failed load again keeps the one before
 * (a recording being written can end in half a chunk, or the load was
 * cancelled). */
static void load_into(struct srv_loader *ld, size_t id, int first)
{
	struct srv_file *f = &ld->st->files[id];
	uint64_t size = 0;
	int64_t mtime = 0;
	/* what the load will see at least: growth from here on is seen by
	 * the next look */
	if (file_stamp(f->path, &size, &mtime) == 0) {
		f->seen_size = size;
		f->seen_mtime = mtime;
	}
	pthread_mutex_lock(&f->lock);
	f->size = size;
	pthread_mutex_unlock(&f->lock);
	__atomic_store_n(&f->progress, 0, __ATOMIC_RELAXED);
	struct srv_file fresh = { .path = f->path };
	struct mt_budget b = { .cancel = &mt_stop, .cancel2 = &ld->stop, .progress = &f->progress };
	mt_budget_set(&b);
	uint64_t t0 = mt_now_ns();
	int rc = load_file(&fresh, id, f->path, first);
	/* a file that keeps growing is read again no sooner than its reading
	 * took once more: reading it again takes half of a core at most */
	ld->next[id] = mt_now_ns() + (mt_now_ns() - t0);
	mt_budget_set(NULL);
	if (rc < 0) {
		srv_file_fail(f, fresh.error);
		return;
	}
	srv_file_publish(f, &fresh);
	free_loaded(&fresh);
}

/* A look every second: a file whose size or time changed is loaded again
 * (a recording `memtrace record` or `gather` is still writing: the GUI
 * sees its generation change and draws it again). */
#define LOOK_EVERY_MS 1000

static void *loader_run(void *arg)
{
	struct srv_loader *ld = arg;
	struct srv_state *st = ld->st;
	for (size_t i = 0; i < st->nfiles && !mt_stop && !ld->stop; i++)
		if (st->files[i].state == SRV_LOADING)
			load_into(ld, i, 1);
	while (!mt_stop && !ld->stop) {
		for (int k = 0; k < LOOK_EVERY_MS / 50 && !mt_stop && !ld->stop; k++)
			usleep(50000);
		for (size_t i = 0; i < st->nfiles && !mt_stop && !ld->stop; i++) {
			struct srv_file *f = &st->files[i];
			uint64_t size;
			int64_t mtime;
			if (mt_now_ns() >= ld->next[i] && file_stamp(f->path, &size, &mtime) == 0 &&
			    (size != f->seen_size || mtime != f->seen_mtime))
				load_into(ld, i, 0);
		}
	}
	return NULL;
}

struct srv_loader *srv_loader_start(struct srv_state *st)
{
	struct srv_loader *ld = xcalloc(1, sizeof *ld);
	ld->st = st;
	ld->next = xcalloc(st->nfiles, sizeof *ld->next);
	/* the stop signals go to the main thread alone (srv_run waits for
	 * them there): the loader is made with them blocked */
	sigset_t stop, old;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	int made = pthread_create(&ld->thread, NULL, loader_run, ld);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (made != 0) {
		mt_error("cannot start a thread to load the recordings");
		free(ld->next);
		free(ld);
		return NULL;
	}
	return ld;
}

void srv_loader_stop(struct srv_loader *ld)
{
	/* a stop signal ends a load at its next chunk */
	ld->stop = 1;
	pthread_join(ld->thread, NULL);
	free(ld->next);
	free(ld);
}
