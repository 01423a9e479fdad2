/*
 * guard.h - who holds the connections of `memtrace server`.  A client may
 * hold a share of them only, and a connection must finish its request's
 * headers within a deadline of its start: slow clients, however many
 * connections they open and however steadily they trickle header lines,
 * cannot lock another client out (guard.c).
 */
#ifndef MEMTRACE_SERVER_GUARD_H
#define MEMTRACE_SERVER_GUARD_H

#include "mhd.h"

struct srv_guard;

/* A guard letting each client hold PER_CLIENT connections (0: any number)
 * and giving each request HEADER_S seconds for its headers.  NULL after an
 * error message. */
struct srv_guard *srv_guard_start(unsigned per_client, unsigned header_s);
void srv_guard_stop(struct srv_guard *g);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION, with the guard as CLS. */
void srv_guard_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code);
/* The headers of C's request are in: its deadline is off until the answer
 * is sent (srv_guard_done), however long that takes. */
void srv_guard_headers(struct srv_guard *g, struct MHD_Connection *c);
/* C's answer went: the next request on it has the deadline again. */
void srv_guard_done(struct srv_guard *g, struct MHD_Connection *c);

#endif
