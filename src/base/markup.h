/*
 * markup.h - text from untrusted bytes inside XML or HTML: the SVG flame
 * graph's names, the HTML export's title, the server's error page.
 */
#ifndef MEMTRACE_MARKUP_H
#define MEMTRACE_MARKUP_H

#include <stdio.h>

/* S as character data or a quoted attribute's value, at most MAXCH
 * characters (-1: all): '&', '<', '>', '"' and '\'' as entities, control
 * characters as spaces and bytes that are not UTF-8 as U+FFFD, which
 * neither XML nor an HTML page in UTF-8 would accept. */
void mt_markup_str(FILE *f, const char *s, long maxch);

#endif
