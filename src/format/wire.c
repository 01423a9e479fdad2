/*
 * wire.c - what the ends of live streaming share (wire.h): whole sends and
 * receives with a time limit, lines, where a recording file's whole chunks
 * end, and the serving side itself (record --listen's and the shim's):
 * the handshake, the frames, the announcements.
 */
#include "wire.h"
#include "format/format.h"
#include "base/clock.h"
#include "base/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Sends (SENDING) or receives the N bytes at C, waiting up to MS for each
 * piece received: 0 once all went, -1 on an error, a timeout or the peer's
 * end.  A signal's interruption is no error.  (The send's buffer is the
 * caller's const one: it is only read.) */
static int whole(int fd, char *c, size_t n, int sending, int ms)
{
	while (n) {
		ssize_t k;
		if (sending) {
			k = send(fd, c, n, MSG_NOSIGNAL);
		} else {
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			if (poll(&pf, 1, ms) <= 0)
				return -1;
			k = recv(fd, c, n, 0);
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int mt_wire_send(int fd, const void *p, size_t n)
{
	return whole(fd, (char *)p, n, 1, 0);
}

int mt_wire_recv(int fd, void *p, size_t n, int ms)
{
	return whole(fd, p, n, 0, ms);
}

int mt_wire_line(int fd, char *line, size_t len, int ms)
{
	for (size_t n = 0; n + 1 < len; n++) {
		if (mt_wire_recv(fd, line + n, 1, ms) < 0)
			return -1;
		if (line[n] == '\n') {
			line[n] = '\0';
			return 0;
		}
	}
	return -1;
}

uint32_t mt_wire_chunk_len(const uint8_t *h)
{
	return (uint32_t)h[12] | (uint32_t)h[13] << 8 | (uint32_t)h[14] << 16 |
	       (uint32_t)h[15] << 24;
}

uint64_t mt_wire_whole_chunks(int fd, uint64_t at)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return at;
	uint64_t size = (uint64_t)st.st_size;
	if (at < MT_FILE_HEADER_SIZE) {
		if (size < MT_FILE_HEADER_SIZE)
			return at;
		at = MT_FILE_HEADER_SIZE;
	}
	uint8_t h[MT_CHUNK_HEADER_SIZE];
	while (at + sizeof h <= size && pread(fd, h, sizeof h, (off_t)at) == (ssize_t)sizeof h &&
	       at + sizeof h + mt_wire_chunk_len(h) <= size)
		at += sizeof h + mt_wire_chunk_len(h);
	return at;
}

void mt_wire_random_hex(char *out, size_t digits)
{
	uint8_t b[64];
	size_t n = (digits + 1) / 2;
	if (n > sizeof b)
		n = sizeof b, digits = 2 * n;
	if (getrandom(b, n, 0) != (ssize_t)n) {
		/* no entropy yet: still unique enough for a session, and a
		 * token the user can replace (--token, MEMTRACE_TOKEN) */
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		uint64_t x = (uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec << 32 ^ (uint64_t)getpid();
		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			b[i] = (uint8_t)(x >> 56);
		}
	}
	for (size_t i = 0; i < digits; i++)
		out[i] = "0123456789abcdef"[(b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	out[digits] = '\0';
}

void mt_wire_clean_name(const char *in, char *out, size_t len)
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

static uint64_t now_ms(void)
{
	return mt_now_ns() / 1000000;
}

/* S, then a NUL, into OUT (at most LEN with it): 0, or -1 when too long. */
static int put_str(char *out, size_t len, const char *s, size_t n)
{
	if (n + 1 > len)
		return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static void refuse(int fd, const char *why)
{
	char line[MT_WIRE_LINE_MAX];
	size_t n = strlen(why);
	if (n > sizeof line - 6)
		n = sizeof line - 6;
	memcpy(line, "ERR ", 4);
	memcpy(line + 4, why, n);
	line[4 + n] = '\n';
	mt_wire_send(fd, line, n + 5);
}

/* "MTGATHER 1 TOKEN SESSION OFFSET": 0, or -1 when LINE is not that
 * (parsed by hand: no sscanf inside a traced program). */
static int parse_hello(const char *line, char *token, char *session, size_t len, uint64_t *off)
{
	if (strncmp(line, MT_WIRE_HELLO " ", sizeof MT_WIRE_HELLO) != 0)
		return -1;
	const char *p = line + sizeof MT_WIRE_HELLO;
	size_t n = strcspn(p, " ");
	if (!n || p[n] != ' ' || put_str(token, len, p, n) < 0)
		return -1;
	p += n + 1;
	n = strcspn(p, " ");
	if (!n || p[n] != ' ' || put_str(session, len, p, n) < 0)
		return -1;
	p += n + 1;
	if (!*p || strlen(p) > 20 || strspn(p, "0123456789") != strlen(p))
		return -1;
	*off = 0;
	for (; *p; p++)
		*off = *off * 10 + (uint64_t)(*p - '0');
	return 0;
}

/* Waits up to MS for the recording to grow or end, or the gatherer to
 * leave: 0 to go on, -1 when it left.  Another gatherer coming meanwhile is
 * told at once that this one is there (two copies of one stream would each
 * look complete and differ in what they miss). */
static int wait_more(const struct mt_wire_source *s, int fd, int ms)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
			       { .fd = s->listen_fd, .events = POLLIN } };
	if (poll(p, 2, ms) <= 0)
		return 0;
	if (p[1].revents & POLLIN) {
		int c = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
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

enum mt_wire_served mt_wire_serve(const struct mt_wire_source *s, int fd, const char *hello)
{
	char line[MT_WIRE_LINE_MAX], token[MT_WIRE_LINE_MAX], session[MT_WIRE_LINE_MAX];
	uint64_t off;
	unsigned uid;
	if (parse_hello(hello, token, session, sizeof token, &off) < 0) {
		refuse(fd, "not a memtrace gatherer (or another version of the protocol)");
		return MT_WIRE_LEFT;
	}
	if (s->token[0] && !same_secret(token, s->token)) {
		int none = strcmp(token, "-") == 0;
		refuse(fd, none ? "a token is required (record printed it; gather --token)" :
				  "wrong token");
		return none ? MT_WIRE_NO_TOKEN : MT_WIRE_BAD_TOKEN;
	}
	/* no token: loopback, where any local user may connect */
	if (!s->token[0] && (mt_net_peer_uid(fd, &uid) < 0 || (uid != s->owner && uid != 0))) {
		refuse(fd, "this recording is another user's: gather it as that user, or record "
			   "with --token (MEMTRACE_TOKEN)");
		return MT_WIRE_NOT_OWNER;
	}
	if (strcmp(session, "-") ? strcmp(session, s->session) != 0 : off != 0) {
		refuse(fd, "this is another recording than the one the gatherer's file holds");
		return MT_WIRE_LEFT;
	}
	if (!is_boundary(s->file, off)) {
		refuse(fd, "the offset asked for is not where a chunk starts");
		return MT_WIRE_LEFT;
	}
	int n = snprintf(line, sizeof line, "OK %s %s\n", s->session, s->name);
	if (n < 0 || (size_t)n >= sizeof line || mt_wire_send(fd, line, (size_t)n) < 0)
		return MT_WIRE_LEFT;
	/* END is a chunk boundary: frames cut chunks, the walk over the
	 * file's chunks starts only where one starts */
	uint64_t end = off, idle_since = now_ms();
	for (;;) {
		int state = s->state(s->ctx);
		if (state < 0)
			return MT_WIRE_LEFT;
		if (off == end)
			end = mt_wire_whole_chunks(s->file, end);
		if (off < end) {
			uint32_t len = end - off < MT_WIRE_FRAME_MAX ? (uint32_t)(end - off) :
								       MT_WIRE_FRAME_MAX;
			uint8_t head[5] = { 'D', (uint8_t)len, (uint8_t)(len >> 8),
					    (uint8_t)(len >> 16), (uint8_t)(len >> 24) };
			if (pread(s->file, s->buf, len, (off_t)off) != (ssize_t)len ||
			    mt_wire_send(fd, head, sizeof head) < 0 ||
			    mt_wire_send(fd, s->buf, len) < 0)
				return MT_WIRE_LEFT;
			off += len;
			idle_since = now_ms();
			continue;
		}
		if (state > 0) {
			/* (the state was read before the last look at the
			 * file: all that was written before it said so is out) */
			uint8_t e[9] = { 'E' };
			for (int i = 0; i < 8; i++)
				e[1 + i] = (uint8_t)(off >> (8 * i));
			if (mt_wire_send(fd, e, sizeof e) < 0 ||
			    mt_wire_line(fd, line, sizeof line, 5000) < 0 ||
			    strcmp(line, "DONE") != 0)
				return MT_WIRE_LEFT;
			return MT_WIRE_DELIVERED;
		}
		if (wait_more(s, fd, 50) < 0)
			return MT_WIRE_LEFT;
		if (now_ms() - idle_since >= MT_WIRE_KEEPALIVE_MS) {
			if (mt_wire_send(fd, "K", 1) < 0)
				return MT_WIRE_LEFT;
			idle_since = now_ms();
		}
	}
}

void mt_wire_announcement(char *buf, size_t len, unsigned port, const char *session, int pid,
			  const char *name)
{
	snprintf(buf, len, MT_WIRE_ANNOUNCE " %u %s %d %s", port, session, pid, name);
}

void mt_wire_announce(int fd, const struct sockaddr_storage *bound, const char *msg)
{
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs) != 0)
		return;
	const struct sockaddr_in *b4 = (const struct sockaddr_in *)bound;
	int wildcard = b4->sin_family == AF_INET && b4->sin_addr.s_addr == htonl(INADDR_ANY);
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_broadaddr ||
		    !(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_BROADCAST))
			continue;
		const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
		if (!wildcard && a->sin_addr.s_addr != b4->sin_addr.s_addr)
			continue;
		struct sockaddr_in to = *(const struct sockaddr_in *)i->ifa_broadaddr;
		to.sin_port = htons(MT_WIRE_ANNOUNCE_PORT);
		sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&to, sizeof to);
	}
	freeifaddrs(ifs);
}

void mt_wire_pending_init(struct mt_wire_pending *p, void (*guard)(int lock))
{
	for (int i = 0; i < MT_WIRE_PENDING; i++)
		p->fd[i] = -1;
	p->guard = guard;
}

void mt_wire_pending_drop(struct mt_wire_pending *p, int slot)
{
	if (p->guard)
		p->guard(1);
	close(p->fd[slot]);
	p->fd[slot] = -1;
	if (p->guard)
		p->guard(0);
}

void mt_wire_pending_close(struct mt_wire_pending *p)
{
	for (int i = 0; i < MT_WIRE_PENDING; i++)
		if (p->fd[i] >= 0)
			mt_wire_pending_drop(p, i);
}

/* Reads what SLOT's gatherer sent so far: 1 when its hello line is whole
 * (then the socket blocks again, for serving), 0 while it is not, -1 when
 * the connection is to go (closed, an error, a line too long). */
static int hear(struct mt_wire_pending *p, int slot)
{
	char *line = p->line[slot];
	for (;;) {
		ssize_t k = recv(p->fd[slot], line + p->len[slot], 1, MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (k <= 0)
			return -1;
		if (line[p->len[slot]] == '\n') {
			line[p->len[slot]] = '\0';
			int fl = fcntl(p->fd[slot], F_GETFL);
			return fl >= 0 && fcntl(p->fd[slot], F_SETFL, fl & ~O_NONBLOCK) == 0 ? 1 :
											       -1;
		}
		if (++p->len[slot] + 1 >= MT_WIRE_LINE_MAX)
			return -1;
	}
}

/* Takes a new connection on LISTEN_FD into a free slot, or the oldest
 * one's: its slot, or -1 when there was none to take. */
static int take(struct mt_wire_pending *p, int listen_fd)
{
	int slot = 0;
	for (int i = 1; i < MT_WIRE_PENDING && p->fd[slot] >= 0; i++)
		if (p->fd[i] < 0 || p->since[i] < p->since[slot])
			slot = i;
	if (p->guard)
		p->guard(1);
	int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c >= 0) {
		if (p->fd[slot] >= 0)
			close(p->fd[slot]);
		p->fd[slot] = c;
	}
	if (p->guard)
		p->guard(0);
	if (c < 0)
		return -1;
	p->since[slot] = now_ms();
	p->len[slot] = 0;
	return slot;
}

int mt_wire_pending_next(struct mt_wire_pending *p, int listen_fd, int ms)
{
	struct pollfd pf[1 + MT_WIRE_PENDING] = { { .fd = listen_fd, .events = POLLIN } };
	int slot[1 + MT_WIRE_PENDING], n = 1;
	uint64_t now = now_ms();
	for (int i = 0; i < MT_WIRE_PENDING; i++) {
		if (p->fd[i] < 0)
			continue;
		/* wait no longer than the first hello's time */
		uint64_t end = p->since[i] + MT_WIRE_HELLO_MS;
		if (end <= now)
			ms = 0;
		else if (end - now < (uint64_t)ms)
			ms = (int)(end - now);
		pf[n] = (struct pollfd){ .fd = p->fd[i], .events = POLLIN };
		slot[n++] = i;
	}
	if (poll(pf, (nfds_t)n, ms) < 0)
		return -1;
	for (int k = 1; k < n; k++) {
		int r = pf[k].revents ? hear(p, slot[k]) : 0;
		if (r > 0)
			return slot[k];
		if (r < 0 || now_ms() - p->since[slot[k]] >= MT_WIRE_HELLO_MS)
			mt_wire_pending_drop(p, slot[k]);
	}
	/* a gatherer sends its hello as it connects: it is mostly in by
	 * the time it is accepted, and heard before the next comes */
	for (int k = 0; k < 64 && (pf[0].revents & POLLIN); k++) {
		int i = take(p, listen_fd);
		if (i < 0)
			break;
		int r = hear(p, i);
		if (r > 0)
			return i;
		if (r < 0)
			mt_wire_pending_drop(p, i);
	}
	return -1;
}
