/*
 * fit.c - see fit.h.
 *
 * Demangled C++ names run to thousands of columns, almost all of it
 * template arguments that the enclosing names already tell apart
 * (std::_Rb_tree<std::__cxx11::basic_string<...>, ...>::_M_insert_unique);
 * emptying the brackets keeps what a reader scans for.  The operators
 * spelled with brackets (operator<, operator<<, operator<=>, operator->)
 * are names, not brackets; a lambda's "{lambda(int)#1}" has none.
 *
 * Lines are wrapped rather than cut: a cut would lose the end of a name, a
 * file's line or, on the lines of totals, a figure.
 */
#include "fit.h"
#include "base/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* The operators whose names hold '<' or '>', longest first. */
static const char *const bracket_ops[] = { "<=>", "<<=", ">>=", "->*", "<<", ">>",
					   "<=",  ">=",	 "->",	"<",   ">" };

/* The length of "operator" and its bracket token at S (inside NAME), when
 * one begins there as a word; else 0. */
static size_t operator_len(const char *name, const char *s)
{
	if (strncmp(s, "operator", 8) != 0)
		return 0;
	if (s > name && (isalnum((unsigned char)s[-1]) || s[-1] == '_'))
		return 0;
	for (size_t i = 0; i < sizeof bracket_ops / sizeof *bracket_ops; i++) {
		size_t n = strlen(bracket_ops[i]);
		if (!strncmp(s + 8, bracket_ops[i], n))
			return 8 + n;
	}
	return 0;
}

const char *mt_fold_name(const char *name, char *buf, size_t len)
{
	size_t o = 0, depth = 0, parens = 0;
	int folded = 0;
	if (!name || !strchr(name, '<'))
		return name;
	for (const char *s = name; *s;) {
		size_t op = operator_len(name, s);
		if (op) {
			if (!depth) {
				if (o + op >= len)
					return name;
				memcpy(buf + o, s, op);
				o += op;
			}
			s += op;
			continue;
		}
		char c = *s++;
		if (depth) {
			folded = 1;
			/* inside an argument's parentheses a '>' is an operator
			 * ("N<(1 > 2)>") */
			if (c == '(')
				parens++;
			else if (c == ')' && parens)
				parens--;
			else if (!parens && c == '<')
				depth++;
			else if (!parens && c == '>' && !--depth)
				/* the outermost bracket closes */
				goto put;
			continue;
		}
		if (c == '<')
			depth = 1;
put:
		if (o + 1 >= len)
			return name;
		buf[o++] = c;
	}
	if (depth || !folded)
		return name;
	buf[o] = 0;
	return buf;
}

const char *mt_fit_label(const struct mt_frame *f, const struct mt_fit *fit, char *buf, size_t len)
{
	const char *name = mt_frame_label(f, buf, len);
	/* only a function's name has templates: the others were written to BUF */
	if (!f->function || (fit && fit->full_names))
		return name;
	return mt_fold_name(name, buf, len);
}

/* ---- the wrapping stream ---- */

struct fitter {
	FILE *out;
	size_t width;
	char *line; /* the line being written, without its '\n' */
	size_t len, cap;
};

/* The bytes of the first N code points of S[0..LEN) (fewer when it ends). */
static size_t points(const char *s, size_t len, size_t n)
{
	size_t b = 0;
	for (; b < len && n; n--)
		for (b++; b < len && ((unsigned char)s[b] & 0xc0) == 0x80; b++)
			;
	return b;
}

size_t mt_fit_prefix(const char *s, size_t len, size_t cols)
{
	return points(s, len, cols);
}

static size_t columns(const char *s, size_t len)
{
	size_t c = 0;
	for (size_t b = 0; b < len; b++)
		c += ((unsigned char)s[b] & 0xc0) != 0x80;
	return c;
}

static void emit(struct fitter *ft)
{
	const char *s = ft->line;
	size_t n = ft->len, w = ft->width;
	if (columns(s, n) <= w) {
		fwrite(s, 1, n, ft->out);
		fputc('\n', ft->out);
		return;
	}
	/* the continuation lines go under the line's tree prefix, further in */
	size_t lead = strspn(s, " |");
	if (lead > n)
		lead = n;
	size_t indent = lead + 4 > w / 2 ? w / 2 : lead + 4;
	size_t keep = lead < indent ? lead : indent;
	for (size_t pos = 0, first = 1; pos < n; first = 0) {
		size_t room = first ? w : w - indent;
		size_t e = pos + points(s + pos, n - pos, room);
		if (e < n) {
			/* after the last space that fits, unless that leaves
			 * little on this line */
			size_t b = e;
			while (b > pos && s[b - 1] != ' ')
				b--;
			if (b > pos && columns(s + pos, b - pos) > room / 3)
				e = b;
		}
		if (!first) {
			fwrite(s, 1, keep, ft->out);
			fprintf(ft->out, "%*s", (int)(indent - keep), "");
		}
		size_t end = e;
		while (end > pos && s[end - 1] == ' ')
			end--;
		fwrite(s + pos, 1, end - pos, ft->out);
		fputc('\n', ft->out);
		for (pos = e; pos < n && s[pos] == ' '; pos++)
			;
	}
}

static ssize_t fit_write(void *cookie, const char *buf, size_t size)
{
	struct fitter *ft = cookie;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n') {
			emit(ft);
			ft->len = 0;
			continue;
		}
		mt_grow(&ft->line, &ft->cap, ft->len, 1);
		ft->line[ft->len++] = buf[i];
	}
	return (ssize_t)size;
}

static int fit_close_fn(void *cookie)
{
	struct fitter *ft = cookie;
	if (ft->len)
		emit(ft);
	free(ft->line);
	free(ft);
	return 0;
}

FILE *mt_fit_open(FILE *out, int width)
{
	if (width <= 0)
		return out;
	struct fitter *ft = xcalloc(1, sizeof *ft);
	ft->out = out;
	ft->width = (size_t)width;
	FILE *f = fopencookie(ft, "w",
			      (cookie_io_functions_t){ .write = fit_write, .close = fit_close_fn });
	if (!f) {
		free(ft);
		return out; /* out of memory: unwrapped rather than nothing */
	}
	return f;
}

int mt_fit_close(FILE *f, FILE *out)
{
	if (f == out)
		return 0;
	int r = fclose(f);
	return r || ferror(out) ? EOF : 0;
}
