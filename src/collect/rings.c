/*
 * rings.c - see rings.h.
 *
 * Every process the shim traces (children too, with --follow-forks)
 * connects once and sends a hello with the memfd of its ring.  The rings
 * are drained on a 5 ms beat into one stream each; the writer cuts what is
 * drained into chunks at least every 250 ms, so a crash of either side
 * loses under a second.  A process's connection hangs up when it exits or
 * execs: then the rest of its ring and its losses are written.  It also
 * hangs up when the program closes every descriptor (a daemon): while such
 * a process lives on (its pidfd says), its ring is drained still, until it
 * exits or connects anew (an exec).
 *
 * The socket's name is public, so a connection is taken only from a process
 * of the command's (see accept_conn), and what a client hands over is
 * untrusted: its memfd must be sealed at the size it claims, and its ring's
 * positions and records are checked on every drain.  A client that fails a
 * check loses its own events, with a warning; the recording goes on.
 */
#include "rings.h"
#include "fallback.h"
#include "tracee.h"
#include "format/ring.h"
#include "base/util.h"
#include "format/signum.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

/* A pidfd's exit status, kept by the kernel once the process is reaped by
 * whoever its parent is (Linux 6.15; the layout of <linux/pidfd.h>, which
 * older headers lack). */
struct pidfd_exit_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code; /* a wait status */
};
#define PIDFD_INFO_EXIT_ (1ull << 3)
#define PIDFD_GET_INFO_ _IOWR(0xFF, 11, struct pidfd_exit_info)

/* How long a process that hung up is given to be reaped by its parent, so
 * that its exit status is known. */
#define EXIT_WAIT_NS 2000000000ull

/* One traced process of the shim: its ring and its stream in the file. */
struct conn {
	int fd;
	struct mt_ring_hdr *ring;
	uint64_t size;
	uint64_t tail; /* ours: the ring's copy is the client's to overwrite */
	uint32_t pid;  /* the kernel's word for it (SO_PEERCRED), not the hello's */
	int pidfd;     /* the process (readable once it exits), or -1 */
	int hung_up;   /* its connection ended: it exited, exec'd or closed it */
	uint64_t gone; /* when it was seen gone (mt_now_ns), waiting for its status */
	struct mt_stream *stream;
};

#define MAX_UIDS 16

struct mt_rings {
	int lfd;
	struct conn **v;
	size_t n, cap;
	uint8_t token[MT_TOKEN_LEN];
	/* the uids the command's processes were seen to run as */
	uid_t uids[MAX_UIDS];
	size_t nuids;
};

struct mt_rings *mt_rings_listen(char *name, size_t namelen, char *err, size_t errlen)
{
	struct timespec now;
	uint8_t token[MT_TOKEN_LEN];
	if (getrandom(token, sizeof token, 0) != (ssize_t)sizeof token) {
		snprintf(err, errlen, "cannot make the recorder socket's token: %s",
			 strerror(errno));
		return NULL;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	/* The name is public (/proc/net/unix); what follows '#' reaches only
	 * the command, through its environment. */
	int n = snprintf(name, namelen, "@memtrace-%d-%ld", (int)getpid(), (long)now.tv_nsec);
	size_t slen = (size_t)n;
	for (int i = 0; i < MT_TOKEN_LEN && (size_t)n + 3 < namelen; i++)
		n += snprintf(name + n, namelen - (size_t)n, "%s%02x", i ? "" : "#", token[i]);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
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
	memcpy(s->token, token, sizeof token);
	/* the command starts as our uid; a setuid image adds its own below */
	s->uids[s->nuids++] = geteuid();
	return s;
}

/* Copies what the process committed since the last drain into its stream.
 * Returns NULL, or why its ring cannot be read on: the client writes the
 * header and data while we read, so head is read once, bounded by the ring
 * (so [tail, head) lies in the doubled mapping), and every record goes
 * through the stream's decoder, which stops at a malformed one. */
static const char *drain(struct conn *c)
{
	uint64_t head = __atomic_load_n(&c->ring->head, __ATOMIC_ACQUIRE);
	uint64_t len = head - c->tail;
	if (len > c->size)
		return "its buffer's positions are out of bounds";
	if (mt_stream_feed(c->stream, mt_ring_data(c->ring) + (c->tail & (c->size - 1)),
			   (size_t)len, 0) < 0)
		return "a malformed record in its buffer";
	c->tail = head;
	__atomic_store_n(&c->ring->tail, head, __ATOMIC_RELEASE);
	return NULL;
}

/* Receives a process's hello and the memfd of its ring, waiting up to
 * WAIT_MS for it; returns the memfd, or -1 (with HELLO incomplete) if what
 * came was no hello.  Any other descriptor sent along is closed. */
static int recv_hello(int fd, struct mt_hello *hello, int wait_ms)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = hello, .iov_len = sizeof *hello };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	/* the hello is sent right after connect; wait briefly for it */
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	poll(&pf, 1, wait_ms);
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	int memfd = -1;
	for (struct cmsghdr *cm = n < 0 ? NULL : CMSG_FIRSTHDR(&msg); cm;
	     cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof f, sizeof f);
			if (memfd < 0)
				memfd = f;
			else
				close(f);
		}
	}
	if (n != (ssize_t)sizeof *hello || hello->magic != MT_RING_MAGIC || memfd < 0) {
		if (memfd >= 0)
			close(memfd);
		return -1;
	}
	return memfd;
}

/* The parent of PID from /proc/PID/stat, or 0. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "pid (comm) S ppid ...": comm may hold anything, ')' included */
	char *p = strrchr(buf, ')');
	int ppid;
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

/* Whether the process of C is alive (as far as its pidfd tells). */
static int lives(const struct conn *c)
{
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };
	return c->pidfd >= 0 && poll(&p, 1, 0) == 0;
}

/* Whether the peer on FD, PID, is CMD or descends from it.  The links are
 * read from /proc while the peer lives; its pidfd (where the kernel gives
 * one, in *PIDFD) then says it still does, so the pid was not reused
 * meanwhile. */
static int of_command(int fd, pid_t pid, pid_t cmd, int *pidfd)
{
	int found = 0;
	pid_t p = pid;
	for (int hops = 0; p > 1 && hops < 4096 && !found; hops++) {
		found = p == cmd;
		p = parent_of(p);
	}
	socklen_t len = sizeof *pidfd;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, pidfd, &len) < 0)
		*pidfd = -1;
	if (found && *pidfd >= 0)
		found = syscall(SYS_pidfd_send_signal, *pidfd, 0, NULL, 0) == 0;
	return found;
}

/* The exit status of the process of PIDFD once it has been reaped: 1 with
 * *STATUS set, 0 not yet, -1 never (no pidfd, or a kernel before 6.15). */
static int pidfd_status(int pidfd, int *status)
{
	struct pidfd_exit_info info = { .mask = PIDFD_INFO_EXIT_ };
	if (pidfd < 0)
		return -1;
	if (ioctl(pidfd, PIDFD_GET_INFO_, &info) < 0)
		return errno == ESRCH ? 0 : -1;
	if (!(info.mask & PIDFD_INFO_EXIT_))
		return 0;
	*status = info.exit_code;
	return 1;
}

static int uid_known(const struct mt_rings *s, uid_t uid)
{
	for (size_t i = 0; i < s->nuids; i++)
		if (s->uids[i] == uid)
			return 1;
	return 0;
}

static int token_matches(const struct mt_rings *s, const struct mt_hello *hello)
{
	uint8_t diff = 0;
	for (int i = 0; i < MT_TOKEN_LEN; i++)
		diff |= (uint8_t)(s->token[i] ^ hello->token[i]);
	return diff == 0;
}

/* Whether the memfd can be mapped as a ring of SIZE data bytes: it must be
 * sealed against shrinking (or it could pull pages from under the mapping)
 * and as large as it claims. */
static const char *check_ring(int memfd, uint64_t size)
{
	struct stat st;
	int seals = fcntl(memfd, F_GET_SEALS);
	if (seals < 0 || (seals & MT_RING_SEALS) != MT_RING_SEALS)
		return "its buffer is not a memfd sealed against resizing";
	if (size < MT_RING_HDR || size > MT_RING_MAX_SIZE || (size & (size - 1)))
		return "its buffer's size is not a power of two from 4 KiB to 1 GiB";
	if (fstat(memfd, &st) < 0 || (uint64_t)st.st_size != MT_RING_HDR + size)
		return "its buffer is not the size it claims";
	return NULL;
}

static void close_conn(struct mt_rings *s, size_t k, int have_status, int status, const char *why);

/* A process connected: it is recorded if it is one of the command's (CMD's)
 * and hands over a ring that can be read safely. */
static void accept_conn(struct mt_rings *s, struct mt_writer *r, pid_t cmd)
{
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct ucred cred;
	socklen_t clen = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		close(fd);
		return;
	}
	/* A descendant is the command's, whatever uid it switched to.  One
	 * that exited (and was reaped) or was orphaned before we looked is
	 * known by the token it inherited, and must run as a uid the
	 * command's processes were seen with. */
	int pidfd = -1;
	int ours = of_command(fd, cred.pid, cmd, &pidfd);
	if (ours && !uid_known(s, cred.uid) && s->nuids < MAX_UIDS)
		s->uids[s->nuids++] = cred.uid;
	struct mt_hello hello;
	int memfd = recv_hello(fd, &hello, ours ? 1000 : 50);
	if (!ours && (memfd < 0 || !token_matches(s, &hello) || !uid_known(s, cred.uid))) {
		mt_warning("refused a connection from pid %d (uid %u): not a process of the "
			   "recorded command",
			   (int)cred.pid, (unsigned)cred.uid);
		goto refuse;
	}
	if (memfd < 0) {
		mt_warning("pid %d connected with a malformed hello; ignored", (int)cred.pid);
		goto refuse;
	}
	const char *why = check_ring(memfd, hello.size);
	struct mt_ring_hdr *ring = why ? NULL : mt_ring_map(memfd, hello.size);
	if (!ring) {
		mt_warning("pid %d is not recorded: %s", (int)cred.pid,
			   why ? why : "cannot map its event buffer");
		goto refuse;
	}
	close(memfd);
	/* The same pid again: the process exec'd, and its old image (which
	 * hung up as it did) is over; it did not exit. */
	for (size_t k = s->n; k-- > 0;)
		if (s->v[k]->pid == (uint32_t)cred.pid)
			close_conn(s, k, 0, 0, NULL);
	mt_grow(&s->v, &s->cap, s->n, sizeof *s->v);
	struct conn *c = xmalloc(sizeof *c);
	*c = (struct conn){
		.fd = fd,
		.ring = ring,
		.size = hello.size,
		.tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE),
		.pid = (uint32_t)cred.pid,
		.pidfd = pidfd,
		.stream = mt_stream_new(r),
	};
	mt_stream_watch(c->stream, c->pid);
	mt_stream_exclude(c->stream, ring, MT_RING_HDR + hello.size);
	s->v[s->n++] = c;
	return;
refuse:
	if (memfd >= 0)
		close(memfd);
	if (pidfd >= 0)
		close(pidfd);
	close(fd);
}

/* The connection's process is gone (or exec'd), or WHY (not NULL) its ring
 * cannot be read on: write out all it left and forget it. */
static void close_conn(struct mt_rings *s, size_t k, int have_status, int status, const char *why)
{
	struct conn *c = s->v[k];
	if (!why)
		why = drain(c);
	uint64_t lost[MT_LOST_KIND_COUNT];
	for (int i = 0; i < MT_LOST_KIND_COUNT; i++)
		lost[i] = c->ring->lost[i];
	if (why) {
		/* its stream ends here: at least one event of it is lost */
		mt_warning("pid %u: %s; its events from there on are not recorded", c->pid, why);
		if (lost[MT_LOST_CONSUMER_GONE] != UINT64_MAX)
			lost[MT_LOST_CONSUMER_GONE]++;
	}
	int64_t st = WIFEXITED(status) ? WEXITSTATUS(status) :
					 -(int64_t)mt_sig_recorded(WTERMSIG(status));
	mt_stream_end(c->stream, lost, have_status, st);
	mt_ring_unmap(c->ring, c->size);
	close(c->fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c);
	s->v[k] = s->v[--s->n];
}

/* A message on C's connection: the shim of the command's process (PID)
 * asks, before an exec of a program it cannot follow ("F" and its path),
 * for the BPF backend to take over; it waits for our answer, 'g' (go: the
 * probes are in place) or 'n' (no), before its exec.  Another process, or
 * one that asks again while followed, is told no. */
static void on_message(struct conn *c, pid_t pid, struct mt_fallback *fb)
{
	char msg[PATH_MAX + 2], err[PATH_MAX + 256];
	ssize_t n = recv(c->fd, msg, sizeof msg - 1, MSG_DONTWAIT);
	if (n <= 0)
		return;
	msg[n] = 0;
	char answer = 'n';
	if (msg[0] == 'F' && n > 1 && strlen(msg) == (size_t)n && fb && c->pid == (uint32_t)pid) {
		if (mt_fallback_attach(fb, pid, msg + 1, err, sizeof err) == 0)
			answer = 'g';
		else
			mt_warning(
				"pid %d: the BPF backend cannot trace %s in the shim's stead: %s",
				(int)pid, msg + 1, err);
	}
	if (send(c->fd, &answer, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
		/* it gave up waiting, or exited: its exec goes on untraced */
	}
}

/* The command, followed with ptrace (tracee.h), stopped: at its exit, its
 * ring read to the end, its memory sampled a last time and scanned for
 * leaks, else let go. */
static void command_stopped(struct mt_rings *s, pid_t pid, int st)
{
	if (st >> 16 == PTRACE_EVENT_EXIT) {
		for (size_t k = s->n; k-- > 0;) {
			struct conn *c = s->v[k];
			if (c->pid != (uint32_t)pid || c->hung_up)
				continue;
			if (!drain(c)) {
				mt_stream_last_sample(c->stream);
				mt_tracee_scan(c->stream, pid);
			}
			break;
		}
	}
	mt_tracee_resume(pid, st);
}

int mt_rings_run(struct mt_rings *s, struct mt_writer *r, pid_t pid, struct mt_fallback *fb)
{
	int status = 0, reaped = 0;
	/* Every signal the command gets stops it, followed with ptrace, until
	 * this loop lets it go on: its stops wake the loop at once (SIGCHLD
	 * through a signalfd), not at the end of the 5 ms beat (a program
	 * signalled every millisecond would run at a fifth of its speed). */
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int wake = -1;
	if (!sigprocmask(SIG_BLOCK, &chld, &old))
		wake = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	for (;;) {
		/* Rings are drained on a 5 ms beat; new connections and the
		 * command's stops wake us. */
		struct pollfd pl[2] = { { .fd = s->lfd, .events = POLLIN },
					{ .fd = wake, .events = POLLIN } };
		if (poll(pl, wake >= 0 ? 2 : 1, 5) > 0 && (pl[0].revents & POLLIN))
			/* once reaped, the command's pid could be another's */
			accept_conn(s, r, reaped ? 0 : pid);
		struct signalfd_siginfo si;
		while (wake >= 0 && read(wake, &si, sizeof si) == (ssize_t)sizeof si)
			;
		mt_fallback_poll(fb);
		int st;
		/* the stops so far (bounded: the rings are drained in between) */
		for (int n = 0; n < 64 && !reaped && waitpid(pid, &st, WNOHANG) == pid; n++) {
			/* with the BPF fallback, the command is followed with
			 * ptrace: its stops come here too */
			if (WIFSTOPPED(st) && mt_fallback_active(fb)) {
				mt_fallback_stopped(fb, pid, st);
			} else if (WIFSTOPPED(st)) {
				command_stopped(s, pid, st);
			} else if (WIFEXITED(st) || WIFSIGNALED(st)) {
				status = st;
				reaped = 1;
			}
		}
		for (size_t k = s->n; k-- > 0;) {
			struct conn *c = s->v[k];
			const char *why = drain(c);
			if (why) {
				/* hung up on: it costs that process its events, no
				 * one else's */
				close_conn(s, k, 0, status, why);
				continue;
			}
			struct pollfd p = { .fd = c->fd, .events = POLLIN | POLLRDHUP };
			if (!c->hung_up && poll(&p, 1, 0) > 0 && (p.revents & POLLIN))
				on_message(c, pid, fb);
			if (c->hung_up ||
			    (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))) {
				/* A connection ends when its process exits or execs;
				 * the exit status goes in once it is known: the
				 * command's when we reap it, another's when its
				 * parent has (the pidfd tells).  An exec shows as a
				 * new connection from the same pid (accept_conn). */
				c->hung_up = 1;
				if (c->pid == (uint32_t)pid) {
					if (reaped)
						close_conn(s, k, 1, status, NULL);
					continue;
				}
				/* a process that closed its descriptors (a daemon)
				 * keeps its ring: it is read until the process ends */
				if (lives(c))
					continue;
				uint64_t now = mt_now_ns();
				if (!c->gone)
					c->gone = now;
				int st, got = pidfd_status(c->pidfd, &st);
				if (got > 0)
					close_conn(s, k, 1, st, NULL);
				else if (got < 0 || now - c->gone > EXIT_WAIT_NS)
					close_conn(s, k, 0, 0, NULL);
			}
		}
		if (reaped && s->n == 0) {
			/* a last look for a connection that raced the exit */
			if (poll(pl, 1, 0) > 0 && (pl[0].revents & POLLIN))
				continue;
			break;
		}
	}
	if (wake >= 0)
		close(wake);
	sigprocmask(SIG_SETMASK, &old, NULL);
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
