/*
 * target.h - what `memtrace record` needs to know of the command it runs
 * before choosing a backend: its path, whether the dynamic loader would
 * preload the shim into it, and where the shim is.
 */
#ifndef MEMTRACE_TARGET_H
#define MEMTRACE_TARGET_H

#include <stddef.h>

/* The command's path as execvp would find it (to be freed), or NULL. */
char *mt_resolve_command(const char *cmd);
/* 1 with the reason in WHY when the loader ignores LD_PRELOAD for PATH
 * (statically linked, set-user-ID or set-group-ID), else 0. */
int mt_preload_blocked(const char *path, char *why, size_t len);
/* The shim's path in OUT: $MEMTRACE_SHIM, next to memtrace, or in the
 * library directory.  Returns 0 when it is readable there (and, named by
 * MEMTRACE_SHIM, a shared library), else -1 with the reason in WHY. */
int mt_find_shim(char *out, size_t len, char *why, size_t whylen);

#endif
