/*
 * managed.h - whether a process runs on a managed runtime, one with a heap
 * of its own (Go, Java, .NET), which a malloc tracer cannot see: `record`
 * warns that its figures hold only the native allocations, and says what to
 * use.  (The blocks the C and C++ runtimes hold are runtime_held.h's.)
 */
#ifndef MEMTRACE_MANAGED_H
#define MEMTRACE_MANAGED_H

#include "recording.h"

/* Whether the ELF file at PATH is a Go program (static or not). */
int mt_elf_is_go(const char *path);
/* "Go", "Java", ".NET", or NULL. */
const char *mt_managed_runtime(const struct mt_process *p);
/* One sentence on what memtrace sees of RUNTIME's program and what to use. */
const char *mt_managed_hint(const char *runtime);

#endif
