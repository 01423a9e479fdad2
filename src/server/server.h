/*
 * server.h - `memtrace server`: what the HTTP plumbing (server.c), the REST
 * API (api.c and its api_*.c) and the command (cmd_server.c) share.
 *
 * Thread model: libmicrohttpd runs one thread per connection.  The loaded
 * recordings and their symbolized sites are read-only once serving starts,
 * so requests that only read them run in parallel.  A symbolizer's caches
 * are not thread-safe, and reading a recording file again (filters,
 * replays, exports) costs a load's memory: both run under srv_state.heavy,
 * one at a time.  The exports and rankings keep their state per call.
 */
#ifndef MEMTRACE_SERVER_H
#define MEMTRACE_SERVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse/select.h"
#include "analyse/sites.h"
#include "analyse/symbols.h"

/* The frames kept per site: as many as are symbolized anywhere. */

/* One process of a loaded recording, its sites symbolized once at load. */
struct srv_proc {
	struct mt_symbolizer *sym; /* after loading: only under srv_state.heavy */
	struct mt_frame *frames;   /* every site's frames, leaf first; strings are sym's */
	uint32_t *site_off, *site_len;
	size_t nsites;
	uint32_t max_depth;
};

struct srv_file {
	const char *path;
	struct mt_selection sel; /* unfiltered: sel.all is the whole recording */
	struct srv_proc *procs;	 /* per process of sel.all, same order */
};

struct srv_state {
	struct srv_file *files;
	size_t nfiles;
	pthread_mutex_t heavy;
	int loopback;  /* listening on a loopback address only: Host is checked */
	char url[128]; /* where to point a browser */
};

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
	const char *type;
	char *body;
	size_t len;
	char filename[160]; /* non-empty: served as an attachment of that name */
	const char *policy; /* a Content-Security-Policy header, or NULL */
};

/* A JSON error {"error": MESSAGE} with STATUS. */
void srv_error(struct srv_reply *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The REST API: /list and /data/<id>/... split into path segments SEG. */
void srv_api(struct srv_state *st, char *const *seg, int nseg, const struct srv_query *q,
	     struct srv_reply *r);

/* Serves ST on the listening socket FD (of address family FAMILY) until
 * SIGINT, SIGTERM or SIGHUP.  Returns 0, or -1 after an error message. */
int srv_run(struct srv_state *st, int fd, int family);

#endif
