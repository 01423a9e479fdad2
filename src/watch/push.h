/*
 * push.h - sending top's interval profiles to a profile store as they are
 * made: Grafana Pyroscope's /ingest, Parca's /profiles/writeraw, or
 * OpenTelemetry's OTLP/HTTP profiles.  A thread of its own sends them
 * (libcurl, TLS included) from a bounded queue, retrying with back-off, so
 * that a store that is slow, down or failing never holds up the tracing:
 * what cannot wait its turn is dropped, counted and said.
 */
#ifndef MEMTRACE_PUSH_H
#define MEMTRACE_PUSH_H

#include <stddef.h>
#include <stdint.h>

enum mt_push_format { MT_PUSH_PYROSCOPE, MT_PUSH_PARCA, MT_PUSH_OTLP };

struct mt_push_opts {
	const char *url; /* the store's base URL: the protocol's path is added */
	enum mt_push_format format;
	const char *const *headers; /* "Name: value", sent with every request */
	size_t nheaders;
	const char *token; /* NULL, or sent as "Authorization: Bearer TOKEN" */
	const char *app;   /* the application's name (NULL: each process's own) */
	size_t queue;	   /* profiles waiting at most */
	int attempts;	   /* per profile, the first included */
	double backoff_s;  /* the wait before the second attempt, doubled after */
	double timeout_s;  /* per request */
};

/* One profile: BODY[0..LEN) is owned by the sender once submitted. */
struct mt_push_profile {
	uint8_t *body; /* gzipped pprof, or for OTLP an ExportProfilesServiceRequest */
	size_t len;
	uint64_t from_ns, until_ns; /* Unix time */
	uint32_t pid;
	char name[64]; /* the process's name, as it was read */
};

struct mt_push_counts {
	uint64_t made;	  /* submitted */
	uint64_t sent;	  /* accepted by the store (HTTP 2xx) */
	uint64_t dropped; /* the queue was full */
	uint64_t failed;  /* refused, or every attempt failed */
	uint64_t unsent;  /* still waiting when the sender was stopped */
};

struct mt_push;

/* Starts the sender.  NULL, with a one-line reason in ERR, when the URL or
 * libcurl cannot be used. */
struct mt_push *mt_push_start(const struct mt_push_opts *o, char *err, size_t errlen);
/* Queues PROF (its body is the sender's from now on), or drops it when the
 * queue is full.  Never waits for the network. */
void mt_push_submit(struct mt_push *p, struct mt_push_profile *prof);
/* Gives the queue up to DRAIN_S seconds to empty, then abandons what is
 * left (a request under way included), stops the thread and fills C. */
void mt_push_stop(struct mt_push *p, double drain_s, struct mt_push_counts *c);

#endif
