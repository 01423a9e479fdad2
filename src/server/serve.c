/*
 * serve.c - `memtrace server` from its options to its end: the listening
 * socket (first: a busy port is known before minutes of loading), the
 * access token off loopback, the recordings handed to the loader (load.c),
 * and the requests served (server.c) until a stop signal.
 */
#include "server.h"
#include "base/net.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* The URL a browser on this machine opens for the bound address SS. */
static void make_url(struct srv_state *st, const struct sockaddr_storage *ss)
{
	char addr[INET6_ADDRSTRLEN] = "";
	unsigned port;
	int v6 = ss->ss_family == AF_INET6;
	if (v6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof addr);
		port = ntohs(s6->sin6_port);
		if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			snprintf(addr, sizeof addr, "::1");
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof addr);
		port = ntohs(s4->sin_port);
		if (s4->sin_addr.s_addr == htonl(INADDR_ANY))
			snprintf(addr, sizeof addr, "127.0.0.1");
	}
	snprintf(st->url, sizeof st->url, "http://%s%s%s:%u/", v6 ? "[" : "", addr, v6 ? "]" : "",
		 port);
}

/* Binds and listens on HOST:PORT.  Returns the socket, or -1 after an
 * error message. */
static int open_listener(struct srv_state *st, const char *host, const char *port, int *family)
{
	struct sockaddr_storage ss;
	char err[512];
	int fd = mt_net_listen(host, port, &ss, err, sizeof err);
	if (fd < 0) {
		mt_error("%s", err);
		return -1;
	}
	*family = ss.ss_family;
	st->loopback = mt_net_is_loopback(&ss);
	st->wildcard = mt_net_is_wildcard(&ss);
	snprintf(st->host, sizeof st->host, "%s", host);
	if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, st->bound,
			  sizeof st->bound);
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, st->bound,
			  sizeof st->bound);
	make_url(st, &ss);
	return fd;
}

/* A request's memory budget when none is given: a quarter of the machine
 * shared by the workers that may run at once, from 256 MiB to 4 GiB. */
static uint64_t default_request_bytes(unsigned nworkers)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t b = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 / nworkers :
					     (1ull << 30);
	return b < (256ull << 20) ? 256ull << 20 : b > (4ull << 30) ? 4ull << 30 : b;
}

/* The access token of a server off loopback: --token, MEMTRACE_TOKEN, or
 * 128 random bits.  Returns 0, or -1 after an error message. */
static int make_token(struct srv_state *st, const char *given, char *buf, size_t len)
{
	const char *env = getenv("MEMTRACE_TOKEN");
	int from_env = !given && env && *env;
	if (from_env)
		given = env;
	if (given) {
		/* (--token was checked as it was parsed, cli/cmd_server.c) */
		size_t n = strlen(given);
		if (n < 16 || n > 64 || n >= len || strspn(given, SRV_TOKEN_CHARS) != n) {
			mt_error(
				"%s: the access token must be 16 to 64 letters, digits, '-' or '_'",
				from_env ? "MEMTRACE_TOKEN" : "--token");
			return -1;
		}
		snprintf(buf, len, "%s", given);
	} else {
		unsigned char r[16];
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
			mt_error("cannot make an access token: %s", strerror(errno));
			return -1;
		}
		for (size_t i = 0; i < sizeof r; i++)
			snprintf(buf + 2 * i, len - 2 * i, "%02x", r[i]);
	}
	st->token = buf;
	size_t u = strlen(st->url);
	snprintf(st->url + u, sizeof st->url - u, "?token=%s", buf);
	return 0;
}

int srv_serve(const struct srv_options *o, char *const *paths, size_t npaths)
{
	struct srv_state st = { .timeout_s = o->timeout_s,
				.max_connections = o->max_connections,
				.client_connections = o->client_connections };
	char token[80];
	int family = AF_INET, status = MT_EXIT_RUNTIME;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	mt_catch_stop_signals();
	/* the port first: a busy one is known before minutes of loading */
	int fd = open_listener(&st, o->host, o->port, &family);
	if (fd < 0)
		return MT_EXIT_RUNTIME;
	if (!st.loopback && make_token(&st, o->token, token, sizeof token) < 0) {
		close(fd);
		return MT_EXIT_RUNTIME;
	}
	st.nworkers = ncpu < 2 ? 2 : ncpu > 16 ? 16 : (unsigned)ncpu;
	pthread_mutex_init(&st.symlock, NULL);
	pthread_mutex_init(&st.qlock, NULL);
	sem_init(&st.slots, 0, st.nworkers);
	st.request_bytes = o->request_mib ? o->request_mib << 20 :
					    default_request_bytes(st.nworkers);
	/* a file that does not load is listed with its error; the others
	 * are served, from the start: they load in the loader's thread
	 * while /list says how far it got, and requests wait for them */
	if (!srv_files_open(&st, paths, npaths)) {
		close(fd);
		mt_error("no recording loaded: %s%s", st.files[0].error,
			 npaths > 1 ? " (and the others neither)" : "");
		goto done;
	}
	struct srv_loader *ld = srv_loader_start(&st);
	if (!ld) {
		close(fd);
		goto done;
	}
	status = srv_run(&st, fd, family) == 0 ? MT_EXIT_OK : MT_EXIT_RUNTIME;
	srv_loader_stop(ld);
done:
	srv_files_free(&st);
	sem_destroy(&st.slots);
	pthread_mutex_destroy(&st.symlock);
	pthread_mutex_destroy(&st.qlock);
	return status;
}
