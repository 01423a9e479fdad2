/*
 * guard.c - see guard.h.
 *
 * libmicrohttpd's own limits do not do it: its per-IP limit counts one
 * client for every local user (they all connect from 127.0.0.1), or one
 * per address for a local user who binds a few of the 16 million of
 * 127/8; its connection timeout is an idle one, which a header line every
 * few seconds resets.  So a client here is the user owning the peer's
 * socket when it is on this machine (base/net.h: mt_net_peer_uid), else
 * its address (an IPv6 /64: what one host is given); and a watchdog
 * thread ends the connections whose headers are late.
 *
 * A connection is ended by shutdown(2) on a duplicate of its socket, taken
 * when it started: the duplicate is ours until libmicrohttpd says the
 * connection closed, so the shutdown can never reach another connection
 * that was given the same descriptor number meanwhile.  Its thread then
 * reads the end of the stream and closes the connection itself.
 */
#include "guard.h"
#include "base/clock.h"
#include "base/net.h"
#include "base/util.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Who a connection is: a local user or an address. */
struct client {
	int kind; /* 0: not counted (refused), 1: a uid, 2: an address */
	unsigned char id[16];
};

struct conn {
	struct conn *prev, *next;
	int fd; /* our duplicate of its socket */
	struct client who;
	uint64_t deadline; /* mt_now_ns() by which the headers must be in; 0: none */
};

struct srv_guard {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t watchdog;
	struct conn *conns;
	unsigned per_client;
	uint64_t header_ns;
	int stopping;
};

static void identify(int fd, struct client *who)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	unsigned uid;
	memset(who, 0, sizeof *who);
	if (mt_net_peer_uid(fd, &uid) == 0) {
		who->kind = 1;
		memcpy(who->id, &uid, sizeof uid);
	} else if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0) {
		who->kind = 2;
		const struct in6_addr *a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;
		if (ss.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(a6))
			memcpy(who->id, a6->s6_addr + 12, 4); /* as the IPv4 address */
		else if (ss.ss_family == AF_INET6)
			memcpy(who->id, a6, 8);
		else if (ss.ss_family == AF_INET)
			memcpy(who->id, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	}
}

/* Under the lock: how many connections WHO holds. */
static unsigned held(const struct srv_guard *g, const struct client *who)
{
	unsigned n = 0;
	for (const struct conn *k = g->conns; k; k = k->next)
		n += k->who.kind == who->kind && !memcmp(k->who.id, who->id, sizeof who->id);
	return n;
}

void srv_guard_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct srv_guard *g = cls;
	struct conn *k = *socket_context;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!k)
			return;
		pthread_mutex_lock(&g->lock);
		if (k->prev)
			k->prev->next = k->next;
		else
			g->conns = k->next;
		if (k->next)
			k->next->prev = k->prev;
		pthread_mutex_unlock(&g->lock);
		close(k->fd);
		free(k);
		*socket_context = NULL;
		return;
	}
	const union MHD_ConnectionInfo *ci =
		mt_mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int fd = ci ? fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (fd < 0)
		return; /* out of descriptors: libmicrohttpd's own limits still hold */
	k = xcalloc(1, sizeof *k);
	k->fd = fd;
	identify(fd, &k->who);
	pthread_mutex_lock(&g->lock);
	k->deadline = mt_now_ns() + g->header_ns;
	if (g->per_client && k->who.kind && held(g, &k->who) >= g->per_client) {
		/* a client at its share makes room by ending its own oldest
		 * connection still waiting for a request, never one being
		 * answered: it can lock out nobody, itself included */
		struct conn *old = NULL;
		for (struct conn *o = g->conns; o; o = o->next)
			if (o->deadline && o->who.kind == k->who.kind &&
			    !memcmp(o->who.id, k->who.id, sizeof k->who.id))
				old = o; /* (the list is newest first) */
		if (!old)
			old = k;
		old->who.kind = 0; /* no longer counted */
		old->deadline = 0;
		shutdown(old->fd, SHUT_RDWR);
	}
	k->next = g->conns;
	if (g->conns)
		g->conns->prev = k;
	g->conns = k;
	pthread_mutex_unlock(&g->lock);
	*socket_context = k;
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		mt_mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static void arm(struct srv_guard *g, struct MHD_Connection *c, int on)
{
	struct conn *k = conn_of(c);
	if (!k)
		return;
	pthread_mutex_lock(&g->lock);
	if (k->who.kind)
		k->deadline = on ? mt_now_ns() + g->header_ns : 0;
	pthread_mutex_unlock(&g->lock);
}

void srv_guard_headers(struct srv_guard *g, struct MHD_Connection *c)
{
	arm(g, c, 0);
}

void srv_guard_done(struct srv_guard *g, struct MHD_Connection *c)
{
	arm(g, c, 1);
}

static void *watchdog_main(void *arg)
{
	struct srv_guard *g = arg;
	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		uint64_t now = mt_now_ns();
		for (struct conn *k = g->conns; k; k = k->next)
			if (k->deadline && k->deadline <= now) {
				k->deadline = 0;
				shutdown(k->fd, SHUT_RDWR);
			}
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 250 * 1000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&g->cond, &g->lock, &t);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

struct srv_guard *srv_guard_start(unsigned per_client, unsigned header_s)
{
	struct srv_guard *g = xcalloc(1, sizeof *g);
	g->per_client = per_client;
	g->header_ns = (uint64_t)header_s * 1000000000ull;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	if (pthread_create(&g->watchdog, NULL, watchdog_main, g) != 0) {
		mt_error("cannot start the server's watchdog thread");
		pthread_mutex_destroy(&g->lock);
		pthread_cond_destroy(&g->cond);
		free(g);
		return NULL;
	}
	return g;
}

/* After the daemon stopped: every connection has been closed (and freed). */
void srv_guard_stop(struct srv_guard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = 1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->watchdog, NULL);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
}
