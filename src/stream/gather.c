/*
 * gather.c - the gathering side of live streaming (gather.h, wire.h).
 *
 * The file being gathered is at every moment the recorder's file up to a
 * chunk boundary, so a gathering that stops (connection lost, gatherer
 * killed) resumes by asking for the rest from the end of its last whole
 * chunk.  A sidecar FILE.gather holds the recording's session while the
 * gathering is in progress: it is what tells a resumable file from a
 * finished one, and a recording from another run at the same address.
 */
#include "gather.h"
#include "format/wire.h"
#include "base/net.h"
#include "base/progress.h"
#include "base/util.h"
#include "format/format.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A recorder that stops sending for this long is gone (it sends a
 * keepalive every MT_WIRE_KEEPALIVE_MS while it has nothing new). */
#define WAIT_MS (6 * MT_WIRE_KEEPALIVE_MS)
/* How long the answer to the hello may take. */
#define HELLO_MS 5000

static void sidecar_path(const struct mt_gather *g, char *out, size_t len)
{
	snprintf(out, len, "%s.gather", g->out);
}

/* Opens G->out: resumed when its sidecar names the session, created when
 * it does not exist.  Returns the fd and the offset to ask for. */
static int open_out(struct mt_gather *g, uint64_t *offset)
{
	char side[sizeof g->out + 8], line[128] = "";
	sidecar_path(g, side, sizeof side);
	FILE *f = fopen(side, "r");
	if (f) {
		if (!fgets(line, sizeof line, f))
			line[0] = '\0';
		fclose(f);
		line[strcspn(line, "\n")] = '\0';
	}
	if (line[0]) {
		int fd = open(g->out, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			snprintf(g->session, sizeof g->session, "%s", line);
			*offset = mt_wire_whole_chunks(fd, 0);
			/* what came after the last whole chunk is asked for again */
			if (ftruncate(fd, (off_t)*offset) != 0) {
				snprintf(g->err, sizeof g->err, "%s: %s", g->out, strerror(errno));
				close(fd);
				return -1;
			}
			return fd;
		}
	}
	int fd = mt_create_output(g->out, O_RDWR, 0);
	/* An empty file of ours without a sidecar is what a gathering
	 * interrupted before any recorder answered leaves: it holds nothing,
	 * and the same command starts again into it. */
	struct stat st;
	if (fd < 0 && errno == EEXIST && !line[0]) {
		fd = open(g->out, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0 ||
				st.st_nlink != 1 || st.st_uid != geteuid())) {
			close(fd);
			fd = -1;
			errno = EEXIST;
		} else if (fd < 0) {
			errno = EEXIST;
		}
	}
	if (fd < 0) {
		/* a directory, link, FIFO or socket is named as what it is */
		struct stat what;
		int e = errno;
		if (e == EEXIST && lstat(g->out, &what) == 0 && !S_ISREG(what.st_mode))
			snprintf(g->err, sizeof g->err, "%s %s", g->out,
				 mt_file_refused(g->out, ELOOP) ?
					 mt_file_refused(g->out, ELOOP) :
					 "is not a regular file: not written");
		else
			snprintf(g->err, sizeof g->err,
				 e == EEXIST ? "%s exists (and is not a gathering to resume): "
					       "remove it or choose another -o" :
					       "%s: %s",
				 g->out, strerror(e));
		return -1;
	}
	*offset = 0;
	return fd;
}

static int write_sidecar(const struct mt_gather *g)
{
	char side[sizeof g->out + 8];
	sidecar_path(g, side, sizeof side);
	int fd = open(side, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(f, "%s\n", g->session);
	return fclose(f);
}

enum step { GOT_ALL, LOST, FATAL };

/* How far a gathering is, over all its connections: "gathering NAME from
 * HOST:PORT", NAME as the recorder says at each. */
struct gather_line {
	struct mt_progress pr;
	char what[sizeof((struct mt_gather *)0)->name + sizeof((struct mt_gather *)0)->host +
		  sizeof((struct mt_gather *)0)->port + 8];
};

/* One connection: asks for the rest from *OFFSET and writes what comes. */
static enum step one_connection(struct mt_gather *g, int out, uint64_t *offset,
				struct gather_line *gl)
{
	char err[1024], line[MT_WIRE_LINE_MAX];
	int fd = mt_net_connect(g->host, g->port, err, sizeof err);
	if (fd < 0) {
		snprintf(g->err, sizeof g->err, "%s", err);
		return LOST;
	}
	int n = snprintf(line, sizeof line, MT_WIRE_HELLO " %s %s %llu\n",
			 g->token ? g->token : "-", g->session[0] ? g->session : "-",
			 (unsigned long long)*offset);
	enum step st = LOST;
	uint8_t *buf = NULL;
	if (mt_wire_send(fd, line, (size_t)n) < 0) {
		snprintf(g->err, sizeof g->err, "%s:%s closed the connection", g->host, g->port);
		goto out;
	}
	/* a recorder answers at once: a peer that does not is something else */
	if (mt_wire_line(fd, line, sizeof line, HELLO_MS) < 0) {
		snprintf(g->err, sizeof g->err,
			 "%s:%s gave no answer (is it a memtrace record --listen?)", g->host,
			 g->port);
		goto out;
	}
	if (strncmp(line, "ERR ", 4) == 0) {
		snprintf(g->err, sizeof g->err, "%s:%s refused: %s", g->host, g->port, line + 4);
		st = FATAL;
		goto out;
	}
	char session[64], name[64];
	if (sscanf(line, "OK %63s %63s", session, name) != 2) {
		snprintf(g->err, sizeof g->err, "%s:%s is not a memtrace recorder", g->host,
			 g->port);
		st = FATAL;
		goto out;
	}
	snprintf(g->name, sizeof g->name, "%s", name);
	snprintf(gl->what, sizeof gl->what, "%s from %s:%s", g->name, g->host, g->port);
	if (!g->session[0]) {
		snprintf(g->session, sizeof g->session, "%s", session);
		if (write_sidecar(g) != 0) {
			snprintf(g->err, sizeof g->err, "%s.gather: %s", g->out, strerror(errno));
			st = FATAL;
			goto out;
		}
	}
	buf = xmalloc(MT_WIRE_FRAME_MAX);
	for (;;) {
		uint8_t h[9];
		if (mt_wire_recv(fd, h, 1, WAIT_MS) < 0)
			break;
		if (h[0] == 'D') {
			if (mt_wire_recv(fd, h + 1, 4, WAIT_MS) < 0)
				break;
			uint32_t len = (uint32_t)h[1] | (uint32_t)h[2] << 8 | (uint32_t)h[3] << 16 |
				       (uint32_t)h[4] << 24;
			if (len > MT_WIRE_FRAME_MAX) {
				snprintf(g->err, sizeof g->err, "%s:%s sent a malformed frame",
					 g->host, g->port);
				st = FATAL;
				goto out;
			}
			if (mt_wire_recv(fd, buf, len, WAIT_MS) < 0)
				break;
			if (pwrite(out, buf, len, (off_t)*offset) != (ssize_t)len) {
				snprintf(g->err, sizeof g->err, "%s: %s", g->out, strerror(errno));
				st = FATAL;
				goto out;
			}
			*offset += len;
			g->bytes = *offset;
			if (g->progress)
				mt_progress_at(&gl->pr, *offset, 0);
			continue;
		}
		if (h[0] == 'K')
			continue; /* nothing new yet */
		if (h[0] == 'E' && mt_wire_recv(fd, h + 1, 8, WAIT_MS) == 0) {
			uint64_t total = 0;
			for (int i = 0; i < 8; i++)
				total |= (uint64_t)h[1 + i] << (8 * i);
			if (total != *offset || fsync(out) != 0) {
				snprintf(g->err, sizeof g->err, "%s: %llu bytes gathered of %llu",
					 g->out, (unsigned long long)*offset,
					 (unsigned long long)total);
				st = FATAL;
				goto out;
			}
			send(fd, "DONE\n", 5, MSG_NOSIGNAL);
			st = GOT_ALL;
			goto out;
		}
		break;
	}
	snprintf(g->err, sizeof g->err, "the connection to %s:%s was lost", g->host, g->port);
out:
	free(buf);
	close(fd);
	return st;
}

/* Gives up: a file this run made before any recorder answered holds
 * nothing and is removed (it would stand in the way of the next try); one
 * with a session stays, with its sidecar, to be resumed. */
static int give_up(struct mt_gather *g, int out, int made)
{
	close(out);
	if (made && !g->session[0])
		unlink(g->out);
	else if (!g->quiet && g->session[0])
		mt_note("%s holds what was gathered; the same command resumes it", g->out);
	return -1;
}

int mt_gather_run(struct mt_gather *g)
{
	uint64_t offset;
	int out = open_out(g, &offset);
	if (out < 0)
		return -1;
	int made = offset == 0 && !g->session[0];
	double deadline = now_s() + g->retry;
	struct gather_line gl = { .what = "" };
	mt_progress_start(&gl.pr, "gathering", gl.what);
	int resumed = offset > 0, lost = 0;
	if (resumed && !g->quiet)
		mt_note("resuming %s from %llu bytes", g->out, (unsigned long long)offset);
	for (;;) {
		uint64_t before = offset;
		enum step st = one_connection(g, out, &offset, &gl);
		mt_progress_clear(&gl.pr);
		if (st == GOT_ALL)
			break;
		if (st == FATAL)
			return give_up(g, out, made);
		if (offset > before || !lost++) {
			/* progress was made (or this is the first loss): the clock
			 * to give up starts again */
			deadline = now_s() + g->retry;
			if (!g->quiet && before > 0)
				mt_note("%s; reconnecting to resume from %llu bytes", g->err,
					(unsigned long long)offset);
			/* else say why nothing happens yet, once */
			else if (!g->quiet && lost == 1 && g->retry > 0)
				mt_note("%s; trying again for %g s", g->err, g->retry);
		}
		if (now_s() >= deadline)
			return give_up(g, out, made);
		usleep(250 * 1000);
	}
	close(out);
	char side[sizeof g->out + 8];
	sidecar_path(g, side, sizeof side);
	unlink(side);
	if (!g->quiet) {
		char b[32];
		mt_note("gathered %s from %s:%s into %s (%s)", g->name, g->host, g->port, g->out,
			mt_fmt_bytes(offset, b));
	}
	return 0;
}

int mt_gather_listen(int port, double wait, struct mt_heard *out, int max, char *err, size_t errlen)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		snprintf(err, errlen, "cannot listen for announcements on UDP port %d: %s", port,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int n = 0;
	double end = now_s() + wait;
	while (n < max) {
		double left = end - now_s();
		if (left <= 0)
			break;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		char msg[MT_WIRE_LINE_MAX];
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t k = recvfrom(fd, msg, sizeof msg - 1, 0, (struct sockaddr *)&from, &fl);
		if (k <= 0)
			continue;
		msg[k] = '\0';
		struct mt_heard h = { .pid = 0 };
		unsigned p16;
		if (strncmp(msg, MT_WIRE_ANNOUNCE " ", sizeof MT_WIRE_ANNOUNCE) != 0 ||
		    sscanf(msg + sizeof MT_WIRE_ANNOUNCE, "%u %63s %d %63s", &p16, h.session,
			   &h.pid, h.name) != 4 ||
		    p16 == 0 || p16 > 65535)
			continue;
		snprintf(h.port, sizeof h.port, "%u", p16);
		inet_ntop(AF_INET, &from.sin_addr, h.host, sizeof h.host);
		int seen = 0;
		for (int i = 0; i < n; i++)
			seen |= !strcmp(out[i].session, h.session);
		if (!seen)
			out[n++] = h;
	}
	close(fd);
	return n;
}
