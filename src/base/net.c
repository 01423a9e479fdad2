/*
 * net.c - see net.h.  The standalone shim links this file too (its
 * MEMTRACE_ENABLE_SERVER): it calls nothing else of base/ and no stdio
 * but snprintf.
 */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int mt_net_port(const char *v, char *port, size_t plen)
{
	if (!v || !*v || strlen(v) > 5 || strspn(v, "0123456789") != strlen(v))
		return -1;
	unsigned long n = 0;
	for (const char *c = v; *c; c++)
		n = n * 10 + (unsigned long)(*c - '0');
	if (n > 65535)
		return -1;
	snprintf(port, plen, "%s", v);
	return 0;
}

int mt_net_parse(const char *v, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;
	if (!v || !*v)
		return -1;
	if (strspn(v, "0123456789") == strlen(v))
		return mt_net_port(v, port, plen);
	if (v[0] == '[') {
		const char *end = strchr(v, ']');
		if (!end || end == v + 1 || (end[1] && end[1] != ':') || (size_t)(end - v) > hlen)
			return -1;
		snprintf(host, hlen, "%.*s", (int)(end - v - 1), v + 1);
		return end[1] ? mt_net_port(end + 2, port, plen) : 0;
	}
	colon = strchr(v, ':');
	if (colon && strchr(colon + 1, ':'))
		return -1; /* a bare IPv6 address: its colons are ambiguous */
	size_t n = colon ? (size_t)(colon - v) : strlen(v);
	if (!n || n >= hlen)
		return -1;
	snprintf(host, hlen, "%.*s", (int)n, v);
	return colon ? mt_net_port(colon + 1, port, plen) : 0;
}

int mt_net_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return 0;
}

int mt_net_is_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	return ss->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

const char *mt_net_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof a);
		snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof a);
		snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
	}
	return buf;
}

/* Binds (LISTEN) or connects a TCP socket to the first address of
 * HOST:PORT that takes it. */
static int open_socket(const char *host, const char *port, int listening,
		       struct sockaddr_storage *bound, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | (listening ? AI_PASSIVE : 0) },
			*res, *ai;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "%s %s:%s: %s",
			 listening ? "cannot listen on" : "cannot reach", host, port,
			 gai_strerror(rc));
		return -1;
	}
	int fd = -1, e = 0;
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = e ? e : errno;
			continue;
		}
		int one = 1;
		/* a restarted listener may take the port of one that just
		 * stopped; one still running keeps it (bind fails) */
		if (listening)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (listening ? bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 511) < 0 :
				connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			e = e ? e : errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "%s %s:%s: %s",
			 listening ? "cannot listen on" : "cannot reach", host, port,
			 strerror(e ? e : EADDRNOTAVAIL));
		errno = e ? e : EADDRNOTAVAIL; /* the shim moves on from EADDRINUSE */
		return -1;
	}
	if (bound) {
		socklen_t sl = sizeof *bound;
		getsockname(fd, (struct sockaddr *)bound, &sl);
	}
	return fd;
}

int mt_net_listen(const char *host, const char *port, struct sockaddr_storage *bound, char *err,
		  size_t errlen)
{
	return open_socket(host, port, 1, bound, err, errlen);
}

int mt_net_connect(const char *host, const char *port, char *err, size_t errlen)
{
	return open_socket(host, port, 0, NULL, err, errlen);
}

/* The peer's socket, as inet_diag names it: seen from its side, our end is
 * its destination.  Returns its address family, or -1 for one it does not
 * take. */
static int peer_id(const struct sockaddr_storage *me, const struct sockaddr_storage *peer,
		   struct inet_diag_sockid *id)
{
	if (me->ss_family == AF_INET) {
		const struct sockaddr_in *m = (const void *)me, *p = (const void *)peer;
		id->idiag_sport = p->sin_port;
		id->idiag_dport = m->sin_port;
		memcpy(id->idiag_src, &p->sin_addr, 4);
		memcpy(id->idiag_dst, &m->sin_addr, 4);
	} else if (me->ss_family == AF_INET6) {
		const struct sockaddr_in6 *m = (const void *)me, *p = (const void *)peer;
		if (IN6_IS_ADDR_V4MAPPED(&m->sin6_addr) && IN6_IS_ADDR_V4MAPPED(&p->sin6_addr)) {
			/* an IPv4 peer of a dual-stack socket: its own is IPv4 */
			id->idiag_sport = p->sin6_port;
			id->idiag_dport = m->sin6_port;
			memcpy(id->idiag_src, p->sin6_addr.s6_addr + 12, 4);
			memcpy(id->idiag_dst, m->sin6_addr.s6_addr + 12, 4);
			id->idiag_cookie[0] = id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
			return AF_INET;
		}
		id->idiag_sport = p->sin6_port;
		id->idiag_dport = m->sin6_port;
		memcpy(id->idiag_src, &p->sin6_addr, 16);
		memcpy(id->idiag_dst, &m->sin6_addr, 16);
	} else {
		return -1;
	}
	id->idiag_cookie[0] = id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	return me->ss_family;
}

int mt_net_peer_uid(int fd, unsigned *uid)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof me, pl = sizeof peer;
	if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || me.ss_family != peer.ss_family)
		return -1;
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} q = { .h = { .nlmsg_len = sizeof q,
		       .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u } };
	int family = peer_id(&me, &peer, &q.r.id);
	if (family < 0)
		return -1;
	q.r.sdiag_family = (unsigned char)family;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -1;
	union {
		struct nlmsghdr h;
		char b[1024];
	} a;
	struct pollfd p = { .fd = nl, .events = POLLIN };
	ssize_t n = -1;
	if (send(nl, &q, sizeof q, 0) == (ssize_t)sizeof q && poll(&p, 1, 1000) == 1)
		n = recv(nl, &a, sizeof a, 0);
	close(nl);
	/* one answer, the socket asked for, or an error (not on this machine) */
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) ||
	    a.h.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    a.h.nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return -1;
	const struct inet_diag_msg *m = NLMSG_DATA(&a.h);
	*uid = m->idiag_uid;
	return 0;
}
