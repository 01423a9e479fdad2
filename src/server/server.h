/*
 * server.h - `memtrace server`: what its start (serve.c), the loading of
 * the recordings (load.c, symbolize.c), the HTTP plumbing (server.c) and
 * the REST API (api.c and its api_*.c) share.
 *
 * Thread model: libmicrohttpd runs one thread per connection, which parses
 * the request (a client holds a share of the connections at most, and has
 * SRV_HEADER_S seconds for a request's headers: guard.h); an API request
 * then runs in a thread of its own writing to a pipe, and the connection
 * streams what comes out of it (server.c), so no answer is ever held whole
 * in memory.  The loaded recordings and their symbolized sites are
 * read-only once serving starts; exports, filters and rankings keep their
 * state per call, so requests run in parallel.
 * Reading a recording file again (filters, replays, exports) costs a load's
 * memory: at most srv_state.nworkers of those run at once (srv_state.slots).
 * A symbolizer's caches are not thread-safe: the one loaded with a file is
 * used under srv_state.symlock.
 */
#ifndef MEMTRACE_SERVER_H
#define MEMTRACE_SERVER_H

#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyse/select.h"
#include "analyse/sites.h"
#include "analyse/symbols.h"

/* The frames kept per site: as many as are symbolized anywhere. */

/* One process of a loaded recording, its sites symbolized once at load. */
struct srv_proc {
	struct mt_symbolizer *sym; /* after loading: only under srv_state.heavy */
	/* Every site's frames, leaf first: indices into `frames`, the distinct
	 * frames (strings are sym's).  Sites share most of their frames, so
	 * that 65,536 stacks of 10 frames cost 2.6 MB, not 31 MB. */
	struct mt_frame *frames;
	size_t nframes;
	uint32_t *frame_ids;
	uint32_t *site_off, *site_len;
	size_t nsites;
	uint32_t max_depth;
};

struct mt_qdb;
struct srv_guard;

/* Seconds a connection has for its request's headers, and may stay idle. */
#define SRV_HEADER_S 10

enum srv_file_state { SRV_LOADING, SRV_READY, SRV_FAILED };

/* A recording given to the server.  It is served from the start: its first
 * load runs in the loader's thread (load.c) while /list shows how far it
 * got, and requests for it wait for it.  A file that grows (a recording
 * still being made or gathered) is loaded again, and the new load takes
 * the place of the old between requests (files.c): sel, procs and qdb are
 * only read by a request that holds the file (srv_file_acquire). */
struct srv_file {
	const char *path;
	char *error;		 /* it did not load: why (the rest is empty) */
	struct mt_selection sel; /* unfiltered: sel.all is the whole recording */
	struct srv_proc *procs;	 /* per process of sel.all, same order */
	struct mt_qdb *qdb;	 /* its SQL tables, made by the first query (srv_state.qlock) */
	/* the rest under `lock` (progress: atomic) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum srv_file_state state;
	uint64_t progress;   /* bytes of the file the load under way has read */
	uint64_t size;	     /* the file's size when that load began */
	unsigned generation; /* loads published: 0 until the first is */
	unsigned readers;    /* requests holding it */
	int swapping;	     /* a new load waits for them to finish */
	uint64_t seen_size;  /* size and modification time of the file the */
	int64_t seen_mtime;  /* published load read (nanoseconds) */
};

/* files.c: a file's state between its loader and the requests. */
void srv_file_init(struct srv_file *f, const char *path);
void srv_file_destroy(struct srv_file *f);
/* Holds F for a request, waiting at most TIMEOUT_S seconds for its first
 * load: 0 (then srv_file_release), -1 when it failed to load (F->error
 * says why), 1 when it is still loading (or the server stops). */
int srv_file_acquire(struct srv_file *f, const volatile int *stopping, unsigned timeout_s);
void srv_file_release(struct srv_file *f);
/* Puts the load in NEW (sel, procs; a NULL qdb) in F's place once no
 * request holds F; NEW then holds the old one, for the caller to free. */
void srv_file_publish(struct srv_file *f, struct srv_file *fresh);
/* The first load failed with ERROR (taken): F is listed with it. */
void srv_file_fail(struct srv_file *f, char *error);
/* F's state, generation and load progress (0 to 1) now. */
enum srv_file_state srv_file_status(struct srv_file *f, unsigned *generation, double *progress);

struct srv_state {
	struct srv_file *files;
	size_t nfiles;
	pthread_mutex_t symlock; /* srv_proc.sym */
	pthread_mutex_t qlock;	 /* srv_file.qdb */
	sem_t slots;		 /* heavy requests running at once */
	unsigned nworkers;
	unsigned timeout_s;	/* a request's time budget */
	uint64_t request_bytes; /* and its memory budget (the readings' tables) */
	int loopback;		/* listening on a loopback address only */
	int wildcard;		/* listening on every address (0.0.0.0, ::) */
	char host[256];		/* the address as given, and as bound: Host may name them */
	char bound[64];
	const char *token;	     /* non-loopback: what every request must carry */
	char url[400];		     /* where to point a browser */
	unsigned max_connections;    /* at once (0: as many as fit) */
	unsigned client_connections; /* of them, one client's (0: any number) */
	struct srv_guard *guard;
	volatile int stopping;
	int busy; /* request threads running (atomic) */
};

/* What `memtrace server` was asked (cli/cmd_server.c). */
struct srv_options {
	char host[256], port[8];     /* where to listen */
	const char *token;	     /* off loopback (NULL: $MEMTRACE_TOKEN, or a random one) */
	unsigned timeout_s;	     /* a request's time budget */
	uint64_t request_mib;	     /* and its memory budget (0: the default) */
	uint32_t max_connections;    /* connections at once (0: as many as fit) */
	uint32_t client_connections; /* of them, one client's (0: any number) */
};

/* What an access token is made of (16 to 64 of them). */
#define SRV_TOKEN_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

/* serve.c: loads the recordings PATHS and serves them as O says until
 * SIGINT, SIGTERM or SIGHUP.  Returns MT_EXIT_OK, or MT_EXIT_RUNTIME after
 * an error message. */
int srv_serve(const struct srv_options *o, char *const *paths, size_t npaths);

struct mt_progress;
struct srv_loader;

/* load.c: the files of ST, one per path, each checked to open as a
 * recording (one that does not is listed with its error, after a
 * warning).  Returns how many did. */
size_t srv_files_open(struct srv_state *st, char *const *paths, size_t n);
void srv_files_free(struct srv_state *st);
/* The loader's thread: the first loads, then loads again of the files that
 * grow.  NULL after an error message. */
struct srv_loader *srv_loader_start(struct srv_state *st);
/* Ends it, at the next chunk of a load under way. */
void srv_loader_stop(struct srv_loader *ld);

/* symbolize.c: the sites of P symbolized into SP, saying so in PR. */
void srv_proc_symbolize(struct srv_proc *sp, const struct mt_process *p, struct mt_progress *pr);

/* A query parameter, as libmicrohttpd decoded it (VALUE may be NULL). */
struct srv_param {
	const char *key, *value;
};

struct srv_query {
	struct srv_param *v;
	size_t n;
};

/* What a handler answers.  BODY is malloc'ed (or NULL when LEN is 0). */
struct srv_reply {
	int status;
	int set_cookie; /* the token came as a parameter: hand it over as a cookie */
	const char *type;
	char *body;
	size_t len;
	char filename[160]; /* non-empty: served as an attachment of that name */
	const char *policy; /* a Content-Security-Policy header, or NULL */
};

/* A JSON error {"error": MESSAGE} with STATUS. */
void srv_error(struct srv_reply *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same as an HTML page (the caller sets its policy). */
void srv_error_page(struct srv_reply *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The REST API: /list and /data/<id>/... split into path segments SEG.
 * /list is answered in R at once.  A /data request is parsed: its answer
 * is then written by srv_api_run, in another thread; NULL after an error
 * in R (or for /list). */
struct req *srv_api(struct srv_state *st, char *const *seg, int nseg, const struct srv_query *q,
		    struct srv_reply *r);
/* Writes the answer of X to OUT: 0, or -1 after srv_error in X's reply. */
int srv_api_run(struct req *x, FILE *out);
void srv_api_free(struct req *x);
/* From here on X's errors go to R (the thread's own reply). */
void srv_api_set_reply(struct req *x, struct srv_reply *r);

/* Serves ST on the listening socket FD (of address family FAMILY) until
 * SIGINT, SIGTERM or SIGHUP.  Returns 0, or -1 after an error message. */
int srv_run(struct srv_state *st, int fd, int family);

#endif
