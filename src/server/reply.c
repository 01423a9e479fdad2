/*
 * reply.c - the error answer every part of the server gives (server.h's
 * srv_error): a JSON object {"error": MESSAGE}.  A file of its own, below
 * both the HTTP side and the API, so that calls between them go one way.
 */
#include "server.h"
#include "base/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
