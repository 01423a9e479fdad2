/*
 * embed.h - appending the binaries a recording's processes mapped to the
 * recording (record --embed-binaries; see embed.c).
 */
#ifndef MEMTRACE_EMBED_H
#define MEMTRACE_EMBED_H

#include <stddef.h>

/* Appends to the complete recording PATH every module file its streams
 * declared whose build-id still matches, and its separate debug file where
 * the system has one.  Files left out are named on stderr unless QUIET.
 * Returns 0, or -1 with a one-line reason in ERR (the recording is then as
 * it was, or has whole object chunks appended, which readers take as
 * they are). */
int mt_embed_binaries(const char *path, int quiet, char *err, size_t errlen);

#endif
