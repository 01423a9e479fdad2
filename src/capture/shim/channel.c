/*
 * channel.c - where the shim's records go.
 *
 * Under `memtrace record` (MEMTRACE_CONNECT set) records go into a ring in a
 * memfd shared with the recorder (ring.h), which compresses and writes them
 * on another core: the traced thread only encodes and copies.  Standalone
 * (plain LD_PRELOAD) the same ring is private and is drained into the output
 * file by whichever thread finds it full, and at least every second.  In
 * both, a thread of the shim's (the flusher) merges the threads' buffers
 * every 20 ms.
 *
 * All record writing happens with the channel lock held: a single-threaded
 * process takes it per event, several threads once per merge of their
 * buffers (tbuf.c).  The lock spins, then sleeps on a futex (a merge holds
 * it for a while, and its thread may be preempted); a pthread mutex could
 * call into code that allocates.  It knows its owner, so that a signal
 * handler that interrupted the thread holding it can tell, and hold its
 * events back (preload.c) instead of waiting for a lock that cannot be
 * released under it.
 *
 * A child made without glibc's fork (a raw clone or clone3, as runtimes and
 * sandboxes make them) runs no atfork handler: it would write into its
 * parent's ring, which it shares.  The lock therefore lives in a page the
 * kernel zeroes in any child that does not share our memory
 * (MADV_WIPEONFORK), next to a flag saying the ring is this process's: the
 * child finds the lock free and the flag clear the first time it takes the
 * lock, and becomes a process of its own (or untraced) before it writes
 * anything.  This costs nothing on the hot path beyond the load of a word
 * on the line the lock already brought in; getpid() would be a system call
 * per event.
 */
#include "shim.h"
#include "format/cull.h"
#include "format/format.h"
#define MT_RING_MMAP mt_sys_mmap
#define MT_RING_MUNMAP mt_sys_munmap
#include "format/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct mt_enc mt_enc_state;

struct fork_guard {
	_Atomic uintptr_t lock; /* 0, or the owner's token */
	int live;		/* the ring is this process's: cleared in a child by the kernel */
	/* Threads that gave up spinning sleep on WAKE (a futex), which an
	 * unlock bumps when it sees WAITERS: a merge holds the lock for a
	 * while, and its thread may be preempted, so others must not spin. */
	_Atomic uint32_t waiters, wake;
};
/* Until the wiped page is set up (or if the kernel has no MADV_WIPEONFORK:
 * before 4.14), a guard that never says "child". */
static struct fork_guard boot_guard = { 0, 1, 0, 0 };
static struct fork_guard *guard = &boot_guard;
volatile int *mt_channel_live = &boot_guard.live;
static void (*new_process)(void);
/* A thread's token is the address of this variable of its own: unique among
 * live threads, known without a system call, and the same in a fork child,
 * whose one thread continues the forking one. */
static __thread char t_token;
static struct mt_ring_hdr *ring;
static uint8_t *data;
static uint64_t size, mask, head;
/* How long an exec waits for the recorder to put the BPF backend in place
 * (placing the probes takes tens of milliseconds; opening BPF first, some
 * hundreds). */
#define FALLBACK_WAIT_NS 2000000000ull

static int sock = -1;	/* record mode: connection to the recorder */
static int out_fd = -1; /* standalone: the recording file */
/* What they are (fds.c): a program may close them and reuse the numbers. */
static struct mt_fd_id sock_id, out_id;
static pid_t recorder_pid; /* to tell it died once the program closed sock */
static z_stream zs;
static uint8_t *scratch;
static size_t scratch_len;
static char out_path[4096];
static uint64_t last_flush, commits;
/* Standalone, after a chunk could not be written (a full disk): the stream
 * decodes from its start, so nothing more of it is written; the events are
 * counted in a loss chunk of a fixed size, placed once it fits and then
 * rewritten in place (as the recorder does, collect/writer.c). */
static int started, dropped;
static struct mt_salvage lost;
static uint8_t lost_process[2048]; /* the PROCESS record, if the file has none */
static size_t lost_process_len;
static off_t loss_at = -1;
static int loss_placed;
static struct mt_cull *cull; /* standalone with MEMTRACE_CULL_TEMPORARY_ALLOCATIONS */
static uint8_t *cbuf;	     /* what the culler let through, not yet written */
static size_t clen, ccap;
/* Standalone: the compressor, the culler or the file is in use (with the
 * lock held); a process ending from a signal handler that interrupted this
 * cannot write the file (mt_channel_end_interrupted). */
static volatile int writing;

static void (*tick)(void); /* what the flusher runs every 20 ms */

void mt_channel_on_tick(void (*fn)(void))
{
	__atomic_store_n(&tick, fn, __ATOMIC_RELEASE);
}

static void cull_emit(void *ctx, const uint8_t *p, size_t n);
static void start_flusher(void);
static void mt_channel_flush_partial(void);

void mt_channel_guard_init(void (*on_new_process)(void))
{
	struct fork_guard *g = mt_map(4096);
	new_process = on_new_process;
	if (!g)
		return;
	if (madvise(g, 4096, MADV_WIPEONFORK) < 0) {
		mt_log(3, "no MADV_WIPEONFORK (%s): a child made by a raw clone is not told apart",
		       strerror(errno));
		mt_sys_munmap(g, 4096);
		return;
	}
	g->live = 1;
	guard = g;
	mt_channel_live = &g->live;
}

int mt_channel_trylock(void)
{
	uintptr_t free_ = 0;
	if (atomic_load_explicit(&guard->lock, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong_explicit(&guard->lock, &free_, (uintptr_t)&t_token,
						     memory_order_acquire, memory_order_relaxed))
		return 0;
	if (likely(guard->live) || !ring)
		return 1;
	mt_channel_unlock();
	return 0;
}

/* Sleeps until the lock is released, or 1 ms at most: the unlock does not
 * fence its store from its look at WAITERS, so once in a while a wake-up
 * is missed (a fence would cost every event). */
static void wait_for_unlock(struct fork_guard *g)
{
	atomic_fetch_add(&g->waiters, 1);
	uint32_t w = atomic_load(&g->wake);
	if (atomic_load(&g->lock)) {
		struct timespec ts = { .tv_nsec = 1000000 };
		syscall(SYS_futex, &g->wake, FUTEX_WAIT_PRIVATE, w, &ts, NULL, 0);
	}
	atomic_fetch_sub(&g->waiters, 1);
}

void mt_channel_lock(void)
{
	struct fork_guard *g = guard;
	uintptr_t self = (uintptr_t)&t_token;
	for (unsigned spins = 0;; spins++) {
		uintptr_t free_ = 0;
		if (!atomic_load_explicit(&g->lock, memory_order_relaxed) &&
		    atomic_compare_exchange_strong_explicit(
			    &g->lock, &free_, self, memory_order_acquire, memory_order_relaxed)) {
			if (likely(g->live) || !ring)
				return;
			/* A child that no fork handler saw (we are its only
			 * thread, and hold the lock as those handlers expect):
			 * the ring is the parent's.  The handler unlocks. */
			new_process();
			spins = 0;
			continue;
		}
		/* held for one event: spin, then let others run; held for a
		 * merge (or by a thread that lost its CPU): sleep */
		if (spins < 64)
			mt_cpu_relax();
		else if (spins < 64 + 32)
			sched_yield();
		else
			wait_for_unlock(g);
	}
}

void mt_channel_unlock(void)
{
	struct fork_guard *g = guard;
	atomic_store_explicit(&g->lock, 0, memory_order_release);
	if (unlikely(atomic_load_explicit(&g->waiters, memory_order_relaxed))) {
		atomic_fetch_add(&g->wake, 1);
		syscall(SYS_futex, &g->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

uint32_t mt_channel_pid(void)
{
	return ring ? ring->pid : 0;
}

int mt_channel_held_here(void)
{
	return atomic_load_explicit(&guard->lock, memory_order_relaxed) == (uintptr_t)&t_token;
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt sz)
{
	(void)opaque;
	return mt_arena_alloc((size_t)items * sz);
}

static void z_free(voidpf opaque, voidpf p)
{
	/* arena memory is never returned; deflate is set up once per process */
	(void)opaque;
	(void)p;
}

static int make_ring(uint64_t want)
{
	int fd = (int)syscall(SYS_memfd_create, "memtrace-ring",
			      3u /* MFD_CLOEXEC | MFD_ALLOW_SEALING */);
	if (fd < 0)
		return -1;
	/* sealed at its size: the recorder maps no ring that could shrink */
	if (ftruncate(fd, (off_t)(MT_RING_HDR + want)) < 0 ||
	    fcntl(fd, F_ADD_SEALS, MT_RING_SEALS) < 0)
		goto fail;
	ring = mt_ring_map(fd, want);
	if (!ring)
		goto fail;
	size = want;
	mask = want - 1;
	data = mt_ring_data(ring);
	head = 0;
	ring->magic = MT_RING_MAGIC;
	ring->size = want;
	ring->pid = (uint32_t)getpid();
	return fd;
fail:
	close(fd);
	return -1;
}

/* The length of MEMTRACE_CONNECT's socket name: what precedes '#'. */
static size_t connect_name_len(void)
{
	const char *hash = strchr(mt_cfg.connect, '#');
	return hash ? (size_t)(hash - mt_cfg.connect) : strlen(mt_cfg.connect);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The token after '#' (all zero when there is none or it is malformed: the
 * recorder then admits this process by its ancestry alone). */
static void connect_token(uint8_t token[MT_TOKEN_LEN])
{
	const char *hex = mt_cfg.connect + connect_name_len();
	memset(token, 0, MT_TOKEN_LEN);
	if (*hex++ != '#')
		return;
	for (int i = 0; i < MT_TOKEN_LEN; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hi < 0 ? -1 : hex_digit(hex[2 * i + 1]);
		if (lo < 0) {
			memset(token, 0, MT_TOKEN_LEN);
			return;
		}
		token[i] = (uint8_t)(hi << 4 | lo);
	}
}

static int connect_recorder(int memfd, uint32_t ppid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = connect_name_len();
	if (n + 1 > sizeof sa.sun_path)
		return -1;
	/* '@' names a socket in the abstract namespace, as ss(8) prints them. */
	memcpy(sa.sun_path, mt_cfg.connect, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = 0;
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0)
		goto fail;
	struct mt_hello hello = {
		.magic = MT_RING_MAGIC, .pid = (uint32_t)getpid(), .ppid = ppid, .size = size
	};
	connect_token(hello.token);
	struct ucred cred;
	socklen_t clen = sizeof cred;
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
		recorder_pid = cred.pid;
	struct iovec iov = { .iov_base = &hello, .iov_len = sizeof hello };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &memfd, sizeof memfd);
	if (sendmsg(s, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof hello)
		goto fail;
	return mt_fd_place(s, &sock_id);
fail:
	close(s);
	return -1;
}

int mt_channel_ask_fallback(const char *path)
{
	/* "+bpf" after the token: the recorder can put the BPF backend in
	 * our stead (as root); otherwise nobody would answer */
	if (sock < 0 || !mt_cfg.connect || !strstr(mt_cfg.connect + connect_name_len(), "+bpf") ||
	    !mt_fd_is(sock, &sock_id))
		return 0;
	char msg[4097];
	size_t n = strnlen(path, sizeof msg - 2);
	msg[0] = 'F';
	memcpy(msg + 1, path, n);
	if (send(sock, msg, n + 1, MSG_NOSIGNAL) != (ssize_t)(n + 1))
		return 0;
	/* Bounded: a recorder that does not answer in time leaves the
	 * program untraced, as without the fallback, rather than stalled. */
	uint64_t end = mt_now() + FALLBACK_WAIT_NS;
	for (;;) {
		uint64_t now = mt_now();
		if (now >= end)
			return 0;
		struct pollfd p = { .fd = sock, .events = POLLIN };
		int r = poll(&p, 1, (int)((end - now) / 1000000u) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || !(p.revents & POLLIN))
			return 0;
		char answer;
		return recv(sock, &answer, 1, MSG_DONTWAIT) == 1 && answer == 'g';
	}
}

/* MADE_UP: the name is the shim's default, not MEMTRACE_OUTPUT. */
static int open_output(int made_up)
{
	if (!scratch) {
		scratch_len = mt_chunk_bound(size);
		scratch = mt_map(scratch_len);
		zs.zalloc = z_alloc;
		zs.zfree = z_free;
		if (!scratch || deflateInit(&zs, 1) != Z_OK)
			return -1;
	}
	if (mt_cfg.cull && !cull) {
		ccap = size;
		cbuf = mt_map(ccap);
		cull = cbuf ? mt_cull_new(mt_cfg.cull_ns, cull_emit, NULL) : NULL;
		if (cull)
			mt_cull_set_pending_limit(cull, mt_cfg.cull_pending);
	}
	if (!made_up) {
		out_fd = mt_fd_place(mt_file_create(out_path), &out_id);
		return out_fd;
	}
	/* A name the shim made up, in a directory others may write to: what is
	 * there already (a file, a link planted by another user) is left
	 * alone, and memtrace.EXE.PID.N.mtrace, the next free N, taken. */
	mt_expand_path(out_path, sizeof out_path, MT_OUTPUT_STEM);
	mt_fd_absolute(out_path, sizeof out_path);
	size_t n = strlen(out_path);
	for (unsigned i = 0; i < 100; i++) {
		if (i)
			snprintf(out_path + n, sizeof out_path - n, ".%u.mtrace", i);
		else
			snprintf(out_path + n, sizeof out_path - n, ".mtrace");
		out_fd = mt_file_create_new(out_path);
		if (out_fd >= 0 || errno != EEXIST)
			break;
	}
	return out_fd = mt_fd_place(out_fd, &out_id);
}

/* A thread of the shim's runs the tick (preload.c: it merges the threads'
 * buffers) every 20 ms, so that what a thread recorded before it went quiet
 * reaches the recorder, and, standalone, writes out what is buffered twice a second, so that a
 * program that goes quiet and is then killed loses nothing older than that.
 * (Under `memtrace record` the recorder holds the ring instead.) */
static void *flusher(void *arg)
{
	(void)arg;
	for (unsigned i = 1;; i++) {
		struct timespec ts = { .tv_nsec = 20000000 };
		nanosleep(&ts, NULL);
		if (!ring)
			continue;
		void (*fn)(void) = __atomic_load_n(&tick, __ATOMIC_ACQUIRE);
		if (fn)
			fn();
		if (sock < 0 && i % 25 == 0 && head != ring->tail &&
		    mt_now() - last_flush >= 400000000ull)
			mt_channel_flush_partial();
	}
	return NULL;
}

static void start_flusher(void)
{
	if (mt_shim_thread(flusher, NULL, 64 * 1024) != 0)
		mt_log(2,
		       "no flusher thread: the file is written when the buffer fills and at exit");
}

/* A process the shim cannot trace says so, whatever MEMTRACE_LOG asks
 * (short of "off"): its figures would otherwise be missing in silence. */
static int channel_open(uint32_t ppid);

int mt_channel_open(uint32_t ppid)
{
	struct rlimit saved;
	int lifted = mt_fd_lift_limit(&saved);
	int r = channel_open(ppid);
	if (lifted)
		mt_fd_restore_limit(&saved);
	return r;
}

static int channel_open(uint32_t ppid)
{
	int fd = make_ring(mt_cfg.connect ? MT_RING_DEFAULT_SIZE : (8ull << 20));
	if (fd < 0) {
		mt_log(0, "not traced: cannot create the event buffer: %s", strerror(errno));
		return -1;
	}
	ring->ppid = ppid;
	if (mt_cfg.connect) {
		sock = connect_recorder(fd, ppid);
		close(fd);
		if (sock < 0) {
			/* the name only: the token is not for logs */
			mt_log(0, "not traced: cannot reach the recorder at %.*s: %s",
			       (int)connect_name_len(), mt_cfg.connect, strerror(errno));
			return -1;
		}
		start_flusher();
		guard->live = 1;
		return 0;
	}
	close(fd);
	char prev[sizeof out_path];
	memcpy(prev, out_path, sizeof prev);
	mt_expand_path(out_path, sizeof out_path, mt_cfg.output);
	mt_fd_absolute(out_path, sizeof out_path);
	int made_up = strcmp(mt_cfg.output, MT_OUTPUT_DEFAULT) == 0;
	if (made_up) {
		/* open_output finds a free name */
	} else if (prev[0] && strcmp(prev, out_path) == 0) {
		/* A followed child whose pattern has no %p: keep files apart. */
		size_t n = strlen(out_path);
		mt_expand_path(out_path + n, sizeof out_path - n, ".%p");
	} else if (strstr(mt_cfg.output, "%p") && access(out_path, F_OK) == 0) {
		/* One file per process was asked for, and this pid has one: the
		 * program exec'd itself.  Keep what the old image wrote. */
		size_t n = strlen(out_path);
		for (unsigned i = 1; i < 1000 && access(out_path, F_OK) == 0; i++)
			snprintf(out_path + n, sizeof out_path - n, ".%u", i);
	}
	if (open_output(made_up) < 0) {
		const char *why = mt_file_refused(out_path, errno);
		if (why)
			mt_log(0, "not traced: %s %s", out_path, why);
		else
			mt_log(0, "not traced: cannot create %s: %s", out_path, strerror(errno));
		return -1;
	}
	mt_log(3, "writing to %s", out_path);
	start_flusher();
	guard->live = 1;
	return 0;
}

/* Whether out_fd is still the recording: a program that closed it (and
 * maybe opened a file of its own at its number) gets the recording opened
 * again, at its end, if it is still the same file. */
static int out_ready(void)
{
	if (out_fd < 0)
		return 0;
	if (mt_fd_is(out_fd, &out_id))
		return 1;
	struct rlimit saved;
	int lifted = mt_fd_lift_limit(&saved);
	struct mt_fd_id id;
	int fd = mt_fd_place(open(out_path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW), &id);
	if (lifted)
		mt_fd_restore_limit(&saved);
	if (fd >= 0 && id.dev == out_id.dev && id.ino == out_id.ino &&
	    lseek(fd, 0, SEEK_END) >= 0) {
		out_fd = fd;
		return 1;
	}
	if (fd >= 0)
		close(fd);
	out_fd = -1;
	mt_log(1, "%s was closed by the program and cannot be opened again: %s", out_path,
	       strerror(errno));
	return 0;
}

/* Places or rewrites the loss chunk; an output that cannot seek gets it
 * once, when the program ends (FINAL). */
static void write_loss(int final)
{
	if (!out_ready())
		return;
	uint8_t *out = scratch; /* free: the chunk it held was not written */
	size_t len =
		mt_loss_records(&lost, lost_process, lost_process_len, out + MT_CHUNK_HEADER_SIZE);
	if (loss_placed) {
		if (loss_at >= 0)
			mt_chunk_rewrite(out_fd, (uint64_t)loss_at, out, 0, len);
		return;
	}
	off_t at = lseek(out_fd, 0, SEEK_CUR);
	if ((at >= 0 || final) && mt_chunk_put(out_fd, out, 0, len, (uint32_t)len, 0) == 0) {
		loss_placed = 1;
		loss_at = at;
	}
}

static void write_chunk(const uint8_t *p, size_t n)
{
	if (!n)
		return;
	if (!dropped && out_ready() &&
	    mt_chunk_write(out_fd, &zs, 0, p, n, scratch, scratch_len) == 0) {
		started = 1;
		return;
	}
	if (!dropped)
		mt_log(1, "writing %s failed: %s (what does not fit is counted as lost)", out_path,
		       strerror(errno));
	dropped = 1;
	struct mt_salvage sv = { 0 };
	mt_chunk_salvage(p, n, &sv);
	lost.events += sv.events;
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		lost.lost[k] += sv.lost[k];
	if (sv.process && !started && loss_at < 0 && !lost_process_len &&
	    sv.process_len <= sizeof lost_process) {
		memcpy(lost_process, sv.process, sv.process_len);
		lost_process_len = sv.process_len;
	}
	write_loss(0);
}

static void cull_emit(void *ctx, const uint8_t *p, size_t n)
{
	(void)ctx;
	if (clen + n > ccap) {
		write_chunk(cbuf, clen);
		clen = 0;
	}
	if (n > ccap) {
		write_chunk(p, n);
		return;
	}
	memcpy(cbuf + clen, p, n);
	clen += n;
}

/* Standalone: compresses everything committed into a chunk of the file. */
static void drain_to_file(int final)
{
	uint64_t tail = ring->tail;
	if ((head == tail && !final) || out_fd < 0)
		return;
	writing = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (cull) {
		mt_cull_feed(cull, data + (tail & mask), head - tail, mt_now(), final);
		write_chunk(cbuf, clen);
		clen = 0;
	} else {
		write_chunk(data + (tail & mask), head - tail);
	}
	if (final && dropped)
		write_loss(1);
	ring->tail = head;
	last_flush = mt_now();
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	writing = 0;
}

const char *mt_channel_output(void)
{
	return sock < 0 && out_fd >= 0 ? out_path : "";
}

int mt_channel_append(uint32_t stream, const uint8_t *raw, size_t len)
{
	/* the scratch buffer is free between chunks, and bounds LEN: it was
	 * sized for the ring's 8 MiB */
	if (sock >= 0 || dropped || !scratch || len > size || !out_ready())
		return -1;
	writing = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	int r = mt_chunk_write(out_fd, &zs, stream, raw, len, scratch, scratch_len);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	writing = 0;
	return r;
}

static int recorder_gone(void)
{
	if (!mt_fd_is(sock, &sock_id)) /* the program closed it */
		return recorder_pid > 0 && kill(recorder_pid, 0) < 0 && errno == ESRCH;
	struct pollfd p = { .fd = sock, .events = POLLRDHUP };
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

uint8_t *mt_channel_reserve(size_t max)
{
	if (unlikely(!ring))
		return NULL;
	if (likely(size - (head - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE)) >= max))
		return data + (head & mask);
	if (max > size)
		return NULL;
	if (sock < 0) {
		drain_to_file(0);
		return data + (head & mask);
	}
	/* The recorder is behind: wait for it rather than lose events, unless
	 * it has died, in which case tracing stops. */
	for (unsigned i = 0;; i++) {
		struct timespec ts = { .tv_nsec = 200000 };
		nanosleep(&ts, NULL);
		if (size - (head - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE)) >= max)
			return data + (head & mask);
		if (i % 64 == 63 && recorder_gone()) {
			mt_enabled = 0;
			ring->lost[MT_LOST_CONSUMER_GONE]++;
			return NULL;
		}
	}
}

void mt_channel_commit(uint8_t *end)
{
	head += (uint64_t)(end - (data + (head & mask)));
	__atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
	/* Standalone, nobody else drains: keep the file at most a second behind. */
	if (sock < 0 && (++commits & 1023) == 0 && mt_now() - last_flush > 1000000000ull)
		drain_to_file(0);
}

static void mt_channel_flush_partial(void)
{
	if (!ring || sock >= 0)
		return;
	mt_channel_lock();
	drain_to_file(0);
	mt_channel_unlock();
}

void mt_channel_flush(void)
{
	/* (called from a signal handler that interrupted this thread while it
	 * held the lock, e.g. one that calls _exit or execve: what is buffered
	 * cannot be written, but waiting for the lock would never end) */
	if (!ring || sock >= 0 || mt_channel_held_here())
		return;
	mt_channel_lock();
	drain_to_file(1);
	mt_channel_unlock();
}

void mt_channel_end_interrupted(uint64_t lost_n, int have_exit, int64_t status)
{
	if (!ring)
		return;
	if (sock >= 0) {
		/* the recorder adds the ring's counters to the stream's losses
		 * once the process is gone (collect/rings.c) */
		if (lost_n)
			__atomic_fetch_add(&ring->lost[MT_LOST_SHIM_BUSY], lost_n,
					   __ATOMIC_RELAXED);
		return;
	}
	if (writing)
		return; /* the file itself was being written: nothing more can be */
	/* What was committed is whole; the record being encoded when the
	 * signal came (past HEAD) is written over.  LOST and EXIT records are
	 * encoded without the encoder's state, which that record may have
	 * left half-updated. */
	uint8_t *w = mt_channel_reserve(2 * MT_REC_MAX_SMALL);
	if (w) {
		uint8_t *e = w;
		if (lost_n)
			e = mt_enc_lost(e, MT_LOST_SHIM_BUSY, lost_n);
		if (have_exit)
			e = mt_enc_exit(e, mt_now(), status);
		mt_channel_commit(e);
	}
	drain_to_file(1);
}

void mt_channel_after_fork_child(int follow)
{
	/* Only the forking thread exists here, and it holds the lock (taken in
	 * the prepare handler).  The parent's ring and file are the parent's. */
	mt_fd_close(sock, &sock_id); /* unless the program put its own there */
	mt_fd_close(out_fd, &out_id);
	sock = out_fd = -1;
	started = dropped = loss_placed = 0;
	lost = (struct mt_salvage){ 0 };
	lost_process_len = 0;
	loss_at = -1;
	if (cull) {
		mt_cull_free(cull);
		cull = NULL;
	}
	clen = 0;
	if (ring)
		mt_ring_unmap(ring, size);
	ring = NULL;
	memset(&mt_enc_state, 0, sizeof mt_enc_state);
	if (follow)
		mt_channel_open((uint32_t)getppid());
}
