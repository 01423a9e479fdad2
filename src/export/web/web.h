/*
 * web.h - what the web outputs share (the svg and html exports, and the
 * server's GUI): the JS/CSS/HTML files of src/export/web, compiled into the binary
 * by embed.py so that a page or SVG written anywhere needs nothing else, the
 * report page's data.
 */
#ifndef MEMTRACE_WEB_H
#define MEMTRACE_WEB_H

#include <stddef.h>
#include <string.h>

struct mt_web_asset {
	const char *name;	   /* file name in src/export/web, e.g. "report.js" */
	const char *type;	   /* MIME type */
	const unsigned char *data; /* followed by a NUL byte */
	size_t len;
};

/* Every asset, then one with a NULL name (web_assets.c, generated). */
extern const struct mt_web_asset mt_web_assets[];

static inline const struct mt_web_asset *mt_web_asset(const char *name)
{
	for (const struct mt_web_asset *a = mt_web_assets; a->name; a++)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

struct mt_export_ctx;

/* The data of the report page (its shape: report.js) for the processes X
 * selects, as JSON to x->out: what `memtrace export --format html` embeds,
 * plus the top sites' live_series, for the server to hand its GUI.  It replays the recording.  Returns 0, or
 * -1 with a reason in ERR.  (html.c) */
int mt_web_report_data(struct mt_export_ctx *x, char *err, size_t errlen);

#endif
