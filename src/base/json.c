/*
 * json.c - JSON strings from untrusted bytes (see json.h).
 */
#include "json.h"

#include <stdint.h>

int mt_utf8_len(const unsigned char *s)
{
	int n;
	uint32_t min, c = s[0];

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

static void write_str(FILE *f, const char *s, int html)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int len = mt_utf8_len(p);

		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20 || (html && (*p == '<' || *p == '>' || *p == '&')))
				fprintf(f, "\\u%04x", *p);
			else if (!len)
				fputs("\\ufffd", f);
			else
				fwrite(p, 1, (size_t)len, f);
		}
		p += len ? len : 1;
	}
	fputc('"', f);
}

void mt_json_str(FILE *f, const char *s)
{
	write_str(f, s, 0);
}

void mt_json_str_html(FILE *f, const char *s)
{
	write_str(f, s, 1);
}
