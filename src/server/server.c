/*
 * server.c - the HTTP side of `memtrace server`, on libmicrohttpd: methods,
 * who may ask (the Host, Origin and Sec-Fetch-Site checks, the access
 * token), path splitting (no path ever reaches the file system), query
 * parameters, static pages, and the answers of the API (api.c), streamed
 * from a thread of their own.  The library is loaded when the server starts
 * (mhd.h).
 */
#include "server.h"
#include "guard.h"
#include "mhd.h"
#include "base/util.h"
#include "base/clock.h"
#include "export/export.h"
#include "export/page.h"
#include "export/web/web.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_SEGMENTS 8

/* ---- the web GUI ---- */

/* The GUI's pages and their files: the web assets of src/export/web
 * (mt_web_asset), by name under /static/, and report.html as the page of
 * "/" (the list of recordings) and "/ui/<id>" (one recording), its slots
 * pointing at /static/ instead of pasting the files in as the html export
 * does (export/page.c walks the template for both).  gui.js then draws the
 * page from the API.  Every one of these answers carries a policy that lets
 * it load nothing but this server's own URLs. */
#define GUI_POLICY                                                                                     \
	"default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors " \
	"'none'"

static void serve_static(const char *name, const struct srv_query *q, struct srv_reply *r)
{
	const struct mt_web_asset *a = mt_web_asset(name);
	/* the template only ever goes out filled in */
	if (!a || !strcmp(name, "report.html")) {
		srv_error(r, 404, "no such file");
		return;
	}
	if (q->n) {
		srv_error(r, 400, "unknown parameter '%s'", q->v[0].key);
		return;
	}
	r->status = 200;
	r->type = a->type;
	r->len = a->len;
	r->body = xstrndup((const char *)a->data, a->len);
	r->policy = GUI_POLICY;
}

/* The asset names of SLOT, each as FMT with the name in it. */
static void each_name(FILE *f, const struct mt_page_slot *slot, const char *fmt)
{
	const char *name;
	size_t pos = 0, len;
	while (mt_page_slot_arg(slot, &pos, &name, &len))
		fprintf(f, fmt, (int)len, name);
}

/* What fills a GUI page's slots besides the files' names. */
struct gui_page {
	const char *title;
	int list; /* the list of recordings; else a recording's, with downloads */
};

static int fill_slot(void *ctx, FILE *f, const struct mt_page_slot *slot, char *err, size_t errlen)
{
	const struct gui_page *pg = ctx;
	(void)err;
	(void)errlen;
	if (mt_page_slot_is(slot, "title")) {
		fputs(pg->title, f);
	} else if (mt_page_slot_is(slot, "style")) {
		each_name(f, slot, "<link rel=\"stylesheet\" href=\"/static/%.*s\">\n");
		fputs("<link rel=\"stylesheet\" href=\"/static/gui.css\">\n"
		      "<link rel=\"icon\" href=\"/static/favicon.svg\">",
		      f);
	} else if (mt_page_slot_is(slot, "script")) {
		each_name(f, slot, "<script src=\"/static/%.*s\"></script>\n");
		fputs("<script src=\"/static/console.js\"></script>\n"
		      "<script src=\"/static/allocations.js\"></script>\n"
		      "<script src=\"/static/gui.js\"></script>",
		      f);
	} else if (mt_page_slot_is(slot, "data") && !pg->list) {
		/* the formats' download buttons, from the exports' table (a
		 * data block, which the policy lets be: it runs nothing); the
		 * report itself gui.js fetches */
		fputs("<script type=\"application/json\" id=\"memtrace-downloads\">", f);
		mt_export_buttons_json(f);
		fputs("</script>", f);
	}
	/* policy: the header */
	return 0;
}

/* The page titled TITLE: the LIST of recordings, which takes no query, or
 * a recording's, whose query is gui.js's (the filters of /ui/ID). */
static void serve_page(const char *title, const struct srv_query *q, int list, struct srv_reply *r)
{
	FILE *f;
	char err[200];
	struct gui_page pg = { .title = title, .list = list };
	if (list && q->n) {
		srv_error_page(r, 400, "unknown parameter '%s'", q->v[0].key);
		r->policy = GUI_POLICY;
		return;
	}
	if (!(f = open_memstream(&r->body, &r->len))) {
		srv_error(r, 500, "the page is not built in");
		return;
	}
	int rc = mt_page_write(f, fill_slot, &pg, err, sizeof err);
	fclose(f);
	if (rc < 0) {
		srv_error(r, 500, "the page is not built in");
		return;
	}
	r->status = 200;
	r->type = "text/html; charset=utf-8";
	r->policy = GUI_POLICY;
}

/* /ui/ID: the page of recording ID (a number in the list, or last). */
static void serve_recording(struct srv_state *st, const char *id, const struct srv_query *q,
			    struct srv_reply *r)
{
	size_t n = strlen(id);
	int ok = !strcmp(id, "last") || (n && n < 10 && strspn(id, "0123456789") == n &&
					 strtoul(id, NULL, 10) < st->nfiles);
	if (!ok) {
		srv_error_page(r, 404, "no recording '%s': ids are 0 to %zu, or last", id,
			       st->nfiles - 1);
		r->policy = GUI_POLICY;
		return;
	}
	char title[64];
	snprintf(title, sizeof title, "memtrace: recording %s", id);
	serve_page(title, q, 0, r);
}

/* ---- who may ask ---- */

/* The name HOST (a Host header) gives, without port, brackets or a final
 * dot, into NAME. */
static void host_name(const char *host, char *name, size_t len)
{
	char h[256], *n = h, *end;
	snprintf(h, sizeof h, "%s", host);
	if (h[0] == '[') {
		n = h + 1;
		if ((end = strchr(n, ']')))
			*end = 0;
	} else if ((end = strrchr(h, ':'))) {
		*end = 0;
	}
	size_t k = strlen(n);
	if (k && n[k - 1] == '.')
		n[--k] = 0;
	snprintf(name, len, "%s", n);
}

static int ip_literal(const char *name, int *loopback)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, name, &a4) == 1) {
		*loopback = (ntohl(a4.s_addr) >> 24) == 127;
		return 1;
	}
	if (inet_pton(AF_INET6, name, &a6) == 1) {
		*loopback = IN6_IS_ADDR_LOOPBACK(&a6);
		return 1;
	}
	return 0;
}

/* May a request name HOST?  Loopback names always; otherwise the address
 * the server was told to listen on or is bound to, and on a wildcard
 * address any address literal.  Never another name: a web page can point
 * a name of its own at this machine (DNS rebinding), not an address. */
static int allowed_host(const struct srv_state *st, const char *host)
{
	char name[256];
	int lo = 0;
	host_name(host, name, sizeof name);
	size_t n = strlen(name);
	if (ip_literal(name, &lo))
		return lo || st->wildcard || !strcasecmp(name, st->bound) ||
		       !strcasecmp(name, st->host);
	if (!strcasecmp(name, "localhost") || (n > 10 && !strcasecmp(name + n - 10, ".localhost")))
		return 1;
	return !st->loopback && !strcasecmp(name, st->host);
}

/* Did a page of another site send this request?  A browser names the page
 * in Origin (scripts' requests) and tells where it comes from in
 * Sec-Fetch-Site (every request, <img> included).  Only this server's own
 * pages, and a user typing or opening a URL, may ask; a link from
 * elsewhere may open the GUI's pages, which fetch the data themselves. */
static const char *foreign(struct MHD_Connection *c, const char *url, const char *host)
{
	const char *origin = mt_mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	const char *site = mt_mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
	const char *mode = mt_mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Mode");
	if (origin && (!host || strncasecmp(origin, "http://", 7) || strcasecmp(origin + 7, host)))
		return "Origin";
	if (site && strcmp(site, "same-origin") && strcmp(site, "none")) {
		int page = !strcmp(url, "/") || !strncmp(url, "/ui/", 4);
		if (!page || !mode || strcmp(mode, "navigate"))
			return "Sec-Fetch-Site";
	}
	return NULL;
}

/* Compares in a time that does not tell how much of a guess was right. */
static int same_secret(const char *given, const char *token)
{
	size_t n = strlen(token);
	unsigned char d = 0;
	if (strlen(given) != n)
		return 0; /* the length is no secret: it is always the same */
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(given[i] ^ token[i]);
	return !d;
}

/* Does the request carry the access token (a server not on loopback)?  In
 * an Authorization: Bearer header (scripts), the memtrace_token cookie
 * (the GUI's own requests), or the token parameter (the URL printed at
 * start), which the answer then sets as the cookie. */
static int has_token(const struct srv_state *st, struct MHD_Connection *c, const char *param,
		     struct srv_reply *r)
{
	if (!st->token)
		return 1;
	const char *auth = mt_mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	const char *cookie = mt_mhd.lookup_connection_value(c, MHD_COOKIE_KIND, "memtrace_token");
	if (auth && !strncasecmp(auth, "Bearer ", 7) && same_secret(auth + 7, st->token))
		return 1;
	if (cookie && same_secret(cookie, st->token))
		return 1;
	if (param && same_secret(param, st->token)) {
		r->set_cookie = 1;
		return 1;
	}
	return 0;
}

/* ---- requests ---- */

/* The query parameters, but the token, which is no parameter of the API. */
struct params {
	struct srv_query q;
	const char *token;
};

static enum MHD_Result add_param(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	(void)kind;
	struct params *p = cls;
	if (!strcmp(key, "token")) {
		p->token = value ? value : "";
		return MHD_YES;
	}
	p->q.v = xrealloc(p->q.v, (p->q.n + 1) * sizeof *p->q.v);
	p->q.v[p->q.n++] = (struct srv_param){ key, value };
	return MHD_YES;
}

/* Splits PATH ("/a/b") into its segments, in place.  Empty, "." and ".."
 * segments are refused: no path is ever mapped to a file, and none may even
 * look like a way out.  Returns the count, or -1. */
static int split_path(char *path, char **seg, int max)
{
	if (path[0] != '/')
		return -1;
	if (!path[1])
		return 0;
	int n = 0;
	for (char *s = path + 1;;) {
		char *slash = strchr(s, '/');
		if (slash)
			*slash = 0;
		if (!*s || !strcmp(s, ".") || !strcmp(s, "..") || n == max)
			return -1;
		seg[n++] = s;
		if (!slash)
			return n;
		s = slash + 1;
	}
}

/* Answers in R, or returns the API request to run (srv_api). */
static struct req *handle(struct srv_state *st, const char *url, const struct srv_query *q,
			  struct srv_reply *r)
{
	char *path = xstrdup(url), *seg[MAX_SEGMENTS];
	struct req *x = NULL;
	int n = split_path(path, seg, MAX_SEGMENTS);
	if (n < 0)
		srv_error(r, 404, "no such path");
	else if (n > 0 && (!strcmp(seg[0], "list") || !strcmp(seg[0], "data")))
		x = srv_api(st, seg, n, q, r);
	else if (n == 0)
		serve_page("memtrace server", q, 1, r);
	else if (n == 2 && !strcmp(seg[0], "static"))
		serve_static(seg[1], q, r);
	else if (n == 2 && !strcmp(seg[0], "ui"))
		serve_recording(st, seg[1], q, r);
	else
		srv_error(r, 404, "no such path");
	free(path);
	return x;
}

static void add_headers(struct MHD_Response *resp, const struct srv_state *st,
			const struct srv_reply *r)
{
	mt_mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				   r->type ? r->type : "text/plain");
	mt_mhd.add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	mt_mhd.add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (r->policy)
		mt_mhd.add_response_header(resp, "Content-Security-Policy", r->policy);
	if (r->status == 405)
		mt_mhd.add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (r->status == 401)
		mt_mhd.add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					   "Bearer realm=\"memtrace\"");
	if (r->set_cookie && st->token) {
		char cookie[200];
		snprintf(cookie, sizeof cookie,
			 "memtrace_token=%s; Path=/; HttpOnly; SameSite=Strict", st->token);
		mt_mhd.add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
	}
	if (r->filename[0]) {
		char disp[200];
		snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", r->filename);
		mt_mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
	}
}

static enum MHD_Result send_reply(struct MHD_Connection *c, const struct srv_state *st,
				  struct srv_reply *r)
{
	struct MHD_Response *resp =
		r->len ?
			mt_mhd.create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE) :
			mt_mhd.create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(r->body);
		return MHD_NO;
	}
	if (!r->len)
		free(r->body);
	add_headers(resp, st, r);
	enum MHD_Result ret = mt_mhd.queue_response(c, (unsigned)r->status, resp);
	mt_mhd.destroy_response(resp);
	return ret;
}

/* ---- answers streamed from a thread of their own ---- */

/* What comes before streaming starts: an answer that fits is sent whole
 * (and an error found on the way is still an error status). */
#define HEAD_BYTES (64 * 1024)

/* An API request running in its thread, writing to a pipe; the connection
 * reads the other end.  Both hold a reference. */
struct job {
	struct srv_state *st;
	struct req *x;
	struct srv_reply r; /* the thread's error, read once the pipe ends */
	int rfd, wfd;
	int rc;	  /* the run's result, set before the pipe closes */
	int refs; /* atomic */
	struct timespec deadline;
	int dropped;		 /* the connection is gone: stop computing */
	struct mt_budget budget; /* what the thread's readings may spend */
	char *head;
	size_t nhead, headpos;
};

static void job_unref(struct job *j)
{
	if (__atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL))
		return;
	srv_api_free(j->x);
	free(j->r.body);
	free(j->head);
	free(j);
}

/* The connection is done with J: the thread's writes fail from here on. */
static void job_drop(void *cls)
{
	struct job *j = cls;
	__atomic_store_n(&j->dropped, 1, __ATOMIC_RELEASE);
	close(j->rfd);
	job_unref(j);
}

static void *job_thread(void *arg)
{
	struct job *j = arg;
	FILE *out = fdopen(j->wfd, "w");
	int rc = -1;
	if (out) {
		setvbuf(out, NULL, _IOFBF, 64 * 1024);
		mt_budget_set(&j->budget);
		rc = srv_api_run(j->x, out);
		mt_budget_set(NULL);
	} else {
		srv_error(&j->r, 500, "out of memory");
	}
	__atomic_store_n(&j->rc, rc, __ATOMIC_RELEASE);
	if (out)
		fclose(out);
	else
		close(j->wfd);
	__atomic_sub_fetch(&j->st->busy, 1, __ATOMIC_ACQ_REL);
	job_unref(j);
	return NULL;
}

static long ms_left(const struct timespec *until)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (until->tv_sec - now.tv_sec) * 1000 + (until->tv_nsec - now.tv_nsec) / 1000000;
}

/* Up to LEN bytes of J's answer: their count, 0 at its end, -1 when the
 * time budget ran out or the server stops. */
static ssize_t job_read(struct job *j, char *buf, size_t len)
{
	for (;;) {
		ssize_t n = read(j->rfd, buf, len);
		if (n >= 0)
			return n;
		if (errno != EINTR && errno != EAGAIN)
			return -1;
		long ms = ms_left(&j->deadline);
		if (ms <= 0 || j->st->stopping)
			return -1;
		struct pollfd p = { .fd = j->rfd, .events = POLLIN };
		poll(&p, 1, ms < 250 ? (int)ms : 250);
	}
}

static ssize_t job_produce(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct job *j = cls;
	if (j->headpos < j->nhead) {
		size_t n = j->nhead - j->headpos < max ? j->nhead - j->headpos : max;
		memcpy(buf, j->head + j->headpos, n);
		j->headpos += n;
		return (ssize_t)n;
	}
	ssize_t n = job_read(j, buf, max);
	if (n > 0)
		return n;
	/* an answer cut short ends the connection, not the chunked body:
	 * the client sees it is incomplete */
	if (n == 0 && __atomic_load_n(&j->rc, __ATOMIC_ACQUIRE) == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static struct job *job_start(struct srv_state *st, struct req *x)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return NULL;
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	struct job *j = xcalloc(1, sizeof *j);
	*j = (struct job){ .st = st, .x = x, .rfd = fds[0], .wfd = fds[1], .rc = -1, .refs = 2 };
	srv_api_set_reply(x, &j->r);
	clock_gettime(CLOCK_MONOTONIC, &j->deadline);
	j->deadline.tv_sec += st->timeout_s;
	j->budget = (struct mt_budget){
		.cancel = &j->dropped,
		.cancel2 = &st->stopping,
		.deadline_ns = mt_timespec_ns(j->deadline),
		.max_bytes = st->request_bytes,
	};
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	__atomic_add_fetch(&st->busy, 1, __ATOMIC_ACQ_REL);
	int rc = pthread_create(&t, &attr, job_thread, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		__atomic_sub_fetch(&st->busy, 1, __ATOMIC_ACQ_REL);
		close(fds[0]);
		close(fds[1]);
		free(j);
		return NULL;
	}
	return j;
}

/* Runs API request X in a thread of its own; R holds its status, type and
 * download name.  An answer of up to HEAD_BYTES goes out whole; a longer
 * one streams as it is written, in constant memory. */
static enum MHD_Result serve_job(struct MHD_Connection *c, struct srv_state *st, struct req *x,
				 struct srv_reply *r)
{
	struct job *j = job_start(st, x);
	if (!j) {
		srv_api_free(x);
		srv_error(r, 503, "cannot start a request: %s", strerror(errno));
		return send_reply(c, st, r);
	}
	j->head = xmalloc(HEAD_BYTES);
	ssize_t n = 1;
	while (j->nhead < HEAD_BYTES &&
	       (n = job_read(j, j->head + j->nhead, HEAD_BYTES - j->nhead)) > 0)
		j->nhead += (size_t)n;
	if (n < 0) {
		srv_error(r, 503, "%s",
			  st->stopping ?
				  "the server is stopping" :
				  "the answer takes longer than the time budget of a request");
	} else if (n == 0 && __atomic_load_n(&j->rc, __ATOMIC_ACQUIRE) != 0) {
		free(r->body);
		*r = j->r;
		j->r.body = NULL;
	} else if (n == 0) {
		r->body = j->head;
		r->len = j->nhead;
		j->head = NULL;
	} else {
		struct MHD_Response *resp = mt_mhd.create_response_from_callback(
			MHD_SIZE_UNKNOWN, 64 * 1024, job_produce, j, job_drop);
		if (!resp) {
			job_drop(j);
			return MHD_NO;
		}
		add_headers(resp, st, r);
		enum MHD_Result ret = mt_mhd.queue_response(c, (unsigned)r->status, resp);
		mt_mhd.destroy_response(resp);
		return ret;
	}
	job_drop(j);
	return send_reply(c, st, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **req_cls)
{
	(void)version;
	(void)upload;
	static int seen;
	struct srv_state *st = cls;
	struct srv_reply r = { 0 };
	struct params p = { 0 };
	const char *host = mt_mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *why;
	int get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
	if (!*req_cls)
		srv_guard_headers(st->guard, c);
	/* A GET is answered on the second call: an answer queued on the first
	 * is "early" and costs the connection its keep-alive.  Other methods
	 * are refused at once, their bodies unread. */
	if (get && !*req_cls) {
		*req_cls = &seen;
		return MHD_YES;
	}
	if (get && *upload_size) {
		*upload_size = 0; /* a GET with a body: ignored */
		return MHD_YES;
	}
	if (!get) {
		srv_error(&r, 405, "method %s is not allowed: the API is read-only (GET, HEAD)",
			  method);
	} else if (host && !allowed_host(st, host)) {
		srv_error(&r, 403, "Host '%s' is refused: this server answers %s", host,
			  st->loopback ? "loopback names only" : "its own address only");
	} else if ((why = foreign(c, url, host))) {
		srv_error(&r, 403, "refused: a page of another site sent this request (%s)", why);
	} else {
		mt_mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_param, &p);
		struct req *x = NULL;
		if (!has_token(st, c, p.token, &r))
			srv_error(&r, 401,
				  "this server needs its access token: the URL printed at start, "
				  "or an Authorization: Bearer header");
		else
			x = handle(st, url, &p.q, &r);
		free(p.q.v);
		if (x)
			return serve_job(c, st, x, &r);
	}
	return send_reply(c, st, &r);
}

/* libmicrohttpd's messages, at most LOG_BURST a minute: clients that come
 * and go by thousands (an attack, or the guard ending them) would flood
 * the terminal, and the pipe of a server whose stderr nobody reads fills
 * and stops it. */
#define LOG_BURST 10

static void on_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t minute;
	static unsigned said;
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = 0;
	pthread_mutex_lock(&lock);
	uint64_t now = mt_now_ns() / 60000000000ull;
	if (now != minute)
		minute = now, said = 0;
	unsigned n = ++said;
	pthread_mutex_unlock(&lock);
	if (n <= LOG_BURST)
		mt_warning("http: %s%s", msg,
			   n == LOG_BURST ? " (no more of these this minute)" : "");
}

/* The answer on C went (or the connection ended): its next request gets
 * the header deadline again. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)req_cls;
	(void)toe;
	struct srv_state *st = cls;
	srv_guard_done(st->guard, c);
}

/* Room for many connections, within the descriptors the process may have
 * (MAX, or as many as fit, up to 2048). */
static unsigned connection_limit(unsigned max)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return max ? max : 256;
	rlim_t want = max ? (rlim_t)max * 4 + 64 : 8192;
	if (rl.rlim_cur < rl.rlim_max && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* each connection: its socket, the guard's duplicate of it, and a
	 * pipe while it runs a request */
	rlim_t n = rl.rlim_cur > 256 ? (rl.rlim_cur - 64) / 4 : 48;
	if (max)
		return n < max ? (unsigned)n : max;
	return n > 2048 ? 2048 : (unsigned)n;
}

/* Waits for SIGINT, SIGTERM or SIGHUP; then stops within a second, even
 * with a long request under way. */
static void wait_for_stop(struct srv_state *st, const sigset_t *old)
{
	sigset_t wait = *old;
	sigdelset(&wait, SIGINT);
	sigdelset(&wait, SIGTERM);
	sigdelset(&wait, SIGHUP);
	while (!mt_stop)
		sigsuspend(&wait);
	st->stopping = 1;
	for (int i = 0; i < 50 && __atomic_load_n(&st->busy, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	if (__atomic_load_n(&st->busy, __ATOMIC_ACQUIRE)) {
		/* a request thread cannot be interrupted, and the recordings it
		 * reads must not be freed under it: the process ends here */
		fflush(stdout);
		fflush(stderr);
		_exit(MT_EXIT_OK);
	}
}

int srv_run(struct srv_state *st, int fd, int family)
{
	char err[300];
	if (mt_mhd_load(err, sizeof err) < 0) {
		close(fd);
		mt_error("%s", err);
		return -1;
	}
	sigset_t stop, old;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	/* the connection threads inherit this mask: the signals reach the
	 * main thread only, in sigsuspend below */
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	/* A thread per connection: an answer is computed while its
	 * connection waits (serve_job), and a pool of threads would leave
	 * the other connections of a thread waiting with it.  What keeps a
	 * slow client from holding the threads is the guard (guard.h): a
	 * share of the connections per client, a deadline on the headers. */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	unsigned limit = connection_limit(st->max_connections);
	st->guard = srv_guard_start(st->client_connections, SRV_HEADER_S);
	if (!st->guard) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fd);
		return -1;
	}
	/* the logger first, or libmicrohttpd's own may speak before it is
	 * set; an idle connection is dropped after SRV_HEADER_S too */
	struct MHD_Daemon *d = mt_mhd.start_daemon(
		flags, 0, NULL, NULL, on_request, st, MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, limit,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SRV_HEADER_S, MHD_OPTION_NOTIFY_CONNECTION,
		srv_guard_connection, st->guard, MHD_OPTION_NOTIFY_COMPLETED, on_completed, st,
		MHD_OPTION_END);
	if (!d) {
		srv_guard_stop(st->guard);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fd);
		mt_error("cannot start the HTTP server");
		return -1;
	}
	printf("memtrace: serving %zu recording%s at %s (Ctrl-C stops)\n", st->nfiles,
	       st->nfiles == 1 ? "" : "s", st->url);
	fflush(stdout);
	wait_for_stop(st, &old);
	/* closes the connections and the listening socket */
	mt_mhd.stop_daemon(d);
	srv_guard_stop(st->guard);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}
