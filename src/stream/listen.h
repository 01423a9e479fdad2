/*
 * listen.h - `memtrace record --listen`: serving the recording to one
 * gatherer at a time while it is written (wire.h), and announcing it on the
 * LAN with --broadcast.
 */
#ifndef MEMTRACE_LISTEN_H
#define MEMTRACE_LISTEN_H

#include <stddef.h>

struct mt_listener;

struct mt_listen_opts {
	const char *addr;  /* "HOST:PORT", "PORT" (loopback) or "HOST" */
	const char *token; /* NULL: one is made up when off loopback */
	int broadcast;	   /* announce on the interfaces listened on */
	const char *name;  /* the command, for the gatherer's file name */
	int pid;	   /* the command's process, in announcements */
	int quiet;	   /* say only what a gatherer needs (a made-up token) */
};

/* Whether ADDR is a --listen address and TOKEN a token (NULL: none), and
 * whether --broadcast can go with it: 0, or -1 with the usage error in
 * ERR. */
int mt_listen_check(const struct mt_listen_opts *o, char *err, size_t errlen);

/* Starts serving FILE (being written).  Returns NULL with a one-line reason
 * in ERR.  Prints where it listens (and the token) on stderr. */
struct mt_listener *mt_listen_start(const struct mt_listen_opts *o, const char *file, char *err,
				    size_t errlen);
/* The recording is complete: the gatherer gets the rest and the end. */
void mt_listen_complete(struct mt_listener *l);
/* Waits until a gatherer has the whole recording or *STOP is set (a signal
 * handler's flag).  Returns 1 when it was delivered. */
int mt_listen_wait(struct mt_listener *l, const volatile int *stop);
void mt_listen_free(struct mt_listener *l);

#endif
