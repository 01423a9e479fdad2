/*
 * rings.c - see rings.h.
 *
 * Every process the shim traces (children too, with --follow-forks)
 * connects once and sends a hello with the memfd of its ring.  The rings
 * are drained on a 5 ms beat into one stream each; the writer cuts what is
 * drained into chunks at least every 250 ms, so a crash of either side
 * loses under a second.  A process's connection hangs up when it exits or
 * execs: then the rest of its ring and its losses are written.
 */
#include "rings.h"
#include "format/ring.h"
#include "base/util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One traced process of the shim: its ring and its stream in the file. */
struct conn {
	int fd;
	struct mt_ring_hdr *ring;
	uint64_t size;
	uint32_t pid;
	struct mt_stream *stream;
};

struct mt_rings {
	int lfd;
	struct conn **v;
	size_t n, cap;
};

struct mt_rings *mt_rings_listen(char *name, size_t namelen, char *err, size_t errlen)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(name, namelen, "@memtrace-%d-%ld", (int)getpid(), (long)now.tv_nsec);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t slen = strlen(name);
	if (slen > sizeof sa.sun_path)
		slen = sizeof sa.sun_path;
	memcpy(sa.sun_path, name, slen);
	sa.sun_path[0] = 0; /* the abstract namespace: no file to clean up */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 ||
	    bind(fd, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + slen)) < 0 ||
	    listen(fd, 64) < 0) {
		snprintf(err, errlen, "cannot create the recorder socket: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	struct mt_rings *s = xcalloc(1, sizeof *s);
	s->lfd = fd;
	return s;
}

static void drain(struct conn *c, int final)
{
	uint64_t head = __atomic_load_n(&c->ring->head, __ATOMIC_ACQUIRE);
	uint64_t tail = c->ring->tail;
	mt_stream_feed(c->stream, mt_ring_data(c->ring) + (tail & (c->size - 1)), head - tail,
		       final);
	__atomic_store_n(&c->ring->tail, head, __ATOMIC_RELEASE);
}

/* Receives a process's hello and the memfd of its ring; returns the memfd,
 * or -1 (with HELLO incomplete) if what came was no hello. */
static int recv_hello(int fd, struct mt_hello *hello)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = hello, .iov_len = sizeof *hello };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	/* the hello is sent right after connect; wait briefly for it */
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	poll(&pf, 1, 1000);
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	int memfd = -1;
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&memfd, CMSG_DATA(cm), sizeof memfd);
	if (n != (ssize_t)sizeof *hello || hello->magic != MT_RING_MAGIC || memfd < 0 ||
	    hello->size == 0 || (hello->size & (hello->size - 1))) {
		if (memfd >= 0)
			close(memfd);
		return -1;
	}
	return memfd;
}

static void accept_conn(struct mt_rings *s, struct mt_recorder *r)
{
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct mt_hello hello;
	int memfd = recv_hello(fd, &hello);
	if (memfd < 0) {
		mt_warning("a process connected with a malformed hello; ignored");
		close(fd);
		return;
	}
	struct mt_ring_hdr *ring = mt_ring_map(memfd, hello.size);
	close(memfd);
	if (!ring) {
		mt_warning("cannot map the event buffer of pid %u: %s", hello.pid, strerror(errno));
		close(fd);
		return;
	}
	mt_grow(&s->v, &s->cap, s->n, sizeof *s->v);
	struct conn *c = xmalloc(sizeof *c);
	*c = (struct conn){
		.fd = fd,
		.ring = ring,
		.size = hello.size,
		.pid = hello.pid,
		.stream = mt_stream_new(r),
	};
	s->v[s->n++] = c;
}

/* The connection's process is gone (or exec'd): write out all it left. */
static void close_conn(struct mt_rings *s, size_t k, int have_status, int status)
{
	struct conn *c = s->v[k];
	drain(c, 0);
	uint64_t lost[MT_LOST_KIND_COUNT];
	for (int i = 0; i < MT_LOST_KIND_COUNT; i++)
		lost[i] = c->ring->lost[i];
	int64_t st = WIFEXITED(status) ? WEXITSTATUS(status) : -(int64_t)WTERMSIG(status);
	mt_stream_end(c->stream, lost, have_status, st);
	mt_ring_unmap(c->ring, c->size);
	close(c->fd);
	free(c);
	s->v[k] = s->v[--s->n];
}

int mt_rings_run(struct mt_rings *s, struct mt_recorder *r, pid_t pid)
{
	int status = 0, reaped = 0;
	for (;;) {
		/* Rings are drained on a 5 ms beat; only new connections wake us. */
		struct pollfd pl = { .fd = s->lfd, .events = POLLIN };
		if (poll(&pl, 1, 5) > 0 && (pl.revents & POLLIN))
			accept_conn(s, r);
		if (!reaped && waitpid(pid, &status, WNOHANG) == pid)
			reaped = 1;
		for (size_t k = s->n; k-- > 0;) {
			struct conn *c = s->v[k];
			drain(c, 0);
			struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };
			if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
				/* The command's own connection ends when it exits or
				 * execs; its exit status goes in once it is known. */
				if (c->pid == (uint32_t)pid && !reaped)
					continue;
				close_conn(s, k, c->pid == (uint32_t)pid, status);
			}
		}
		if (reaped && s->n == 0) {
			/* a last look for a connection that raced the exit */
			if (poll(&pl, 1, 0) > 0 && (pl.revents & POLLIN))
				continue;
			break;
		}
	}
	return status;
}

void mt_rings_close(struct mt_rings *s)
{
	if (!s)
		return;
	/* mt_rings_run returns only once every connection has ended */
	close(s->lfd);
	free(s->v);
	free(s);
}
