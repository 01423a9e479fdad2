/*
 * web.h - what the web outputs share (the svg and html exports, and the
 * server's GUI): the JS/CSS/HTML files of src/web, compiled into the binary
 * by embed.py so that a page or SVG written anywhere needs nothing else, the
 * report page's data, and a UTF-8 check for text that goes into XML or JSON.
 */
#ifndef MEMTRACE_WEB_H
#define MEMTRACE_WEB_H

#include <stddef.h>
#include <string.h>

struct mt_web_asset {
	const char *name;          /* file name in src/web, e.g. "report.js" */
	const char *type;          /* MIME type */
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
 * -1 with a reason in ERR.  (export_html.c) */
int mt_web_report_data(struct mt_export_ctx *x, char *err, size_t errlen);

/* Length of the well-formed UTF-8 sequence at S (1 to 4), or 0 when S does
 * not start one: names and paths are bytes, and one stray byte would make a
 * whole SVG unreadable to an XML parser. */
static inline int mt_web_utf8_len(const unsigned char *s)
{
	int n;
	unsigned min;
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80, c &= 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800, c &= 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000, c &= 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

#endif
