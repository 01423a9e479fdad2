/*
 * markup.c - text for XML and HTML from untrusted bytes (markup.h): one
 * escaper for the SVG export, the HTML export and the server's pages, so
 * that a name that one of them would let bend the document cannot slip
 * through another.
 */
#include "markup.h"
#include "json.h"

void mt_markup_str(FILE *f, const char *s, long maxch)
{
	const unsigned char *p = (const unsigned char *)s;
	for (long ch = 0; *p && (maxch < 0 || ch < maxch); ch++) {
		int len = mt_utf8_len(p);
		switch (*p) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			if (!len)
				fputs("\xef\xbf\xbd", f);
			else if (*p < 0x20 || *p == 0x7f)
				fputc(' ', f);
			else
				fwrite(p, 1, (size_t)len, f);
		}
		p += len ? len : 1;
	}
}
