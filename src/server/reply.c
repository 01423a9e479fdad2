/*
 * reply.c - the error answer every part of the server gives (server.h's
 * srv_error): a JSON object {"error": MESSAGE}; and srv_error_page, the
 * same said as a page for the pages a browser opens (/ and /ui/ID).  A file of its own, below
 * both the HTTP side and the API, so that calls between them go one way.
 */
#include "server.h"
#include "base/json.h"
#include "base/markup.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Empties R's body for a new one: the stream to write it to (NULL when
 * out of memory: the answer is then the status alone). */
static FILE *fresh_body(struct srv_reply *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->filename[0] = 0;
	return open_memstream(&r->body, &r->len);
}

/* R becomes the answer STATUS of TYPE: the message made of FMT and AP,
 * written by BODY. */
static void answer_error(struct srv_reply *r, int status, const char *type,
			 void (*body)(FILE *f, int status, const char *msg), const char *fmt,
			 va_list ap)
{
	char msg[600];
	vsnprintf(msg, sizeof msg, fmt, ap);
	FILE *f = fresh_body(r);
	if (f) {
		body(f, status, msg);
		fclose(f);
	}
	r->status = status;
	r->type = type;
}

static void json_body(FILE *f, int status, const char *msg)
{
	(void)status;
	fputs("{\"error\": ", f);
	mt_json_str(f, msg);
	fputs("}\n", f);
}

static void page_body(FILE *f, int status, const char *msg)
{
	/* the GUI's stylesheet and nothing inline: the page's policy is the GUI's */
	fprintf(f,
		"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		"<title>memtrace: %s</title>\n"
		"<link rel=\"stylesheet\" href=\"/static/report.css\">\n</head>\n"
		"<body data-state=\"error\">\n<div id=\"memtrace\"><header class=\"topbar\">"
		"<a class=\"brand\" href=\"/\">memtrace</a></header>\n<main>"
		"<div class=\"note error-page\">",
		status == 404 ? "not found" : "error");
	mt_markup_str(f, msg, -1);
	fputs("</div>\n<p><a href=\"/\">All recordings</a></p></main></div>\n</body>\n</html>\n",
	      f);
}

void srv_error(struct srv_reply *r, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	answer_error(r, status, "application/json", json_body, fmt, ap);
	va_end(ap);
}

void srv_error_page(struct srv_reply *r, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	answer_error(r, status, "text/html; charset=utf-8", page_body, fmt, ap);
	va_end(ap);
}
