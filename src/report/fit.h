/*
 * fit.h - text output made to fit a terminal: C++ names with their
 * template arguments folded ("std::map<>::operator[]", as heaptrack prints
 * them), and a stream that wraps the lines longer than the terminal.
 */
#ifndef MEMTRACE_FIT_H
#define MEMTRACE_FIT_H

#include <stddef.h>
#include <stdio.h>

#include "analyse/symbols.h"

/* How text output is laid out (NULL wherever one is taken: names folded,
 * lines as long as they come). */
struct mt_fit {
	int width;	/* columns of a line; 0: no limit */
	int full_names; /* names as demangled, template arguments and all */
};

/* NAME with every outermost <...> emptied: "std::vector<int,
 * std::allocator<int> >::push_back(int const&)" is
 * "std::vector<>::push_back(int const&)".  Written to BUF; returns BUF, or
 * NAME itself when it has nothing to fold, when its brackets do not balance
 * (it is then not a name a demangler wrote) or when BUF is too short. */
const char *mt_fold_name(const char *name, char *buf, size_t len);

/* A frame's name as the text outputs show it under FIT (mt_frame_label,
 * folded unless FIT asks for full names); BUF holds what is made. */
const char *mt_fit_label(const struct mt_frame *f, const struct mt_fit *fit, char *buf, size_t len);

/* The bytes of the first COLS columns (code points) of S[0..LEN). */
size_t mt_fit_prefix(const char *s, size_t len, size_t cols);

/* A stream into OUT where each line longer than WIDTH columns (code points)
 * is wrapped: broken at its last space that fits (anywhere when none does),
 * the rest on lines indented as the line's tree prefix (its leading spaces
 * and '|') plus four.  Nothing is cut: figures and whole names stay whole.
 * OUT itself when WIDTH is 0.  mt_fit_close writes what is pending and
 * frees it (nothing for OUT); returns 0, or EOF after a write error. */
FILE *mt_fit_open(FILE *out, int width);
int mt_fit_close(FILE *f, FILE *out);

#endif
