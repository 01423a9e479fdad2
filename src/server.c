/*
 * server.c - the HTTP side of `memtrace server`, on libmicrohttpd: methods,
 * the Host check, path splitting (no path ever reaches the file system),
 * query parameters, static pages and the replies of server_api.c.
 */
#include "server.h"
#include "report.h"
#include "util.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_SEGMENTS 8

void srv_error(struct srv_reply *r, int status, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->filename[0] = 0;
	FILE *f = open_memstream(&r->body, &r->len);
	if (f) {
		fputs("{\"error\": ", f);
		mt_json_str(f, msg);
		fputs("}\n", f);
		fclose(f);
	}
	r->status = status;
	r->type = "application/json";
}

/* ---- static files ---- */

/* The pages served outside the API.  The web GUI's files will be served
 * here from the embedded asset table (mt_web_asset() of src/web/web.h): by
 * name under /static/, and its page as "/".  Until then "/" is this page. */
struct srv_asset {
	const char *path, *type, *data;
};

static const char index_html[] =
	"<!DOCTYPE html>\n"
	"<html lang=\"en\"><head><meta charset=\"utf-8\"><title>memtrace server</title>\n"
	"<style>body{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.4}"
	"code{background:#eee;padding:0 .2em}</style></head>\n"
	"<body><h1>memtrace server</h1>\n"
	"<p>The loaded recordings: <a href=\"/list\">/list</a>.  Each is <code>/data/ID/...</code>, "
	"where ID is its number in the list or <code>last</code>:</p>\n<ul>\n"
	"<li><a href=\"/data/last/summary\">/data/last/summary</a>: totals</li>\n"
	"<li><a href=\"/data/last/allocation_groups?sort_by=all.size&amp;count=20\">"
	"/data/last/allocation_groups</a>: call sites</li>\n"
	"<li><a href=\"/data/last/allocations?sort_by=size&amp;order=dsc&amp;count=20\">"
	"/data/last/allocations</a>: allocations</li>\n"
	"<li><a href=\"/data/last/allocation_ascii_tree\">/data/last/allocation_ascii_tree</a>: "
	"call tree</li>\n"
	"<li><a href=\"/data/last/timeline\">/data/last/timeline</a>: memory over time</li>\n"
	"<li><a href=\"/data/last/export/flamegraph\">/data/last/export/flamegraph</a>, "
	"<a href=\"/data/last/export/flamegraph.pl\">flamegraph.pl</a>, "
	"<a href=\"/data/last/export/heaptrack\">heaptrack</a>: exports</li>\n"
	"</ul>\n<p>Every one of them takes bytehound's allocation filters, e.g. "
	"<a href=\"/data/last/allocation_ascii_tree?lifetime=only_leaked\">"
	"?lifetime=only_leaked</a>; see memtrace-server(1).</p>\n"
	"</body></html>\n";

static const struct srv_asset builtin_assets[] = {
	{"/", "text/html; charset=utf-8", index_html},
	{NULL, NULL, NULL},
};

static const struct srv_asset *find_asset(const char *path)
{
	for (const struct srv_asset *a = builtin_assets; a->path; a++)
		if (!strcmp(a->path, path))
			return a;
	return NULL;
}

static void serve_asset(const struct srv_asset *a, const struct srv_query *q, struct srv_reply *r)
{
	if (q->n) {
		srv_error(r, 400, "unknown parameter '%s'", q->v[0].key);
		return;
	}
	r->status = 200;
	r->type = a->type;
	r->len = strlen(a->data);
	r->body = xstrndup(a->data, r->len);
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
	return !strcasecmp(name, "localhost") || (n > 10 && !strcasecmp(name + n - 10, ".localhost"));
}

static enum MHD_Result add_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	struct srv_query *q = cls;
	q->v = xrealloc(q->v, (q->n + 1) * sizeof *q->v);
	q->v[q->n++] = (struct srv_param){key, value};
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

static void handle(struct srv_state *st, const char *url, const struct srv_query *q, struct srv_reply *r)
{
	char *path = xstrdup(url), *seg[MAX_SEGMENTS];
	int n = split_path(path, seg, MAX_SEGMENTS);
	const struct srv_asset *a;
	if (n < 0)
		srv_error(r, 404, "no such path");
	else if (n > 0 && (!strcmp(seg[0], "list") || !strcmp(seg[0], "data")))
		srv_api(st, seg, n, q, r);
	else if ((a = find_asset(url)))
		serve_asset(a, q, r);
	else
		srv_error(r, 404, "no such path");
	free(path);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, struct srv_reply *r)
{
	struct MHD_Response *resp = r->len
		? MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE)
		: MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(r->body);
		return MHD_NO;
	}
	if (!r->len)
		free(r->body);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type ? r->type : "text/plain");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
	(void)version;
	(void)upload;
	static int seen;
	struct srv_state *st = cls;
	struct srv_reply r = {0};
	struct srv_query q = {NULL, 0};
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
		srv_error(&r, 405, "method %s is not allowed: the API is read-only (GET, HEAD)", method);
	} else if (st->loopback && host && !loopback_host(host)) {
		srv_error(&r, 403, "Host '%s' is refused: this server answers loopback names only", host);
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
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO |
			 MHD_USE_ERROR_LOG;
	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the logger first, or libmicrohttpd's own may speak before it is set */
	struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, st,
						MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
						MHD_OPTION_LISTEN_SOCKET, fd,
						MHD_OPTION_CONNECTION_LIMIT, (unsigned)128,
						MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)300,
						MHD_OPTION_END);
	if (!d) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fd);
		mt_error("cannot start the HTTP server");
		return -1;
	}
	printf("memtrace: serving %zu recording%s at %s (Ctrl-C stops)\n", st->nfiles, st->nfiles == 1 ? "" : "s",
	       st->url);
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
