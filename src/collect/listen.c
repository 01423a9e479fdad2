/*
 * listen.c - serving a recording while it is written (listen.h, wire.h).
 *
 * One thread accepts gatherers and serves them one at a time (a second
 * one is told the first is there: two copies of one stream would each
 * look complete and differ in what they miss); another announces the
 * recording on the LAN with --broadcast.  Only whole chunks are sent, read
 * back from the recorder's file, so the gatherer's copy is a readable
 * recording at every moment and the recorder's buffers stay its own.
 */
#include "listen.h"
#include "wire.h"
#include "base/net.h"
#include "base/util.h"
#include "format/format.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct mt_listener {
	int fd, file, announce_fd;
	struct sockaddr_storage bound;
	char token[MT_WIRE_TOKEN_LEN + 1]; /* "": none asked */
	char session[17];
	char name[64];
	pthread_t server, announcer;
	int have_announcer;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int complete, delivered, stopping, serving;
	uint8_t *buf;
};

static void random_hex(char *out, size_t digits)
{
	uint8_t b[64];
	size_t n = (digits + 1) / 2;
	if (getrandom(b, n, 0) != (ssize_t)n)
		for (size_t i = 0; i < n; i++) /* no entropy yet: still unique enough */
			b[i] = (uint8_t)(rand() ^ (int)time(NULL) ^ (int)getpid());
	for (size_t i = 0; i < digits; i++)
		out[i] = "0123456789abcdef"[(b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	out[digits] = '\0';
}

/* Compares without stopping at the first difference: the time a refusal
 * takes says nothing about how much of a guess was right. */
static int same_secret(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = (unsigned char)(la != lb);
	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

/* One line from FD, within 5 s: 0, or -1. */
static int read_line(int fd, char *line, size_t len)
{
	return mt_wire_line(fd, line, len, 5000);
}

/* Whether OFF is where a chunk starts (or the file's start). */
static int is_boundary(int file, uint64_t off)
{
	if (off == 0)
		return 1;
	uint64_t at = MT_FILE_HEADER_SIZE;
	uint8_t h[MT_CHUNK_HEADER_SIZE];
	while (at < off && pread(file, h, sizeof h, (off_t)at) == (ssize_t)sizeof h)
		at += sizeof h + mt_wire_chunk_len(h);
	return at == off && mt_wire_whole_chunks(file, 0) >= off;
}

static void refuse(int fd, const char *why)
{
	char line[MT_WIRE_LINE_MAX];
	int n = snprintf(line, sizeof line, "ERR %s\n", why);
	mt_wire_send(fd, line, (size_t)n);
}

/* Waits up to MS for the recording to grow or end, or the gatherer to
 * leave: 0 to go on, -1 when it left.  Another gatherer coming meanwhile is
 * told at once that this one is there. */
static int wait_more(struct mt_listener *l, int fd, int ms)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = l->fd, .events = POLLIN } };
	if (poll(p, 2, ms) <= 0)
		return 0;
	if (p[1].revents & POLLIN) {
		int c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c >= 0) {
			refuse(c, "another gatherer is taking this recording");
			close(c);
		}
	}
	char c;
	if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && recv(fd, &c, 1, MSG_DONTWAIT) <= 0)
		return -1; /* closed (it sends nothing before the end) */
	return 0;
}

/* Serves one gatherer until it has everything or leaves. */
static void serve(struct mt_listener *l, int fd)
{
	char line[MT_WIRE_LINE_MAX], token[MT_WIRE_LINE_MAX], session[MT_WIRE_LINE_MAX];
	unsigned long long off;
	if (read_line(fd, line, sizeof line) < 0)
		return;
	if (strncmp(line, MT_WIRE_HELLO " ", sizeof MT_WIRE_HELLO) != 0 ||
	    sscanf(line + sizeof MT_WIRE_HELLO, "%511s %511s %llu", token, session, &off) != 3) {
		refuse(fd, "not a memtrace gatherer (or another version of the protocol)");
		return;
	}
	if (l->token[0] && !same_secret(token, l->token)) {
		refuse(fd, strcmp(token, "-") ?
				   "wrong token" :
				   "a token is required (record printed it; gather --token)");
		mt_warning("--listen: refused a gatherer: %s token",
			   strcmp(token, "-") ? "wrong" : "no");
		return;
	}
	if (strcmp(session, "-") ? strcmp(session, l->session) != 0 : off != 0) {
		refuse(fd, "this is another recording than the one the gatherer's file holds");
		return;
	}
	if (!is_boundary(l->file, off)) {
		refuse(fd, "the offset asked for is not where a chunk starts");
		return;
	}
	int n = snprintf(line, sizeof line, "OK %s %s\n", l->session, l->name);
	if (mt_wire_send(fd, line, (size_t)n) < 0)
		return;
	/* END is a chunk boundary: frames cut chunks, the walk over the
	 * file's chunks starts only where one starts */
	uint64_t end = off;
	for (;;) {
		pthread_mutex_lock(&l->lock);
		int complete = l->complete, stopping = l->stopping;
		pthread_mutex_unlock(&l->lock);
		if (stopping)
			return;
		if (off == end)
			end = mt_wire_whole_chunks(l->file, end);
		if (off < end) {
			uint32_t len = end - off < MT_WIRE_FRAME_MAX ? (uint32_t)(end - off) :
								       MT_WIRE_FRAME_MAX;
			uint8_t head[5] = { 'D', (uint8_t)len, (uint8_t)(len >> 8),
					    (uint8_t)(len >> 16), (uint8_t)(len >> 24) };
			if (pread(l->file, l->buf, len, (off_t)off) != (ssize_t)len ||
			    mt_wire_send(fd, head, sizeof head) < 0 ||
			    mt_wire_send(fd, l->buf, len) < 0)
				return;
			off += len;
			continue;
		}
		if (complete) {
			uint8_t e[9] = { 'E' };
			for (int i = 0; i < 8; i++)
				e[1 + i] = (uint8_t)(off >> (8 * i));
			if (mt_wire_send(fd, e, sizeof e) < 0 ||
			    read_line(fd, line, sizeof line) < 0 || strcmp(line, "DONE") != 0)
				return;
			pthread_mutex_lock(&l->lock);
			l->delivered = 1;
			pthread_cond_broadcast(&l->cond);
			pthread_mutex_unlock(&l->lock);
			return;
		}
		if (wait_more(l, fd, 50) < 0)
			return;
	}
}

static void *server_main(void *arg)
{
	struct mt_listener *l = arg;
	for (;;) {
		struct pollfd p = { .fd = l->fd, .events = POLLIN };
		int r = poll(&p, 1, 100);
		pthread_mutex_lock(&l->lock);
		int done = l->stopping || l->delivered;
		pthread_mutex_unlock(&l->lock);
		if (done)
			return NULL;
		if (r <= 0)
			continue;
		int c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		/* a gatherer that stops reading must not hold the recorder
		 * past its end forever */
		struct timeval tv = { .tv_sec = 30 };
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		pthread_mutex_lock(&l->lock);
		l->serving = 1;
		pthread_mutex_unlock(&l->lock);
		serve(l, c);
		pthread_mutex_lock(&l->lock);
		l->serving = 0;
		pthread_mutex_unlock(&l->lock);
		close(c);
		/* a gatherer that came while this one was served waits in the
		 * backlog: it is told at once, not after the end */
	}
}

/* Sends the announcement to the broadcast address of every interface the
 * listener is bound to (all of them for a wildcard address). */
static void announce(struct mt_listener *l, const char *msg)
{
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs) != 0)
		return;
	const struct sockaddr_in *b4 = (const struct sockaddr_in *)&l->bound;
	int wildcard = mt_net_is_wildcard(&l->bound);
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_broadaddr ||
		    !(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_BROADCAST))
			continue;
		const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
		if (!wildcard && a->sin_addr.s_addr != b4->sin_addr.s_addr)
			continue;
		struct sockaddr_in to = *(const struct sockaddr_in *)i->ifa_broadaddr;
		to.sin_port = htons(MT_WIRE_ANNOUNCE_PORT);
		sendto(l->announce_fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&to,
		       sizeof to);
	}
	freeifaddrs(ifs);
}

static void *announcer_main(void *arg)
{
	struct mt_listener *l = arg;
	char msg[MT_WIRE_LINE_MAX];
	unsigned port = ntohs(((const struct sockaddr_in *)&l->bound)->sin_port);
	snprintf(msg, sizeof msg, MT_WIRE_ANNOUNCE " %u %s %d %s", port, l->session, (int)getpid(),
		 l->name);
	pthread_mutex_lock(&l->lock);
	while (!l->stopping && !l->delivered) {
		pthread_mutex_unlock(&l->lock);
		announce(l, msg);
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

/* A name fit for the announcement and the gatherer's file name. */
static void clean_name(const char *in, char *out, size_t len)
{
	const char *base = in ? strrchr(in, '/') : NULL;
	base = base ? base + 1 : in ? in : "recording";
	size_t k = 0;
	for (; *base && k + 1 < len; base++)
		out[k++] = (*base == '.' || *base == '-' || *base == '_' ||
			    (*base >= '0' && *base <= '9') || (*base >= 'a' && *base <= 'z') ||
			    (*base >= 'A' && *base <= 'Z')) ?
				   *base :
				   '_';
	if (!k)
		out[k++] = '_';
	out[k] = '\0';
}

struct mt_listener *mt_listen_start(const struct mt_listen_opts *o, const char *file, char *err,
				    size_t errlen)
{
	char host[256] = "127.0.0.1", port[8] = MT_WIRE_DEFAULT_PORT;
	if (mt_net_parse(o->addr, host, sizeof host, port, sizeof port) < 0) {
		snprintf(err, errlen, "--listen takes HOST:PORT, PORT or HOST, not '%s'", o->addr);
		return NULL;
	}
	if (o->token && (!*o->token || strlen(o->token) > 128 || strpbrk(o->token, " \t\r\n"))) {
		snprintf(err, errlen, "--token must be 1 to 128 characters without spaces");
		return NULL;
	}
	struct mt_listener *l = xcalloc(1, sizeof *l);
	l->fd = l->file = l->announce_fd = -1;
	l->fd = mt_net_listen(host, port, &l->bound, err, errlen);
	if (l->fd < 0)
		goto fail;
	l->file = open(file, O_RDONLY | O_CLOEXEC);
	if (l->file < 0) {
		snprintf(err, errlen, "%s: cannot read it back to stream it: %s", file,
			 strerror(errno));
		goto fail;
	}
	int loopback = mt_net_is_loopback(&l->bound);
	if (o->token)
		snprintf(l->token, sizeof l->token, "%.*s", MT_WIRE_TOKEN_LEN, o->token);
	else if (!loopback)
		random_hex(l->token, MT_WIRE_TOKEN_LEN);
	if (o->token && strlen(o->token) > MT_WIRE_TOKEN_LEN) {
		snprintf(err, errlen, "--token must be at most %d characters", MT_WIRE_TOKEN_LEN);
		goto fail;
	}
	random_hex(l->session, 16);
	clean_name(o->name, l->name, sizeof l->name);
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
	if (l->token[0])
		mt_note("streaming on %s%s; gather with: memtrace gather %s --token %s", where,
			o->broadcast ? " (announced on the LAN)" : "", where, l->token);
	else
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
		if (!told++ && !l->serving) {
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
