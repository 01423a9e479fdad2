/*
 * cmd_server.c - `memtrace server [--listen ADDR:PORT] FILE...`: loads the
 * recordings, symbolizes their call sites once, and serves them over HTTP
 * (server/server.c) with bytehound's REST API (server/api*.c) until stopped.
 */
#include "commands.h"
#include "options.h"
#include "analyse/sites.h"
#include "report/report.h"
#include "server/server.h"
#include "base/hash.h"
#include "base/json.h"
#include "query/db.h"
#include "base/net.h"
#include "base/util.h"
#include "format/format.h"
#include "base/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: memtrace server [--listen ADDR:PORT] FILE...\n"
	"\n"
	"Loads the recordings FILE... and serves them over HTTP: a REST API after\n"
	"bytehound's (JSON listings of allocations and call sites, a call tree,\n"
	"memory over time, flamegraph and heaptrack exports, every one narrowed by\n"
	"bytehound's allocation filters) and a page to open in a browser.  The\n"
	"recordings are numbered 0, 1, ... in the order given; `last` names the last.\n"
	"\n"
	"options:\n";

static const char epilogue[] =
	"\n"
	"Only this machine can connect unless ADDR says otherwise: the data shows\n"
	"what the traced programs did.  Off loopback every request must carry the\n"
	"access token: open the URL printed at start (it sets a cookie), or send\n"
	"`Authorization: Bearer TOKEN`.  Requests sent by pages of other sites are\n"
	"refused.  A recording that does not load is skipped (and listed with its\n"
	"error).  SIGINT or SIGTERM stops the server.\n"
	"Endpoints and their parameters: memtrace-server(1).\n";

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

/* ---- loading ---- */

static uint64_t frame_hash(const struct mt_frame *f, uint64_t salt)
{
	uint64_t h = mt_hash64(f->address ^ ((uint64_t)f->inlined << 63) ^ salt);
	h = mt_hash_combine(h, (uint64_t)(uintptr_t)f->function);
	h = mt_hash_combine(h, (uint64_t)(uintptr_t)f->file);
	h = mt_hash_combine(h, (uint64_t)(uintptr_t)f->module);
	return mt_hash_combine(h, (uint64_t)f->line);
}

/* The same frame: the symbolizer keeps one copy of each string. */
static int frame_same(const struct mt_frame *a, const struct mt_frame *b)
{
	return a->address == b->address && a->inlined == b->inlined && a->function == b->function &&
	       a->file == b->file && a->module == b->module && a->line == b->line;
}

/* The distinct frames of a process, found by hash while it is symbolized. */
struct frame_set {
	uint32_t *index; /* frame + 1, 0 = empty */
	size_t mask, cap;
	uint64_t salt; /* addresses come from the file (mt_hash_salt) */
};

static uint32_t frame_id(struct srv_proc *sp, struct frame_set *fs, const struct mt_frame *f)
{
	if ((sp->nframes + 1) * 2 > (fs->index ? fs->mask + 1 : 0)) {
		free(fs->index);
		fs->mask = fs->index ? fs->mask * 2 + 1 : 1023;
		fs->index = xcalloc(fs->mask + 1, sizeof *fs->index);
		for (size_t k = 0; k < sp->nframes; k++) {
			size_t j = frame_hash(&sp->frames[k], fs->salt) & fs->mask;
			while (fs->index[j])
				j = (j + 1) & fs->mask;
			fs->index[j] = (uint32_t)k + 1;
		}
	}
	size_t i = frame_hash(f, fs->salt) & fs->mask;
	for (; fs->index[i]; i = (i + 1) & fs->mask)
		if (frame_same(&sp->frames[fs->index[i] - 1], f))
			return fs->index[i] - 1;
	mt_grow(&sp->frames, &fs->cap, sp->nframes, sizeof *sp->frames);
	sp->frames[sp->nframes] = *f;
	fs->index[i] = (uint32_t)++sp->nframes;
	return (uint32_t)sp->nframes - 1;
}

/* Symbolizes every site of P once, so that requests only read frames. */
static void symbolize(struct srv_proc *sp, const struct mt_process *p, const char *path, int *shown,
		      const struct timespec *t0)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	size_t nids = 0, cap = 0;
	struct frame_set fs = { .salt = mt_hash_salt() };
	int tty = isatty(2);
	sp->sym = mt_process_symbolizer(p);
	sp->nsites = p->figures.nsites;
	sp->site_off = xcalloc(sp->nsites + 1, sizeof *sp->site_off);
	sp->site_len = xcalloc(sp->nsites + 1, sizeof *sp->site_len);
	for (uint32_t s = 0; s < sp->nsites; s++) {
		int n = mt_site_frames(p, sp->sym, s, fr, MT_SYM_MAX_FRAMES);
		if (nids + (size_t)n + 1 >= cap) {
			cap = (nids + (size_t)n + 1) * 2;
			sp->frame_ids = xrealloc(sp->frame_ids, cap * sizeof *sp->frame_ids);
		}
		for (int k = 0; k < n; k++)
			sp->frame_ids[nids + (size_t)k] = frame_id(sp, &fs, &fr[k]);
		sp->site_off[s] = (uint32_t)nids;
		sp->site_len[s] = (uint32_t)n;
		nids += (size_t)n;
		if ((uint32_t)n > sp->max_depth)
			sp->max_depth = (uint32_t)n;
		if (tty && (s & 255) == 255) {
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0->tv_sec >= 1) {
				fprintf(stderr, "\rmemtrace: symbolizing %s: %3d%%", path,
					(int)(100.0 * s / sp->nsites));
				*shown = 1;
			}
		}
	}
	free(fs.index);
}

/* Loads PATH as recording ID into F (sel, procs): 0, or -1 with the error
 * in F->error.  The first load of a file says what it loaded, or why not;
 * a load again (the file grew) says nothing. */
static int load_file(struct srv_file *f, size_t id, const char *path, int first)
{
	char err[512];
	f->path = path;
	if (mt_select_load(&f->sel, path, NULL, err, sizeof err) < 0) {
		if (first && !mt_stop)
			mt_warning("%zu: %s; not served", id, err);
		f->error = xstrdup(err);
		return -1;
	}
	if (f->sel.all.truncated && first)
		mt_warning("%s is truncated (%s); serving what it holds", path, f->sel.all.why);
	const struct mt_recording *rec = &f->sel.all;
	f->procs = xcalloc(rec->nprocs ? rec->nprocs : 1, sizeof *f->procs);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int shown = 0;
	uint64_t allocs = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		symbolize(&f->procs[i], rec->procs[i], path, &shown, &t0);
		allocs += rec->procs[i]->figures.t.allocations;
	}
	if (shown)
		fprintf(stderr, "\r\033[K");
	if (!first)
		return 0;
	char a[32];
	const struct mt_process *p = rec->nprocs ? rec->procs[0] : NULL;
	fprintf(stderr, "memtrace: %zu: ", id);
	mt_text_str(stderr, path);
	fputs(": ", stderr);
	if (p) {
		fprintf(stderr, "pid %u ", p->pid);
		mt_text_str(stderr, p->exe ? p->exe : "?");
		fputs(", ", stderr);
	}
	if (rec->nprocs > 1)
		fprintf(stderr, "%zu more process%s, ", rec->nprocs - 1,
			rec->nprocs == 2 ? "" : "es");
	fprintf(stderr, "%s allocation%s\n", mt_fmt_count(allocs, a), mt_s(allocs));
	return 0;
}

/* What a load of F made: its sites' frames, its tables, its SQL. */
static void free_loaded(struct srv_file *f)
{
	if (!f->procs)
		return;
	for (size_t k = 0; k < f->sel.all.nprocs; k++) {
		struct srv_proc *sp = &f->procs[k];
		if (sp->sym)
			mt_sym_free(sp->sym);
		free(sp->frames);
		free(sp->frame_ids);
		free(sp->site_off);
		free(sp->site_len);
	}
	free(f->procs);
	f->procs = NULL;
	if (f->qdb) {
		mt_qdb_close(f->qdb);
		free(f->qdb);
		f->qdb = NULL;
	}
	mt_select_free(&f->sel);
}

static void free_files(struct srv_state *st)
{
	for (size_t i = 0; i < st->nfiles; i++) {
		free_loaded(&st->files[i]);
		free(st->files[i].error);
		srv_file_destroy(&st->files[i]);
	}
	free(st->files);
}

/* ---- the loader: first loads, then loads again of files that grew ---- */

struct loader {
	struct srv_state *st;
	pthread_t thread;
	volatile int stop; /* the server ends (or did not start) */
	uint64_t *next;	   /* per file: no new reading before this (now_ns) */
};

static uint64_t now_ns(void)
{
	return mt_now_ns();
}

/* The file's size and modification time now: 0, or -1 when it is gone. */
static int file_stamp(const char *path, uint64_t *size, int64_t *mtime)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		return -1;
	*size = (uint64_t)sb.st_size;
	*mtime = (int64_t)mt_timespec_ns(sb.st_mtim);
	return 0;
}

/* Loads file ID (again) and puts the load in its place; a failed first
 * load lists it with its error, a failed load again keeps the one before
 * (a recording being written can end in half a chunk, or the load was
 * cancelled). */
static void load_into(struct loader *ld, size_t id, int first)
{
	struct srv_file *f = &ld->st->files[id];
	uint64_t size = 0;
	int64_t mtime = 0;
	/* what the load will see at least: growth from here on is seen by
	 * the next look */
	if (file_stamp(f->path, &size, &mtime) == 0) {
		f->seen_size = size;
		f->seen_mtime = mtime;
	}
	pthread_mutex_lock(&f->lock);
	f->size = size;
	pthread_mutex_unlock(&f->lock);
	__atomic_store_n(&f->progress, 0, __ATOMIC_RELAXED);
	struct srv_file fresh = { .path = f->path };
	struct mt_budget b = { .cancel = &mt_stop, .cancel2 = &ld->stop, .progress = &f->progress };
	mt_budget_set(&b);
	uint64_t t0 = now_ns();
	int rc = load_file(&fresh, id, f->path, first);
	/* a file that keeps growing is read again no sooner than its reading
	 * took once more: reading it again takes half of a core at most */
	ld->next[id] = now_ns() + (now_ns() - t0);
	mt_budget_set(NULL);
	if (rc < 0) {
		srv_file_fail(f, fresh.error);
		return;
	}
	srv_file_publish(f, &fresh);
	free_loaded(&fresh);
}

/* A look every second: a file whose size or time changed is loaded again
 * (a recording `memtrace record` or `gather` is still writing: the GUI
 * sees its generation change and draws it again). */
#define LOOK_EVERY_MS 1000

static void *loader_run(void *arg)
{
	struct loader *ld = arg;
	struct srv_state *st = ld->st;
	for (size_t i = 0; i < st->nfiles && !mt_stop && !ld->stop; i++)
		if (st->files[i].state == SRV_LOADING)
			load_into(ld, i, 1);
	while (!mt_stop && !ld->stop) {
		for (int k = 0; k < LOOK_EVERY_MS / 50 && !mt_stop && !ld->stop; k++)
			usleep(50000);
		for (size_t i = 0; i < st->nfiles && !mt_stop && !ld->stop; i++) {
			struct srv_file *f = &st->files[i];
			uint64_t size;
			int64_t mtime;
			if (now_ns() >= ld->next[i] && file_stamp(f->path, &size, &mtime) == 0 &&
			    (size != f->seen_size || mtime != f->seen_mtime))
				load_into(ld, i, 0);
		}
	}
	return NULL;
}

/* Whether PATH opens as a recording (its header): the files that cannot
 * are listed with their error from the start. */
static int check_file(struct srv_file *f, size_t id)
{
	struct mt_file_reader r;
	char err[512];
	file_stamp(f->path, &f->seen_size, &f->seen_mtime);
	if (mt_file_open(&r, f->path, err, sizeof err) < 0) {
		mt_warning("%zu: %s; not served", id, err);
		srv_file_fail(f, xstrdup(err));
		return -1;
	}
	mt_file_close(&r);
	return 0;
}

/* Where to listen (--listen, --interface, --port), the access token
 * (--token) and a request's time budget (--timeout). */
struct listen_at {
	char host[256], port[8];
	const char *token;
	unsigned timeout_s;
	uint64_t request_mib; /* 0: the default */
};

#define TOKEN_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

static int opt_token(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct listen_at *at = o->target;
	(void)arg;
	if (!val || strlen(val) < 16 || strlen(val) > 64 || strspn(val, TOKEN_CHARS) != strlen(val))
		return mt_usage_error(cmd, "--token: 16 to 64 letters, digits, '-' or '_'");
	at->token = val;
	return 0;
}

static int opt_timeout(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct listen_at *at = o->target;
	uint64_t n;
	(void)arg;
	if (!val || mt_parse_u64(val, &n) || n < 1 || n > 86400)
		return mt_usage_error(cmd, "--timeout: '%s' is not seconds from 1 to 86400",
				      val ? val : "");
	at->timeout_s = (unsigned)n;
	return 0;
}

static int opt_request_memory(const char *cmd, const struct mt_option *o, const char *arg,
			      const char *val)
{
	struct listen_at *at = o->target;
	uint64_t n;
	(void)arg;
	if (!val || mt_parse_u64(val, &n) || n < 16 || n > (1u << 24))
		return mt_usage_error(cmd, "--request-memory: '%s' is not MiB from 16 to 16777216",
				      val ? val : "");
	at->request_mib = n;
	return 0;
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

static int opt_listen(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct listen_at *at = o->target;
	(void)arg;
	if (mt_net_parse(val, at->host, sizeof at->host, at->port, sizeof at->port) < 0)
		return mt_usage_error(cmd, "--listen: '%s' is not ADDR:PORT", val ? val : "");
	return 0;
}

static int opt_interface(const char *cmd, const struct mt_option *o, const char *arg,
			 const char *val)
{
	struct listen_at *at = o->target;
	(void)arg;
	if (!val || !*val || strlen(val) >= sizeof at->host)
		return mt_usage_error(cmd, "--interface needs an address");
	snprintf(at->host, sizeof at->host, "%s", val);
	return 0;
}

static int opt_port(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct listen_at *at = o->target;
	(void)arg;
	if (mt_net_port(val, at->port, sizeof at->port) < 0)
		return mt_usage_error(cmd, "--port: '%s' is not a port number", val ? val : "");
	return 0;
}

/* The recordings to serve, in the order given. */
struct file_list {
	char **v;
	size_t n;
};

static int add_file(void *ctx, const char *cmd, const char *arg)
{
	struct file_list *fl = ctx;
	(void)cmd;
	fl->v[fl->n++] = (char *)arg;
	return 0;
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
		/* (--token was checked as it was parsed, opt_token) */
		size_t n = strlen(given);
		if (n < 16 || n > 64 || n >= len || strspn(given, TOKEN_CHARS) != n) {
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

/* Loads the recordings, then serves them until stopped. */
static int serve(const struct listen_at *at, const struct file_list *fl)
{
	struct srv_state st = { .timeout_s = at->timeout_s };
	char token[80];
	int family = AF_INET, status = MT_EXIT_RUNTIME;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t loaded = 0;
	mt_catch_stop_signals();
	/* the port first: a busy one is known before minutes of loading */
	int fd = open_listener(&st, at->host, at->port, &family);
	if (fd < 0)
		return MT_EXIT_RUNTIME;
	if (!st.loopback && make_token(&st, at->token, token, sizeof token) < 0) {
		close(fd);
		return MT_EXIT_RUNTIME;
	}
	st.nworkers = ncpu < 2 ? 2 : ncpu > 16 ? 16 : (unsigned)ncpu;
	pthread_mutex_init(&st.symlock, NULL);
	pthread_mutex_init(&st.qlock, NULL);
	sem_init(&st.slots, 0, st.nworkers);
	st.request_bytes = at->request_mib ? at->request_mib << 20 :
					     default_request_bytes(st.nworkers);
	st.files = xcalloc(fl->n, sizeof *st.files);
	st.nfiles = fl->n;
	/* a file that does not load is listed with its error; the others
	 * are served, from the start: they load in the loader's thread
	 * while /list says how far it got, and requests wait for them */
	for (size_t i = 0; i < fl->n; i++) {
		srv_file_init(&st.files[i], fl->v[i]);
		loaded += check_file(&st.files[i], i) == 0;
	}
	if (!loaded) {
		close(fd);
		mt_error("no recording loaded: %s%s", st.files[0].error,
			 fl->n > 1 ? " (and the others neither)" : "");
		goto done;
	}
	struct loader ld = { .st = &st, .next = xcalloc(st.nfiles, sizeof *ld.next) };
	/* the stop signals go to the main thread alone (srv_run waits for
	 * them there): the loader is made with them blocked */
	sigset_t stop, old;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	int made = pthread_create(&ld.thread, NULL, loader_run, &ld);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (made != 0) {
		close(fd);
		mt_error("cannot start a thread to load the recordings");
		free(ld.next);
		goto done;
	}
	status = srv_run(&st, fd, family) == 0 ? MT_EXIT_OK : MT_EXIT_RUNTIME;
	/* a stop signal ends a load at its next chunk */
	ld.stop = 1;
	pthread_join(ld.thread, NULL);
	free(ld.next);
done:
	free_files(&st);
	sem_destroy(&st.slots);
	pthread_mutex_destroy(&st.symlock);
	pthread_mutex_destroy(&st.qlock);
	return status;
}

int cmd_server(int argc, char **argv)
{
	struct listen_at at = { .host = "127.0.0.1", .port = "8080", .timeout_s = 60 };
	struct file_list fl = { .v = xcalloc((size_t)argc, sizeof *fl.v) };
	const struct mt_option opts[] = {
		{ .shortopt = "-l",
		  .longopt = "--listen",
		  .argh = "ADDR:PORT",
		  .help = "where to listen (default 127.0.0.1:8080); ADDR may\n"
			  "be a name or [IPv6]; PORT alone means 127.0.0.1",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_listen },
		{ .shortopt = "-i",
		  .longopt = "--interface",
		  .argh = "ADDR",
		  .help = "the address alone (bytehound's option)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_interface },
		{ .shortopt = "-p",
		  .longopt = "--port",
		  .argh = "PORT",
		  .help = "the port alone (bytehound's option)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_port },
		{ .longopt = "--token",
		  .argh = "TOKEN",
		  .help = "the access token of a server off loopback (default:\n"
			  "$MEMTRACE_TOKEN, or a random one, printed at start)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_token },
		{ .longopt = "--timeout",
		  .argh = "SECONDS",
		  .help = "a request's time budget (default 60)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_timeout },
		{ .longopt = "--request-memory",
		  .argh = "MIB",
		  .help = "what the readings of one request may take (default:\n"
			  "a quarter of the memory, shared by the workers)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_request_memory },
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = { .cmd = "server",
				       .opts = opts,
				       .usage = usage_text,
				       .col = 26,
				       .epilogue = epilogue,
				       .operands = MT_OPERANDS_EVERY,
				       .dashdash = 1,
				       .operand = add_file,
				       .operand_ctx = &fl };
	int status = mt_options_parse(&cl, argc, argv, NULL);
	if (status == MT_OPTS_GO_ON && !fl.n)
		status = mt_usage_error("server", "no recording given");
	if (status == MT_OPTS_GO_ON)
		status = serve(&at, &fl);
	free(fl.v);
	return status;
}
