/*
 * json.c - JSON strings, and text for a terminal, from untrusted bytes (see
 * json.h).
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
		/* a run of printable ASCII that needs no escape goes out whole:
		 * a report writes millions of such names */
		const unsigned char *q = p;
		while (*q >= 0x20 && *q < 0x7f && *q != '"' && *q != '\\' &&
		       !(html && (*q == '<' || *q == '>' || *q == '&')))
			q++;
		if (q > p) {
			fwrite(p, 1, (size_t)(q - p), f);
			p = q;
			continue;
		}
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

/* Whether the sequence of LEN bytes at P may reach a terminal as it is:
 * well-formed, and no C0 or C1 control (ESC and CSI start escape sequences
 * that can rewrite the screen, set the window title or worse). */
static int printable(const unsigned char *p, int len)
{
	if (!len)
		return 0;
	if (len == 1)
		return *p >= 0x20 && *p != 0x7f;
	return !(len == 2 && p[0] == 0xc2 && p[1] < 0xa0); /* U+0080..U+009F */
}

size_t mt_text_safe(char *out, size_t cap, const char *s)
{
	size_t o = 0;
	if (!cap)
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; s && *p;) {
		int len = mt_utf8_len(p);
		if (printable(p, len)) {
			if (o + (size_t)len >= cap)
				break;
			for (int i = 0; i < len; i++)
				out[o++] = (char)p[i];
			p += len;
		} else {
			if (o + 4 >= cap)
				break;
			snprintf(out + o, cap - o, "\\x%02x", *p);
			o += 4;
			p++;
		}
	}
	out[o] = 0;
	return o;
}

void mt_text_str(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; s && *p;) {
		int len = mt_utf8_len(p);
		if (printable(p, len)) {
			fwrite(p, 1, (size_t)len, f);
			p += len;
		} else {
			fprintf(f, "\\x%02x", *p++);
		}
	}
}
