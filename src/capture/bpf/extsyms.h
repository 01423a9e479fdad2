/*
 * extsyms.h - the allocator libraries' own entry points that the BPF
 * backend probes besides malloc & co. (capture_int.h's symbol table, after
 * operator new's variants): jemalloc's (je_-prefixed builds included),
 * gperftools tcmalloc's tc_* and mimalloc's mi_* (heaps included), each
 * with the function it is reported as and where its arguments are
 * (MTB_LA_*, memtrace.h; 0: as for that function).  The shim hooks the
 * same names (src/capture/shim/extapi.c).
 *
 * A name at the address of one probed already (mi_malloc is mimalloc's
 * malloc) is that probe's alias: one probe, one count.  A function that
 * only jumps to another, through the PLT or to a probed function
 * (mimalloc's mi_free_size is `jmp mi_free@plt`), is not probed: the
 * function it jumps to counts the call, once, with the same arguments.
 * Calls an allocator function makes to another inside it are not counted
 * (memtrace.bpf.c's nesting).  Not probed: functions whose size the
 * probe cannot compute (mi_strdup), tcmalloc's tc_new and tc_delete
 * families (they are its operator new and delete: a return probe on a
 * function that throws is fatal, see memtrace.bpf.c), and any name at the
 * address of an operator delete (MTB_FN_BLOCK: tcmalloc's tc_free_sized is
 * its sized delete, whose news are not seen).  mallopt and malloc_trim
 * allocate nothing: they are recorded as calls that tune the allocator
 * (memtrace.h, MTB_REC_MALLOPT).
 */
#ifndef MEMTRACE_BPF_EXTSYMS_H
#define MEMTRACE_BPF_EXTSYMS_H

#define MTB_FN_BLOCK (-1)

#define MTB_EXT_SYMS(X)                                                    \
	X("je_malloc", MTB_FN_MALLOC, 0)                                   \
	X("je_calloc", MTB_FN_CALLOC, 0)                                   \
	X("je_realloc", MTB_FN_REALLOC, 0)                                 \
	X("je_posix_memalign", MTB_FN_POSIX_MEMALIGN, 0)                   \
	X("je_aligned_alloc", MTB_FN_ALIGNED_ALLOC, 0)                     \
	X("je_memalign", MTB_FN_MEMALIGN, 0)                               \
	X("je_valloc", MTB_FN_VALLOC, 0)                                   \
	X("je_free", MTB_FN_FREE, 0)                                       \
	X("je_mallocx", MTB_FN_MALLOCX, 0)                                 \
	X("je_rallocx", MTB_FN_RALLOCX, 0)                                 \
	X("je_xallocx", MTB_FN_XALLOCX, 0)                                 \
	X("je_sdallocx", MTB_FN_FREE, 0)                                   \
	X("je_dallocx", MTB_FN_FREE, 0)                                    \
	X("sdallocx", MTB_FN_FREE, 0)                                      \
	X("dallocx", MTB_FN_FREE, 0)                                       \
	X("tc_malloc", MTB_FN_MALLOC, 0)                                   \
	X("tc_malloc_skip_new_handler", MTB_FN_MALLOC, 0)                  \
	X("tc_calloc", MTB_FN_CALLOC, 0)                                   \
	X("tc_realloc", MTB_FN_REALLOC, 0)                                 \
	X("tc_memalign", MTB_FN_MEMALIGN, 0)                               \
	X("tc_posix_memalign", MTB_FN_POSIX_MEMALIGN, 0)                   \
	X("tc_valloc", MTB_FN_VALLOC, 0)                                   \
	X("tc_pvalloc", MTB_FN_PVALLOC, 0)                                 \
	X("tc_free", MTB_FN_FREE, 0)                                       \
	X("tc_cfree", MTB_FN_FREE, 0)                                      \
	X("tc_free_sized", MTB_FN_FREE, 0)                                 \
	X("mi_malloc", MTB_FN_MALLOC, 0)                                   \
	X("mi_malloc_small", MTB_FN_MALLOC, 0)                             \
	X("mi_zalloc", MTB_FN_CALLOC, MTB_LA_SIZE0)                        \
	X("mi_zalloc_small", MTB_FN_CALLOC, MTB_LA_SIZE0)                  \
	X("mi_calloc", MTB_FN_CALLOC, 0)                                   \
	X("mi_mallocn", MTB_FN_MALLOC, MTB_LA_PROD0)                       \
	X("mi_malloc_aligned", MTB_FN_ALIGNED_ALLOC, MTB_LA_SIZE0)         \
	X("mi_malloc_aligned_at", MTB_FN_ALIGNED_ALLOC, MTB_LA_SIZE0)      \
	X("mi_zalloc_aligned", MTB_FN_ALIGNED_ALLOC, MTB_LA_SIZE0)         \
	X("mi_zalloc_aligned_at", MTB_FN_ALIGNED_ALLOC, MTB_LA_SIZE0)      \
	X("mi_calloc_aligned", MTB_FN_ALIGNED_ALLOC, MTB_LA_PROD0)         \
	X("mi_calloc_aligned_at", MTB_FN_ALIGNED_ALLOC, MTB_LA_PROD0)      \
	X("mi_aligned_alloc", MTB_FN_ALIGNED_ALLOC, 0)                     \
	X("mi_memalign", MTB_FN_MEMALIGN, 0)                               \
	X("mi_posix_memalign", MTB_FN_POSIX_MEMALIGN, 0)                   \
	X("mi_valloc", MTB_FN_VALLOC, 0)                                   \
	X("mi_pvalloc", MTB_FN_PVALLOC, 0)                                 \
	X("mi_realloc", MTB_FN_REALLOC, 0)                                 \
	X("mi_reallocf", MTB_FN_REALLOC, 0)                                \
	X("mi_rezalloc", MTB_FN_REALLOC, 0)                                \
	X("mi_reallocn", MTB_FN_REALLOC, MTB_LA_PTRPROD0)                  \
	X("mi_reallocarray", MTB_FN_REALLOCARRAY, 0)                       \
	X("mi_recalloc", MTB_FN_REALLOC, MTB_LA_PTRPROD0)                  \
	X("mi_realloc_aligned", MTB_FN_REALLOC, 0)                         \
	X("mi_realloc_aligned_at", MTB_FN_REALLOC, 0)                      \
	X("mi_rezalloc_aligned", MTB_FN_REALLOC, 0)                        \
	X("mi_rezalloc_aligned_at", MTB_FN_REALLOC, 0)                     \
	X("mi_free", MTB_FN_FREE, 0)                                       \
	X("mi_cfree", MTB_FN_FREE, 0)                                      \
	X("mi_free_size", MTB_FN_FREE, 0)                                  \
	X("mi_free_aligned", MTB_FN_FREE, 0)                               \
	X("mi_free_size_aligned", MTB_FN_FREE, 0)                          \
	X("mi_heap_malloc", MTB_FN_MALLOC, MTB_LA_SIZE1)                   \
	X("mi_heap_malloc_small", MTB_FN_MALLOC, MTB_LA_SIZE1)             \
	X("mi_heap_zalloc", MTB_FN_CALLOC, MTB_LA_SIZE1)                   \
	X("mi_heap_calloc", MTB_FN_CALLOC, MTB_LA_PROD1)                   \
	X("mi_heap_mallocn", MTB_FN_MALLOC, MTB_LA_PROD1)                  \
	X("mi_heap_malloc_aligned", MTB_FN_ALIGNED_ALLOC, MTB_LA_SIZE1)    \
	X("mi_heap_malloc_aligned_at", MTB_FN_ALIGNED_ALLOC, MTB_LA_SIZE1) \
	X("mi_heap_zalloc_aligned", MTB_FN_ALIGNED_ALLOC, MTB_LA_SIZE1)    \
	X("mi_heap_zalloc_aligned_at", MTB_FN_ALIGNED_ALLOC, MTB_LA_SIZE1) \
	X("mi_heap_calloc_aligned", MTB_FN_ALIGNED_ALLOC, MTB_LA_PROD1)    \
	X("mi_heap_calloc_aligned_at", MTB_FN_ALIGNED_ALLOC, MTB_LA_PROD1) \
	X("mi_heap_realloc", MTB_FN_REALLOC, MTB_LA_PTRSIZE1)              \
	X("mi_heap_reallocf", MTB_FN_REALLOC, MTB_LA_PTRSIZE1)             \
	X("mi_heap_rezalloc", MTB_FN_REALLOC, MTB_LA_PTRSIZE1)             \
	X("mi_heap_reallocn", MTB_FN_REALLOC, MTB_LA_PTRPROD1)             \
	X("mi_heap_recalloc", MTB_FN_REALLOC, MTB_LA_PTRPROD1)             \
	X("mi_heap_realloc_aligned", MTB_FN_REALLOC, MTB_LA_PTRSIZE1)      \
	X("mi_heap_rezalloc_aligned", MTB_FN_REALLOC, MTB_LA_PTRSIZE1)     \
	X("mallopt", MTB_FN_MALLOPT, MTB_LA_PTRSIZE0)                      \
	X("malloc_trim", MTB_FN_MALLOC_TRIM, MTB_LA_SIZE0)                 \
	X("_ZdlPv", MTB_FN_BLOCK, 0)                                       \
	X("_ZdaPv", MTB_FN_BLOCK, 0)                                       \
	X("_ZdlPvm", MTB_FN_BLOCK, 0)                                      \
	X("_ZdaPvm", MTB_FN_BLOCK, 0)                                      \
	X("_ZdlPvRKSt9nothrow_t", MTB_FN_BLOCK, 0)                         \
	X("_ZdaPvRKSt9nothrow_t", MTB_FN_BLOCK, 0)                         \
	X("_ZdlPvSt11align_val_t", MTB_FN_BLOCK, 0)                        \
	X("_ZdaPvSt11align_val_t", MTB_FN_BLOCK, 0)                        \
	X("_ZdlPvmSt11align_val_t", MTB_FN_BLOCK, 0)                       \
	X("_ZdaPvmSt11align_val_t", MTB_FN_BLOCK, 0)

#define MTB_EXT_CAT2(a, b) a##b
#define MTB_EXT_CAT(a, b) MTB_EXT_CAT2(a, b)
#define MTB_EXT_ONE(name, fn, layout) char MTB_EXT_CAT(c, __COUNTER__);
struct mtb_ext_count {
	MTB_EXT_SYMS(MTB_EXT_ONE)
};
#define MTB_SYM_EXT_COUNT ((int)sizeof(struct mtb_ext_count))

#endif
