/*
 * allocfns.h - the allocator functions a recording names (the function of
 * an ALLOC or REALLOC record), listed once: codec.h's enum mt_fn and
 * mt_fn_names, the BPF programs' function ids (bpf/memtrace.h) and the
 * BPF loader's symbol names, argument counts and argument layouts
 * (capture/bpf/capture_int.h, elf.c) are all made from this list.  Macros
 * only, no includes: the BPF target compiles it too.
 *
 * MT_ALLOC_FNS(X) calls X(ID, name, nargs, layout) for each function, in
 * the records' numbering (the order the report names them): add at the end,
 * never reorder; at most 16, the tag byte holds the function in 4 bits.
 * NARGS: the arguments the probe reads (SysV: %rdi, %rsi, %rdx); LAYOUT:
 * which of them are the size and the block (bpf/memtrace.h, MTB_LA_*).
 * MALLOCX, RALLOCX and XALLOCX are jemalloc's own API; the other libraries'
 * (tc_malloc, mi_zalloc...) are reported as the C function they stand for.
 * XALLOCX is a REALLOC of a block to itself: resized in place.
 */
#ifndef MEMTRACE_ALLOCFNS_H
#define MEMTRACE_ALLOCFNS_H

#define MT_ALLOC_FNS(X)                                   \
	X(MALLOC, "malloc", 1, SIZE0)                     \
	X(CALLOC, "calloc", 2, PROD0)                     \
	X(REALLOC, "realloc", 2, PTRSIZE0)                \
	X(REALLOCARRAY, "reallocarray", 3, PTRPROD0)      \
	X(POSIX_MEMALIGN, "posix_memalign", 3, PTR0SIZE2) \
	X(ALIGNED_ALLOC, "aligned_alloc", 2, SIZE1)       \
	X(MEMALIGN, "memalign", 2, SIZE1)                 \
	X(VALLOC, "valloc", 1, SIZE0)                     \
	X(PVALLOC, "pvalloc", 1, SIZE0)                   \
	X(MALLOCX, "mallocx", 1, SIZE0)                   \
	X(RALLOCX, "rallocx", 2, PTRSIZE0)                \
	X(XALLOCX, "xallocx", 2, PTRSIZE0)

#endif
