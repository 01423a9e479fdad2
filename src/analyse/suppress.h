/*
 * suppress.h - leak suppressions in LeakSanitizer's syntax.
 *
 * A file of lines `leak:PATTERN`, `#` comments and blank lines, as projects
 * already keep for LSan (LSAN_OPTIONS=suppressions=FILE).  A pattern
 * matches a frame when it is found in the frame's function name, source file
 * or module path; `*` stands for any text, `^` at its start and `$` at its
 * end anchor it.  A leaking site with any frame matched by any pattern is
 * suppressed: its leaked blocks leave the leak figures (site and totals)
 * and are counted as suppressed instead, so that `report`, `diff` and
 * record's leak gate agree on what a leak is.
 */
#ifndef MEMTRACE_SUPPRESS_H
#define MEMTRACE_SUPPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "recording.h"

struct mt_suppressions;

/* Reads PATH.  NULL with a one-line reason in ERR (the file, or the line
 * that is not `leak:PATTERN`). */
struct mt_suppressions *mt_supp_load(const char *path, char *err, size_t errlen);
void mt_supp_free(struct mt_suppressions *s);

/* Moves the leaks of REC's sites that S suppresses out of their leak
 * figures and the totals, into the totals' suppressed figures; returns
 * how many sites it suppressed. */
size_t mt_supp_apply(const struct mt_suppressions *s, struct mt_recording *rec);

/* Whether PATTERN (LSan's: '*', '^', '$') matches TEXT. */
int mt_supp_match(const char *pattern, const char *text);

#endif
