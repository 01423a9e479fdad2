/*
 * push.c - see push.h.  The requests, as each store documents them:
 *
 *   Pyroscope: POST BASE/ingest?name=APP{pid=N}&from=S&until=S&format=pprof
 *              &spyName=memtrace, the profile as the multipart/form-data
 *              field "profile" (from and until in Unix seconds; no
 *              sampleRate: it is a CPU profile's frequency in Hz, and a heap
 *              profile carries its period itself);
 *   Parca:     POST BASE/profiles/writeraw, the JSON form of WriteRawRequest
 *              (parca.profilestore.v1alpha1): one series labelled __name__
 *              "memory", pid and comm, its one sample the pprof in base64;
 *   OTLP:      POST BASE/v1development/profiles, an ExportProfilesService-
 *              Request as application/x-protobuf (made by the caller).
 *
 * A 2xx answer is success; any other 4xx but 408 and 429 says the store
 * will never take the profile (no retry); anything else is tried again.
 */
#include "push.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/util.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mt_push {
	char *base; /* the URL without a trailing '/' */
	enum mt_push_format format;
	char *app;
	size_t cap;
	int attempts;
	double backoff_s, timeout_s;
	CURL *curl;
	struct curl_slist *headers;

	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a profile queued, or stop */
	struct mt_push_profile *q;
	size_t head, n;
	int stopping;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC: when stopping, give up then */
	struct mt_push_counts c;
};

static const char *const paths[] = { "/ingest", "/profiles/writeraw", "/v1development/profiles" };
static const char *const what[] = { "Pyroscope", "Parca", "OTLP" };

static void *sender(void *arg);

struct mt_push *mt_push_start(const struct mt_push_opts *o, char *err, size_t errlen)
{
	if (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8)) {
		snprintf(err, errlen, "--push needs an http:// or https:// URL, not '%s'", o->url);
		return NULL;
	}
	if (strlen(o->url) > 2048) { /* a request's URL has room for 4096 */
		snprintf(err, errlen, "--push: the URL is longer than 2048 bytes");
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		snprintf(err, errlen, "cannot initialise libcurl");
		return NULL;
	}
	struct mt_push *p = xcalloc(1, sizeof *p);
	p->base = xstrdup(o->url);
	for (size_t n = strlen(p->base); n > 8 && p->base[n - 1] == '/'; n--)
		p->base[n - 1] = 0;
	p->format = o->format;
	p->app = o->app ? xstrdup(o->app) : NULL;
	p->cap = o->queue ? o->queue : 1;
	p->attempts = o->attempts > 0 ? o->attempts : 1;
	p->backoff_s = o->backoff_s;
	p->timeout_s = o->timeout_s;
	p->q = xcalloc(p->cap, sizeof *p->q);
	p->curl = curl_easy_init();
	for (size_t i = 0; i < o->nheaders; i++)
		p->headers = curl_slist_append(p->headers, o->headers[i]);
	if (o->token) {
		char *h = xmalloc(strlen(o->token) + 32);
		sprintf(h, "Authorization: Bearer %s", o->token);
		p->headers = curl_slist_append(p->headers, h);
		free(h);
	}
	if (p->format == MT_PUSH_PARCA)
		p->headers = curl_slist_append(p->headers, "Content-Type: application/json");
	else if (p->format == MT_PUSH_OTLP)
		p->headers = curl_slist_append(p->headers, "Content-Type: application/x-protobuf");
	/* curl's "Expect: 100-continue" would wait a second for a store
	 * that does not answer it */
	p->headers = curl_slist_append(p->headers, "Expect:");
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (!p->curl || !p->headers || pthread_create(&p->thread, NULL, sender, p) != 0) {
		snprintf(err, errlen, "cannot start the push thread");
		curl_slist_free_all(p->headers);
		if (p->curl)
			curl_easy_cleanup(p->curl);
		free(p->q);
		free(p->app);
		free(p->base);
		free(p);
		return NULL;
	}
	return p;
}

void mt_push_submit(struct mt_push *p, struct mt_push_profile *prof)
{
	pthread_mutex_lock(&p->mu);
	p->c.made++;
	if (p->n == p->cap) {
		uint64_t dropped = ++p->c.dropped;
		pthread_mutex_unlock(&p->mu);
		mt_warning("push: the queue of %zu profiles is full (the store is slow or down): "
			   "the profile of pid %u dropped (%llu so far)",
			   p->cap, prof->pid, (unsigned long long)dropped);
		free(prof->body);
		return;
	}
	p->q[(p->head + p->n++) % p->cap] = *prof;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* ---- the sender thread ---- */

/* Whether the sender must give up now: stopping, and past the deadline. */
static int given_up(struct mt_push *p)
{
	pthread_mutex_lock(&p->mu);
	int r = p->stopping && mt_now_ns() >= p->deadline_ns;
	pthread_mutex_unlock(&p->mu);
	return r;
}

static int progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return given_up(ctx); /* nonzero aborts the transfer */
}

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
	(void)data, (void)ctx;
	return size * n;
}

/* Waits S seconds, or less when the deadline comes first: 0, or -1 if the
 * sender gave up meanwhile. */
static int backoff(struct mt_push *p, double s)
{
	uint64_t until = mt_now_ns() + (uint64_t)(s * 1e9);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		uint64_t now = mt_now_ns(), end = until;
		if (p->stopping && now >= p->deadline_ns) {
			pthread_mutex_unlock(&p->mu);
			return -1;
		}
		if (now >= until)
			break;
		if (p->stopping && p->deadline_ns < end)
			end = p->deadline_ns;
		struct timespec ts = { (time_t)(end / 1000000000u), (long)(end % 1000000000u) };
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	}
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* The application's name: --push-name, else the process's, in the
 * characters a Pyroscope name may hold (a process names itself: no brace,
 * comma or '=' of it may add labels). */
static void app_name(const struct mt_push *p, const struct mt_push_profile *prof, char *out,
		     size_t cap)
{
	const char *s = p->app ? p->app : prof->name;
	size_t n = 0;
	for (; s[n] && n + 1 < cap; n++) {
		char ch = s[n];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			 (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
		out[n] = ok ? ch : '_';
	}
	if (!n)
		snprintf(out, cap, "unknown");
	else
		out[n] = 0;
}

static void base64(FILE *f, const uint8_t *b, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) |
			     (i + 2 < n ? b[i + 2] : 0);
		fputc(a[v >> 18 & 63], f);
		fputc(a[v >> 12 & 63], f);
		fputc(i + 1 < n ? a[v >> 6 & 63] : '=', f);
		fputc(i + 2 < n ? a[v & 63] : '=', f);
	}
}

/* Parca's WriteRawRequest in its JSON form (proto3's JSON mapping). */
static char *parca_body(const struct mt_push *p, const struct mt_push_profile *prof, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		mt_oom(prof->len);
	fprintf(f,
		"{\"series\":[{\"labels\":{\"labels\":["
		"{\"name\":\"__name__\",\"value\":\"memory\"},"
		"{\"name\":\"pid\",\"value\":\"%u\"},{\"name\":\"comm\",\"value\":",
		prof->pid);
	mt_json_str(f, p->app ? p->app : prof->name);
	fputs("}]},\"samples\":[{\"rawProfile\":\"", f);
	base64(f, prof->body, prof->len);
	fputs("\"}]}]}", f);
	if (fclose(f) != 0 || !buf)
		mt_oom(prof->len * 2);
	return buf;
}

/* One attempt: the HTTP status, or 0 with ERR set when there was none. */
static long attempt(struct mt_push *p, const struct mt_push_profile *prof, char *err)
{
	CURL *c = p->curl;
	curl_easy_reset(c);
	char url[4096], app[80], *json = NULL;
	curl_mime *mime = NULL;
	if (p->format == MT_PUSH_PYROSCOPE) {
		char name[128];
		app_name(p, prof, app, sizeof app);
		snprintf(name, sizeof name, "%s{pid=%u}", app, prof->pid);
		char *esc = curl_easy_escape(c, name, 0);
		uint64_t from = prof->from_ns / 1000000000u;
		uint64_t until = (prof->until_ns + 999999999u) / 1000000000u;
		snprintf(url, sizeof url,
			 "%s%s?name=%s&from=%llu&until=%llu&format=pprof&spyName=memtrace", p->base,
			 paths[p->format], esc ? esc : "unknown", (unsigned long long)from,
			 (unsigned long long)(until > from ? until : from + 1));
		curl_free(esc);
		mime = curl_mime_init(c);
		curl_mimepart *part = curl_mime_addpart(mime);
		curl_mime_name(part, "profile");
		curl_mime_filename(part, "profile.pprof");
		curl_mime_type(part, "application/octet-stream");
		curl_mime_data(part, (const char *)prof->body, prof->len);
		curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	} else {
		snprintf(url, sizeof url, "%s%s", p->base, paths[p->format]);
		size_t len = prof->len;
		const void *body = prof->body;
		if (p->format == MT_PUSH_PARCA)
			body = json = parca_body(p, prof, &len);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->headers);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "memtrace");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* a thread: no SIGALRM for DNS */
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(p->timeout_s * 1000));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(p->timeout_s * 1000));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, p);
	CURLcode r = curl_easy_perform(c);
	long status = 0;
	if (r == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(err, 256, "%s", curl_easy_strerror(r));
	curl_mime_free(mime);
	free(json);
	return status;
}

enum outcome { SENT, FAILED, UNSENT };

static enum outcome send_one(struct mt_push *p, const struct mt_push_profile *prof)
{
	char err[256] = "";
	long status = 0;
	for (int i = 0; i < p->attempts; i++) {
		if (i && backoff(p, p->backoff_s * (double)(1u << (i - 1 < 16 ? i - 1 : 16))) < 0)
			return UNSENT;
		status = attempt(p, prof, err);
		if (status >= 200 && status < 300)
			return SENT;
		if (given_up(p))
			return UNSENT;
		if (status >= 400 && status < 500 && status != 408 && status != 429)
			break; /* the store will not take it */
	}
	if (status)
		mt_warning("push: %s at %s answered HTTP %ld: the profile of pid %u is lost",
			   what[p->format], p->base, status, prof->pid);
	else
		mt_warning("push: %s at %s: %s: the profile of pid %u is lost", what[p->format],
			   p->base, err, prof->pid);
	return FAILED;
}

static void *sender(void *arg)
{
	struct mt_push *p = arg;
	/* Ctrl-C and its kin go to the tracing thread, whose waits they end;
	 * a SIGPIPE of a store that hung up on TLS (libcurl only ignores it
	 * itself without CURLOPT_NOSIGNAL) stays pending here, harmless */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->n && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		if (!p->n || (p->stopping && mt_now_ns() >= p->deadline_ns))
			break;
		struct mt_push_profile prof = p->q[p->head];
		p->head = (p->head + 1) % p->cap;
		p->n--;
		pthread_mutex_unlock(&p->mu);
		enum outcome o = send_one(p, &prof);
		free(prof.body);
		pthread_mutex_lock(&p->mu);
		if (o == SENT)
			p->c.sent++;
		else if (o == FAILED)
			p->c.failed++;
		else
			p->c.unsent++;
	}
	/* what the deadline left in the queue */
	for (; p->n; p->n--, p->head = (p->head + 1) % p->cap) {
		free(p->q[p->head].body);
		p->c.unsent++;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void mt_push_stop(struct mt_push *p, double drain_s, struct mt_push_counts *c)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	p->deadline_ns = mt_now_ns() + (uint64_t)(drain_s * 1e9);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	*c = p->c;
	curl_slist_free_all(p->headers);
	curl_easy_cleanup(p->curl);
	curl_global_cleanup();
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->q);
	free(p->app);
	free(p->base);
	free(p);
}
