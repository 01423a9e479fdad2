/*
 * record.h - the recording core's entry points (preload.c: its section
 * "for the other hooks") for the hooks that are not the allocator's
 * standard ones: an allocator library's own API (extapi.c), the calls that
 * tune the allocator (tune.c) and the mapping calls (mmaps.c).  Each records
 * its call as the standard hooks (hooks.c) record theirs, with the stack of
 * the hook's caller (the hook's own frame lies in the shim, and is dropped
 * when reports symbolize), and lets the next allocator's own calls to our
 * hooks pass through unrecorded, so that each event counts once.
 */
#ifndef MEMTRACE_SHIM_RECORD_H
#define MEMTRACE_SHIM_RECORD_H

#include "shim.h"

/* For extapi.c.  Between mt_ext_enter and mt_ext_leave the thread is inside
 * the shim: calls that the allocator makes to our hooks (mimalloc's malloc
 * calling mi_malloc) pass through unrecorded. */
MT_HIDDEN int mt_ext_enter(void); /* returns what mt_ext_leave restores */
MT_HIDDEN void mt_ext_leave(int saved);
/* Records block P of N bytes, made by FN (nothing when P is NULL). */
MT_HIDDEN void mt_ext_alloc(int fn, void *p, size_t n);
/* Records the free of P (nothing when P is NULL), before it is released. */
MT_HIDDEN void mt_ext_free(void *p);
/* Resizes OLD (not NULL) to N with CALL(OLD, N, CTX) and records it as a
 * REALLOC by FN, held across the call as realloc is (fastpath.h:
 * realloc_begin).  A NULL result with N > 0 is a failure; with N == 0 the
 * block is freed. */
typedef void *(*mt_resize_fn)(void *old, size_t n, void *ctx);
MT_HIDDEN void *mt_ext_resize(int fn, void *old, size_t n, mt_resize_fn call, void *ctx);

/* For tune.c: records a call that tuned the allocator (enum mt_tune), made
 * by the hook that calls this, with its caller's stack. */
MT_HIDDEN void mt_ext_tune(uint32_t call, int64_t param, int64_t value, int64_t result);

/* For mmaps.c: records the mapping call M (an MMAP record with the
 * caller's stack and, for a file mapping, the file's path) if the thread
 * may record now; made inside a hook's call to the next allocator, it is
 * the allocator's (MT_MAP_BY_ALLOCATOR). */
MT_HIDDEN void mt_ext_mapcall(struct mt_mapcall *m);

#endif
