/*
 * net.h - the TCP addresses memtrace listens on and connects to (server
 * --listen, record --listen, gather): parsing "HOST:PORT" the same way
 * everywhere, binding, connecting, and what kind of address was bound.
 */
#ifndef MEMTRACE_NET_H
#define MEMTRACE_NET_H

#include <stddef.h>
#include <sys/socket.h>

/* "HOST:PORT", "[IPV6]:PORT", "PORT" or "HOST": HOST and PORT are set
 * from what V gives and keep the caller's defaults otherwise.  Returns 0,
 * or -1 when V is not such an address. */
int mt_net_parse(const char *v, char *host, size_t hlen, char *port, size_t plen);
/* The same for a port alone (1 to 5 digits, at most 65535). */
int mt_net_port(const char *v, char *port, size_t plen);

int mt_net_is_loopback(const struct sockaddr_storage *ss);
int mt_net_is_wildcard(const struct sockaddr_storage *ss);
/* "1.2.3.4:5" or "[::1]:5" into BUF. */
const char *mt_net_str(const struct sockaddr_storage *ss, char *buf, size_t len);

/* A TCP socket bound to HOST:PORT and listening, its address in *BOUND.
 * Returns the fd, or -1 with a one-line reason in ERR and errno set. */
int mt_net_listen(const char *host, const char *port, struct sockaddr_storage *bound, char *err,
		  size_t errlen);
/* A TCP connection to HOST:PORT: the fd, or -1 with a reason in ERR. */
int mt_net_connect(const char *host, const char *port, char *err, size_t errlen);

/* The user owning the other end of the TCP connection FD when that end is
 * a socket of this machine (of this network namespace): 0 with *UID, or -1
 * when it is not (a remote peer) or cannot be told.  A loopback address
 * says nothing about who connects (every local user has them all, the
 * whole of 127/8), the owner of the peer's socket does: the kernel's
 * sock_diag interface (what ss(8) reads) finds it by the connection's
 * addresses, unprivileged. */
int mt_net_peer_uid(int fd, unsigned *uid);

#endif
