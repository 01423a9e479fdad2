/*
 * serve.c - MEMTRACE_ENABLE_SERVER: the standalone shim serving its own
 * recording to `memtrace gather` while the program runs, as `memtrace
 * record --listen` does (the same protocol and code: format/wire.c), with
 * bytehound's variables.
 *
 * What is served is the output file, read back as the shim writes it: the
 * file is the buffer, so a gatherer that is slow, or loses its connection
 * and comes back, misses nothing while the process lives (it asks for the
 * rest from the end of what it has); once the process has ended, what it
 * did not take is in the file on disk.
 *
 * The listener is started lazily, on the flusher's thread (channel.c) at
 * its first tick, not in the constructor: binding and name lookups stay out
 * of the program's start-up.  Its thread is the shim's: signals blocked,
 * and marked as inside the shim (ENTER, from preload.c), so that what libc
 * allocates for it (getaddrinfo, getifaddrs) passes through unrecorded;
 * its own buffers are mapped.  It takes no lock the hooks take.
 *
 * Bound to loopback unless MEMTRACE_LISTEN names another address; off
 * loopback a gatherer must give the token (MEMTRACE_TOKEN, or one made up
 * and printed on stderr), on loopback without one it must be the program's
 * own user or root (wire.h).  The port is MEMTRACE_BASE_SERVER_PORT (8100),
 * or the next free one when it is taken, as bytehound does, so that the
 * processes of a program (MEMTRACE_FOLLOW_FORKS) each get their own: a fork
 * child does not inherit its parent's listener (it closes its copies of its
 * descriptors) and, when it is traced, starts its own on its first tick.
 *
 * The child closes its copies in its fork handler, but the parent's fork
 * returns without waiting for the child to run at all: a parent that ended
 * at once left a child, not yet scheduled, holding the port.  So while a
 * listener is up, fork hands the child a pipe's write end and the parent
 * waits for its end of file: the child closes the pipe after the server's
 * descriptors (or by exec or exit), and a failed fork has no child to wait
 * for.  The descriptors the server opens on its own thread (the listener,
 * an accepted gatherer) are opened and recorded under FD_MU, which fork
 * takes too, so that no child gets a copy it does not know about.
 */
#include "shim.h"
#include "base/net.h"
#include "format/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Ports tried above the base one when it is taken. */
#define PORT_TRIES 100
/* At exit, a gatherer being served gets this long to take the rest. */
#define FINISH_WAIT_MS 30000

int mt_serve_pending;
static void (*enter_fn)(void);
static int listen_fd = -1, file_fd = -1, announce_fd = -1;
static pthread_mutex_t fd_mu = PTHREAD_MUTEX_INITIALIZER;
/* the gatherers connected (the one served too), on the server's thread;
 * set up (its slots -1) by mt_serve_init */
static struct mt_wire_pending pending;
static int pending_ready;
static int fork_pipe[2] = { -1, -1 }; /* between fork's handlers, under FD_MU */
static struct mt_fd_id listen_id, file_id, announce_id;
static struct sockaddr_storage bound;
static char token[MT_WIRE_TOKEN_MAX + 1], session[17], name[64];
static uint8_t *frame_buf;
/* Between the server's thread and the exiting one: atomics only. */
static int complete, serving, delivered, stopped;

/* The descriptors of PENDING are opened and closed under FD_MU. */
static void pending_guard(int lock)
{
	if (lock)
		pthread_mutex_lock(&fd_mu);
	else
		pthread_mutex_unlock(&fd_mu);
}

void mt_serve_init(void (*enter)(void))
{
	enter_fn = enter;
	mt_wire_pending_init(&pending, pending_guard);
	pending_ready = 1;
	mt_serve_pending = mt_cfg.enable_server && !mt_cfg.connect;
}

static int source_state(void *ctx)
{
	(void)ctx;
	if (!mt_fd_is(listen_fd, &listen_id) || !mt_fd_is(file_fd, &file_id))
		return -1; /* the program closed them (a daemon closing all) */
	return __atomic_load_n(&complete, __ATOMIC_ACQUIRE);
}

static void *server_main(void *arg)
{
	(void)arg;
	if (enter_fn)
		enter_fn();
	struct mt_wire_source src = { .listen_fd = listen_fd,
				      .file = file_fd,
				      .token = token,
				      .owner = (unsigned)geteuid(),
				      .session = session,
				      .name = name,
				      .buf = frame_buf,
				      .state = source_state };
	char msg[MT_WIRE_LINE_MAX];
	if (announce_fd >= 0)
		mt_wire_announcement(msg, sizeof msg,
				     ntohs(((const struct sockaddr_in *)&bound)->sin_port), session,
				     (int)getpid(), name);
	uint64_t announced = 0;
	while (!__atomic_load_n(&delivered, __ATOMIC_ACQUIRE)) {
		if (!mt_fd_is(listen_fd, &listen_id) || !mt_fd_is(file_fd, &file_id))
			break;
		if (announce_fd >= 0 && mt_fd_is(announce_fd, &announce_id) &&
		    mt_now() - announced >= 1000000000ull) {
			mt_wire_announce(announce_fd, &bound, msg);
			announced = mt_now();
		}
		/* (the listener is non-blocking: a connection gone since
		 * the poll does not hold FD_MU, and forks, in accept) */
		int i = mt_wire_pending_next(&pending, listen_fd, 100);
		if (i < 0)
			continue;
		/* a gatherer that stops reading must not hold the program at
		 * its exit forever */
		int c = pending.fd[i];
		struct timeval tv = { .tv_sec = 30 };
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		__atomic_store_n(&serving, 1, __ATOMIC_RELEASE);
		enum mt_wire_served r = mt_wire_serve(&src, c, pending.line[i]);
		if (r == MT_WIRE_NO_TOKEN || r == MT_WIRE_BAD_TOKEN)
			mt_log(1, "server: refused a gatherer: %s token",
			       r == MT_WIRE_BAD_TOKEN ? "wrong" : "no");
		if (r == MT_WIRE_NOT_OWNER)
			mt_log(1, "server: refused a gatherer of another user (no MEMTRACE_TOKEN)");
		if (r == MT_WIRE_DELIVERED)
			__atomic_store_n(&delivered, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&serving, 0, __ATOMIC_RELEASE);
		mt_wire_pending_drop(&pending, i);
	}
	mt_wire_pending_close(&pending);
	__atomic_store_n(&stopped, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Binds HOST at PORT, or the next free port above it: the fd, or -1 (said). */
static int bind_port(const char *host, unsigned port, int port_given)
{
	char err[256], p[8];
	for (unsigned i = 0; i < PORT_TRIES && port + i <= 65535; i++) {
		snprintf(p, sizeof p, "%u", port + i);
		int fd = mt_net_listen(host, p, &bound, err, sizeof err);
		if (fd >= 0)
			return fd;
		/* an explicit MEMTRACE_LISTEN port, or any port (0), is that
		 * port: only bytehound's base port moves on */
		if (errno != EADDRINUSE || port_given || port == 0)
			break;
	}
	mt_log(0, "server not started: %s", err);
	return -1;
}

/* Where to listen, from MEMTRACE_LISTEN and MEMTRACE_BASE_SERVER_PORT:
 * 0, or -1 (said). */
static int address(char *host, size_t hlen, unsigned *port, int *port_given)
{
	char p[8] = MT_WIRE_DEFAULT_PORT;
	snprintf(host, hlen, "127.0.0.1");
	const char *base = mt_cfg.base_server_port;
	if (base && *base && mt_net_port(base, p, sizeof p) < 0) {
		mt_log(0, "server not started: MEMTRACE_BASE_SERVER_PORT takes a port, not '%s'",
		       base);
		return -1;
	}
	char given[8] = "";
	if (mt_cfg.listen && *mt_cfg.listen &&
	    mt_net_parse(mt_cfg.listen, host, hlen, given, sizeof given) < 0) {
		mt_log(0,
		       "server not started: MEMTRACE_LISTEN takes HOST:PORT, PORT or HOST, not '%s'",
		       mt_cfg.listen);
		return -1;
	}
	*port_given = given[0] != 0;
	const char *use = given[0] ? given : p;
	*port = 0;
	for (; *use; use++)
		*port = *port * 10 + (unsigned)(*use - '0');
	if (mt_cfg.token && (!*mt_cfg.token || strlen(mt_cfg.token) > MT_WIRE_TOKEN_MAX ||
			     strpbrk(mt_cfg.token, " \t\r\n"))) {
		mt_log(0,
		       "server not started: MEMTRACE_TOKEN takes 1 to %d characters without spaces",
		       MT_WIRE_TOKEN_MAX);
		return -1;
	}
	return 0;
}

/* Opens what the server needs; 0, or -1 with everything closed again. */
static int open_server(void)
{
	char host[256];
	unsigned port;
	int port_given;
	const char *out = mt_channel_output();
	if (!out[0] || address(host, sizeof host, &port, &port_given) < 0)
		return -1;
	pthread_mutex_lock(&fd_mu);
	int fd = bind_port(host, port, port_given);
	if (fd >= 0) {
		listen_fd = mt_fd_place(fd, &listen_id);
		fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
	}
	pthread_mutex_unlock(&fd_mu);
	if (fd < 0)
		return -1;
	file_fd = mt_fd_place(open(out, O_RDONLY | O_CLOEXEC), &file_id);
	frame_buf = frame_buf ? frame_buf : mt_map(MT_WIRE_FRAME_MAX);
	if (file_fd < 0 || !frame_buf) {
		mt_log(0, "server not started: %s: %s", out, strerror(errno));
		return -1;
	}
	int loopback = mt_net_is_loopback(&bound);
	if (mt_cfg.token)
		snprintf(token, sizeof token, "%s", mt_cfg.token);
	else if (!loopback)
		mt_wire_random_hex(token, MT_WIRE_TOKEN_LEN);
	else
		token[0] = '\0';
	mt_wire_random_hex(session, 16);
	char exe[4096];
	mt_wire_clean_name(mt_read_self_exe(exe, sizeof exe) > 0 ? exe : NULL, name, sizeof name);
	if (mt_cfg.enable_broadcast) {
		int one = 1;
		if (bound.ss_family != AF_INET || loopback) {
			mt_log(0, "MEMTRACE_ENABLE_BROADCAST announces on the LAN: it needs "
				  "MEMTRACE_LISTEN on an IPv4 interface's address or 0.0.0.0; not "
				  "announced");
		} else {
			int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (u >= 0 &&
			    setsockopt(u, SOL_SOCKET, SO_BROADCAST, &one, sizeof one) == 0)
				announce_fd = mt_fd_place(u, &announce_id);
			else if (u >= 0)
				close(u);
			if (announce_fd < 0)
				mt_log(0, "MEMTRACE_ENABLE_BROADCAST: %s; not announced",
				       strerror(errno));
		}
	}
	char where[128];
	mt_net_str(&bound, where, sizeof where);
	/* said whatever MEMTRACE_LOG asks but "off": a gatherer needs it */
	if (token[0])
		mt_log(0, "streaming %s on %s%s; gather with: memtrace gather %s --token %s", out,
		       where, announce_fd >= 0 ? " (announced on the LAN)" : "", where, token);
	else
		mt_log(0, "streaming %s on %s; gather with: memtrace gather %s", out, where, where);
	return 0;
}

static void close_all(void)
{
	mt_fd_close(listen_fd, &listen_id);
	mt_fd_close(file_fd, &file_id);
	if (announce_fd >= 0)
		mt_fd_close(announce_fd, &announce_id);
	listen_fd = file_fd = announce_fd = -1;
}

void mt_serve_start(void)
{
	if (!__atomic_exchange_n(&mt_serve_pending, 0, __ATOMIC_ACQ_REL))
		return;
	if (open_server() < 0) {
		close_all();
		__atomic_store_n(&stopped, 1, __ATOMIC_RELEASE);
		return;
	}
	if (mt_shim_thread(server_main, NULL, 256 * 1024) != 0) {
		mt_log(0, "server not started: no thread for it");
		close_all();
		__atomic_store_n(&stopped, 1, __ATOMIC_RELEASE);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

void mt_serve_finish(void)
{
	/* a program too short for the flusher's first tick: start it now,
	 * if a gatherer is to be waited for */
	if (!mt_cfg.server_wait && __atomic_exchange_n(&mt_serve_pending, 0, __ATOMIC_ACQ_REL)) {
		/* asked to serve, and ended in silence: say why, and what to do
		 * (a setting that would have kept the server from starting is
		 * named instead, by address()) */
		char host[256];
		unsigned port;
		int given;
		if (address(host, sizeof host, &port, &given) == 0)
			mt_log(0,
			       "not served: the program ended before the server started (20 ms "
			       "in); MEMTRACE_SERVER_WAIT=SECONDS makes it wait for a gatherer at "
			       "exit");
	}
	if (__atomic_load_n(&mt_serve_pending, __ATOMIC_ACQUIRE)) {
		if (enter_fn)
			enter_fn(); /* (the process is ending: the thread stays marked) */
		mt_serve_start();
	}
	if (listen_fd < 0 || __atomic_load_n(&stopped, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&complete, 1, __ATOMIC_RELEASE);
	/* Wait for a gatherer being served to take the rest, or, with
	 * MEMTRACE_SERVER_WAIT, for one to come; bounded either way. */
	uint64_t wait_s = mt_cfg.server_wait < 86400 ? mt_cfg.server_wait : 86400;
	uint64_t start = mt_now(), wait_ns = wait_s * 1000000000ull;
	int told = 0;
	for (;;) {
		if (__atomic_load_n(&delivered, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&stopped, __ATOMIC_ACQUIRE))
			return;
		uint64_t waited = mt_now() - start;
		if (__atomic_load_n(&serving, __ATOMIC_ACQUIRE)) {
			if (waited >= (uint64_t)FINISH_WAIT_MS * 1000000ull + wait_ns)
				return;
		} else if (waited >= wait_ns) {
			return;
		} else if (!told++) {
			mt_log(3, "waiting up to %llu s for a gatherer (MEMTRACE_SERVER_WAIT)",
			       (unsigned long long)mt_cfg.server_wait);
		}
		sleep_ms(10);
	}
}

int mt_serve_listening(void)
{
	return listen_fd >= 0 && !__atomic_load_n(&stopped, __ATOMIC_ACQUIRE);
}

void mt_serve_before_fork(void)
{
	pthread_mutex_lock(&fd_mu);
	if (listen_fd >= 0 && pipe2(fork_pipe, O_CLOEXEC) < 0)
		fork_pipe[0] = fork_pipe[1] = -1; /* (then the child may lag) */
}

void mt_serve_after_fork_parent(void)
{
	int r = fork_pipe[0];
	/* the write end goes before FD_MU does: a fork made by another thread
	 * right after must not hand it to a child of its own */
	if (fork_pipe[1] >= 0)
		close(fork_pipe[1]);
	fork_pipe[0] = fork_pipe[1] = -1;
	pthread_mutex_unlock(&fd_mu);
	if (r < 0)
		return;
	char c;
	while (read(r, &c, 1) < 0 && errno == EINTR) {
	}
	close(r);
}

void mt_serve_after_fork_child(void)
{
	/* The parent's server serves the parent's recording: the child's
	 * copies of its descriptors go (a child holding the listening socket
	 * would keep the port after its parent ended), and a traced child
	 * (MEMTRACE_FOLLOW_FORKS) starts one of its own, on the next free
	 * port, once its own file is open. */
	close_all();
	for (int i = 0; pending_ready && i < MT_WIRE_PENDING; i++)
		if (pending.fd[i] >= 0)
			close(pending.fd[i]);
	mt_wire_pending_init(&pending, pending_guard);
	pending_ready = 1;
	/* now the parent may go on (end of file on its side of the pipe) */
	for (int i = 0; i < 2; i++)
		if (fork_pipe[i] >= 0)
			close(fork_pipe[i]);
	fork_pipe[0] = fork_pipe[1] = -1;
	/* the forking thread held it; a child made by a raw clone may have
	 * copied it held by a thread that is not here */
	fd_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	complete = serving = delivered = stopped = 0;
	mt_serve_pending = mt_cfg.enable_server && !mt_cfg.connect && mt_cfg.follow_forks;
}
