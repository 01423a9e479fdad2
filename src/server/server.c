/*
 * server.c - the HTTP side of `memtrace server`, on libmicrohttpd: methods,
 * the Host check, path splitting (no path ever reaches the file system),
 * query parameters, static pages and the replies of the API (api.c).
 */
#include "server.h"
#include "base/util.h"
#include "export/page.h"
#include "export/web/web.h"

#include <arpa/inet.h>
#include <microhttpd.h>
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

static int fill_slot(void *ctx, FILE *f, const struct mt_page_slot *slot, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if (mt_page_slot_is(slot, "title")) {
		fputs(ctx, f);
	} else if (mt_page_slot_is(slot, "style")) {
		each_name(f, slot, "<link rel=\"stylesheet\" href=\"/static/%.*s\">\n");
		fputs("<link rel=\"stylesheet\" href=\"/static/gui.css\">\n"
		      "<link rel=\"icon\" href=\"/static/favicon.svg\">",
		      f);
	} else if (mt_page_slot_is(slot, "script")) {
		each_name(f, slot, "<script src=\"/static/%.*s\"></script>\n");
		fputs("<script src=\"/static/gui.js\"></script>", f);
	}
	/* policy: the header; data: gui.js fetches it */
	return 0;
}

/* The page titled TITLE; its query is gui.js's (the filters of /ui/ID)
 * unless NO_QUERY. */
static void serve_page(const char *title, const struct srv_query *q, int no_query,
		       struct srv_reply *r)
{
	FILE *f;
	char err[200];
	if (no_query && q->n) {
		srv_error(r, 400, "unknown parameter '%s'", q->v[0].key);
		return;
	}
	if (!(f = open_memstream(&r->body, &r->len))) {
		srv_error(r, 500, "the page is not built in");
		return;
	}
	int rc = mt_page_write(f, fill_slot, (void *)title, err, sizeof err);
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
		srv_error(r, 404, "no recording '%s': ids are 0 to %zu, or last", id,
			  st->nfiles - 1);
		return;
	}
	char title[64];
	snprintf(title, sizeof title, "memtrace: recording %s", id);
	serve_page(title, q, 0, r);
}

/* ---- requests ---- */

/* Is HOST a name of this machine's loopback interface?  A server bound to
 * loopback answers only those, so that a web page cannot reach it through
 * a DNS name rebound to 127.0.0.1. */
static int loopback_host(const char *host)
{
	char h[256];
	snprintf(h, sizeof h, "%s", host);
	char *name = h, *end;
	if (h[0] == '[') {
		name = h + 1;
		if (!(end = strchr(name, ']')))
			return 0;
		*end = 0;
	} else if ((end = strrchr(h, ':'))) {
		*end = 0;
	}
	size_t n = strlen(name);
	if (n && name[n - 1] == '.')
		name[--n] = 0;
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, name, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, name, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return !strcasecmp(name, "localhost") ||
	       (n > 10 && !strcasecmp(name + n - 10, ".localhost"));
}

static enum MHD_Result add_param(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	(void)kind;
	struct srv_query *q = cls;
	q->v = xrealloc(q->v, (q->n + 1) * sizeof *q->v);
	q->v[q->n++] = (struct srv_param){ key, value };
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

static void handle(struct srv_state *st, const char *url, const struct srv_query *q,
		   struct srv_reply *r)
{
	char *path = xstrdup(url), *seg[MAX_SEGMENTS];
	int n = split_path(path, seg, MAX_SEGMENTS);
	if (n < 0)
		srv_error(r, 404, "no such path");
	else if (n > 0 && (!strcmp(seg[0], "list") || !strcmp(seg[0], "data")))
		srv_api(st, seg, n, q, r);
	else if (n == 0)
		serve_page("memtrace server", q, 1, r);
	else if (n == 2 && !strcmp(seg[0], "static"))
		serve_static(seg[1], q, r);
	else if (n == 2 && !strcmp(seg[0], "ui"))
		serve_recording(st, seg[1], q, r);
	else
		srv_error(r, 404, "no such path");
	free(path);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, struct srv_reply *r)
{
	struct MHD_Response *resp =
		r->len ? MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE) :
			 MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(r->body);
		return MHD_NO;
	}
	if (!r->len)
		free(r->body);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				r->type ? r->type : "text/plain");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (r->policy)
		MHD_add_response_header(resp, "Content-Security-Policy", r->policy);
	if (r->status == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (r->filename[0]) {
		char disp[200];
		snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", r->filename);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
	}
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
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
	struct srv_query q = { NULL, 0 };
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	int get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
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
	} else if (st->loopback && host && !loopback_host(host)) {
		srv_error(&r, 403, "Host '%s' is refused: this server answers loopback names only",
			  host);
	} else {
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_param, &q);
		handle(st, url, &q, &r);
		free(q.v);
	}
	return send_reply(c, &r);
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = 0;
	mt_warning("http: %s", msg);
}

int srv_run(struct srv_state *st, int fd, int family)
{
	sigset_t stop, old, wait;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	/* the connection threads inherit this mask: the signals reach the
	 * main thread only, in sigsuspend below */
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the logger first, or libmicrohttpd's own may speak before it is set */
	struct MHD_Daemon *d = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, st, MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)128,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)300, MHD_OPTION_END);
	if (!d) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fd);
		mt_error("cannot start the HTTP server");
		return -1;
	}
	printf("memtrace: serving %zu recording%s at %s (Ctrl-C stops)\n", st->nfiles,
	       st->nfiles == 1 ? "" : "s", st->url);
	fflush(stdout);
	wait = old;
	sigdelset(&wait, SIGINT);
	sigdelset(&wait, SIGTERM);
	sigdelset(&wait, SIGHUP);
	while (!mt_stop)
		sigsuspend(&wait);
	/* waits for the requests under way; closes the listening socket */
	MHD_stop_daemon(d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}
