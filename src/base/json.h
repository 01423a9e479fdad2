/*
 * json.h - the one JSON string writer.  Names, paths and arguments are bytes
 * from the traced program and its files; a JSON document must be UTF-8, so
 * every byte that does not start a well-formed sequence is written as
 * U+FFFD and control characters are escaped.  Every JSON output (the report,
 * the exports, the server) writes strings through here.
 */
#ifndef MEMTRACE_JSON_H
#define MEMTRACE_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at S (1 to 4), or 0 when S does
 * not start one (overlong forms, surrogates and values past U+10FFFF
 * included). */
int mt_utf8_len(const unsigned char *s);

/* S as a JSON string ("null" for NULL). */
void mt_json_str(FILE *f, const char *s);
/* The same for JSON inside an HTML <script>: '<', '>' and '&' are escaped
 * too, so no "</script>" or "<!--" in a name can end or bend the element. */
void mt_json_str_html(FILE *f, const char *s);

/* S for a terminal or a text report: every byte of a control character
 * (C0, DEL, C1) or of a malformed sequence is written as \\xNN, so that a
 * name cannot move the cursor, rewrite lines or send escape sequences to
 * the user's terminal. */
void mt_text_str(FILE *f, const char *s);
/* The same into OUT (CAP bytes with the NUL; whole characters only):
 * its length. */
size_t mt_text_safe(char *out, size_t cap, const char *s);

#endif
