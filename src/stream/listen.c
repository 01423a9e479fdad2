/*
 * listen.c - serving a recording while it is written (listen.h, wire.h).
 *
 * One thread hears the gatherers that connect, several at once (wire.h),
 * and serves them one at a time (a second one is told the first is there:
 * two copies of one stream would each look complete and differ in what
 * they miss); another announces the recording on the LAN with --broadcast.  Only whole chunks are sent, read
 * back from the recorder's file, so the gatherer's copy is a readable
 * recording at every moment and the recorder's buffers stay its own.
 */
#include "listen.h"
#include "format/wire.h"
#include "base/net.h"
#include "base/util.h"
#include "format/format.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct mt_listener {
	int fd, file, announce_fd;
	struct sockaddr_storage bound;
	char token[MT_WIRE_TOKEN_MAX + 1]; /* "": none asked */
	int pid, quiet;
	char session[17];
	char name[64];
	pthread_t server, announcer;
	int have_announcer;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int complete, delivered, stopping, serving;
	uint8_t *buf;
};

/* The serving loop's view of the recording (wire.h): 1 complete, -1 stop. */
static int source_state(void *ctx)
{
	struct mt_listener *l = ctx;
	pthread_mutex_lock(&l->lock);
	int st = l->stopping ? -1 : l->complete;
	pthread_mutex_unlock(&l->lock);
	return st;
}

/* Serves one gatherer, which said HELLO, until it has everything or
 * leaves. */
static void serve(struct mt_listener *l, int fd, const char *hello)
{
	struct mt_wire_source src = { .listen_fd = l->fd,
				      .file = l->file,
				      .token = l->token,
				      .owner = (unsigned)geteuid(),
				      .session = l->session,
				      .name = l->name,
				      .buf = l->buf,
				      .state = source_state,
				      .ctx = l };
	enum mt_wire_served r = mt_wire_serve(&src, fd, hello);
	if (r == MT_WIRE_NO_TOKEN || r == MT_WIRE_BAD_TOKEN)
		mt_warning("--listen: refused a gatherer: %s token",
			   r == MT_WIRE_BAD_TOKEN ? "wrong" : "no");
	if (r == MT_WIRE_NOT_OWNER)
		mt_warning("--listen: refused a gatherer of another user (no --token)");
	if (r == MT_WIRE_DELIVERED) {
		pthread_mutex_lock(&l->lock);
		l->delivered = 1;
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->lock);
	}
}

static void *server_main(void *arg)
{
	struct mt_listener *l = arg;
	struct mt_wire_pending *pend = xmalloc(sizeof *pend);
	mt_wire_pending_init(pend, NULL);
	for (;;) {
		pthread_mutex_lock(&l->lock);
		int done = l->stopping || l->delivered;
		pthread_mutex_unlock(&l->lock);
		if (done)
			break;
		int i = mt_wire_pending_next(pend, l->fd, 100);
		if (i < 0)
			continue;
		/* a gatherer that stops reading must not hold the recorder
		 * past its end forever */
		struct timeval tv = { .tv_sec = 30 };
		setsockopt(pend->fd[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		pthread_mutex_lock(&l->lock);
		l->serving = 1;
		pthread_mutex_unlock(&l->lock);
		serve(l, pend->fd[i], pend->line[i]);
		pthread_mutex_lock(&l->lock);
		l->serving = 0;
		pthread_mutex_unlock(&l->lock);
		mt_wire_pending_drop(pend, i);
		/* a gatherer that came while this one was served waits in the
		 * backlog: it is told at once, not after the end */
	}
	mt_wire_pending_close(pend);
	free(pend);
	return NULL;
}

static void *announcer_main(void *arg)
{
	struct mt_listener *l = arg;
	char msg[MT_WIRE_LINE_MAX];
	unsigned port = ntohs(((const struct sockaddr_in *)&l->bound)->sin_port);
	mt_wire_announcement(msg, sizeof msg, port, l->session, l->pid, l->name);
	pthread_mutex_lock(&l->lock);
	while (!l->stopping && !l->delivered) {
		pthread_mutex_unlock(&l->lock);
		mt_wire_announce(l->announce_fd, &l->bound, msg);
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 1;
		pthread_mutex_lock(&l->lock);
		if (!l->stopping && !l->delivered)
			pthread_cond_timedwait(&l->cond, &l->lock, &t);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* Whether HOST names the loopback interface without resolving it. */
static int loopback_name(const char *host)
{
	return !strncmp(host, "127.", 4) || !strcmp(host, "localhost") || !strcmp(host, "::1");
}

int mt_listen_check(const struct mt_listen_opts *o, char *err, size_t errlen)
{
	char host[256] = "127.0.0.1", port[8] = MT_WIRE_DEFAULT_PORT;
	if (mt_net_parse(o->addr, host, sizeof host, port, sizeof port) < 0) {
		snprintf(err, errlen, "--listen takes HOST:PORT, PORT or HOST, not '%s'", o->addr);
		return -1;
	}
	if (o->token &&
	    (!*o->token || strlen(o->token) > MT_WIRE_TOKEN_MAX || strpbrk(o->token, " \t\r\n"))) {
		snprintf(err, errlen, "--token takes 1 to %d characters without spaces",
			 MT_WIRE_TOKEN_MAX);
		return -1;
	}
	if (o->broadcast && loopback_name(host)) {
		snprintf(err, errlen,
			 "--broadcast announces on the LAN: it needs --listen on an "
			 "interface's address or 0.0.0.0, not loopback");
		return -1;
	}
	return 0;
}

struct mt_listener *mt_listen_start(const struct mt_listen_opts *o, const char *file, char *err,
				    size_t errlen)
{
	char host[256] = "127.0.0.1", port[8] = MT_WIRE_DEFAULT_PORT;
	if (mt_listen_check(o, err, errlen) < 0)
		return NULL;
	mt_net_parse(o->addr, host, sizeof host, port, sizeof port);
	struct mt_listener *l = xcalloc(1, sizeof *l);
	l->fd = l->file = l->announce_fd = -1;
	l->fd = mt_net_listen(host, port, &l->bound, err, errlen);
	if (l->fd < 0)
		goto fail;
	/* (a connection gone between poll and accept must not block it) */
	fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
	l->file = open(file, O_RDONLY | O_CLOEXEC);
	if (l->file < 0) {
		snprintf(err, errlen, "%s: cannot read it back to stream it: %s", file,
			 strerror(errno));
		goto fail;
	}
	int loopback = mt_net_is_loopback(&l->bound);
	if (o->token)
		snprintf(l->token, sizeof l->token, "%s", o->token);
	else if (!loopback)
		mt_wire_random_hex(l->token, MT_WIRE_TOKEN_LEN);
	l->pid = o->pid ? o->pid : (int)getpid();
	l->quiet = o->quiet;
	mt_wire_random_hex(l->session, 16);
	mt_wire_clean_name(o->name, l->name, sizeof l->name);
	l->buf = xmalloc(MT_WIRE_FRAME_MAX);
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	if (o->broadcast) {
		if (l->bound.ss_family != AF_INET || loopback) {
			snprintf(err, errlen,
				 "--broadcast needs an IPv4 address off loopback "
				 "(--listen 0.0.0.0:PORT or an interface's address)");
			goto fail;
		}
		int one = 1;
		l->announce_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (l->announce_fd < 0 ||
		    setsockopt(l->announce_fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one) != 0) {
			snprintf(err, errlen, "--broadcast: %s", strerror(errno));
			goto fail;
		}
	}
	if (pthread_create(&l->server, NULL, server_main, l) != 0) {
		snprintf(err, errlen, "--listen: cannot start a thread");
		goto fail;
	}
	if (o->broadcast && pthread_create(&l->announcer, NULL, announcer_main, l) == 0)
		l->have_announcer = 1;
	char where[128];
	mt_net_str(&l->bound, where, sizeof where);
	/* (a made-up token is said even under -q: nobody could gather else) */
	if (l->token[0] && (!o->quiet || !o->token))
		mt_note("streaming on %s%s; gather with: memtrace gather %s --token %s", where,
			o->broadcast ? " (announced on the LAN)" : "", where, l->token);
	else if (!o->quiet)
		mt_note("streaming on %s; gather with: memtrace gather %s", where, where);
	return l;
fail:
	if (l->fd >= 0)
		close(l->fd);
	if (l->file >= 0)
		close(l->file);
	if (l->announce_fd >= 0)
		close(l->announce_fd);
	free(l->buf);
	free(l);
	return NULL;
}

void mt_listen_complete(struct mt_listener *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->complete = 1;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

int mt_listen_wait(struct mt_listener *l, const volatile int *stop)
{
	if (!l)
		return 0;
	int told = 0;
	pthread_mutex_lock(&l->lock);
	while (!l->delivered && !(stop && *stop)) {
		if (!told++ && !l->serving && !l->quiet) {
			pthread_mutex_unlock(&l->lock);
			mt_note("waiting for a gatherer to take the rest of the recording "
				"(Ctrl-C to stop)");
			pthread_mutex_lock(&l->lock);
		}
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 100 * 1000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&l->cond, &l->lock, &t);
	}
	int delivered = l->delivered;
	pthread_mutex_unlock(&l->lock);
	return delivered;
}

void mt_listen_free(struct mt_listener *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = 1;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->server, NULL);
	if (l->have_announcer)
		pthread_join(l->announcer, NULL);
	close(l->fd);
	close(l->file);
	if (l->announce_fd >= 0)
		close(l->announce_fd);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l->buf);
	free(l);
}
