/*
 * unwind.h - capturing the current thread's call stack inside the shim.
 *
 * Called from the allocator hooks on every allocation, so it must be fast, must
 * not allocate from the heap being measured (no malloc, no stdio), must be
 * safe with concurrent threads and must never crash on an odd stack (signal
 * frames, JIT code, stripped libraries): when in doubt it stops early.
 * Architecture-specific code lives in one file per architecture.
 */
#ifndef MEMTRACE_SHIM_UNWIND_H
#define MEMTRACE_SHIM_UNWIND_H

#include <stdint.h>

/* Fills PCS with up to MAX return addresses of the caller's callers,
 * starting with the return address of the function that called
 * mt_unwind()'s caller after SKIP further frames are dropped.  Returns the
 * number of addresses stored. */
int mt_unwind(uint64_t *pcs, int max, int skip);

/* Tells the unwinder that modules were loaded or unloaded (dlopen/dlclose). */
void mt_unwind_modules_changed(void);

#endif
