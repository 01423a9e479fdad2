/*
 * gather.h - `memtrace gather`: taking a recording from a `memtrace record
 * --listen` on another machine as it is written (wire.h), resuming where
 * it stopped after a lost connection or a restart, and finding recorders
 * that announce themselves on the LAN.
 */
#ifndef MEMTRACE_GATHER_H
#define MEMTRACE_GATHER_H

#include <stddef.h>

struct mt_gather {
	char host[256], port[8];
	const char *token; /* NULL: none */
	char out[4096];	   /* the file written */
	char session[64];  /* "" until the recorder said it (or a resumed file did) */
	char name[64];	   /* the recorder's command */
	double retry;	   /* seconds to keep trying to reconnect */
	int progress;	   /* say how far it is (base/progress.h) */
	int quiet;
	/* results */
	unsigned long long bytes;
	char err[4700];
};

/* Gathers G->host:port into G->out (created, or resumed when a sidecar
 * G->out.gather says it is a gathering in progress).  Returns 0 when the
 * whole recording is on disk, or -1 with a one-line reason in G->err. */
int mt_gather_run(struct mt_gather *g);

/* An announcing recorder heard on the LAN. */
struct mt_heard {
	char host[64], port[8], session[64], name[64];
	int pid;
};

/* Listens WAIT seconds on UDP PORT for announcements; returns how many
 * distinct recorders were heard (at most MAX, in *OUT), or -1 with a reason
 * in ERR. */
int mt_gather_listen(int port, double wait, struct mt_heard *out, int max, char *err,
		     size_t errlen);

#endif
