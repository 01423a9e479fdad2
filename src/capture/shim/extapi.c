/*
 * extapi.c - the allocator libraries' own entry points: jemalloc's
 * mallocx/rallocx/xallocx/sdallocx/dallocx (also under the je_ prefix of
 * builds configured with one), gperftools tcmalloc's tc_* and mimalloc's
 * mi_* (mi_heap_* included).  Programs written for those allocators call
 * them instead of malloc and free; each hook calls the definition that
 * comes next in lookup order (the library's) and records the event as
 * hooks.c records malloc's.
 *
 * Each event counts once: the call is made with the thread inside the shim
 * (mt_ext_enter), so whatever the library calls of ours on its way (a
 * mi_calloc built on mi_heap_calloc, a tc_new on tc_malloc) passes through,
 * and a library's malloc reaching one of these hooks from hooks.c's
 * malloc does not count again either.  Queries (nallocx, sallocx,
 * mi_usable_size...) allocate nothing and are not hooked.
 *
 * Function codes: jemalloc's three get their own (mallocx, rallocx,
 * xallocx); the others are reported as the C function they stand for
 * (tc_malloc and mi_zalloc... as malloc, calloc, realloc, aligned_alloc,
 * memalign, posix_memalign, valloc, pvalloc).  xallocx resizes in place or
 * not at all: it is recorded (as a REALLOC of the block to itself) only when
 * the block's real size changed.
 *
 * Exporting these names has one cost: a program that tests a weak
 * reference to, say, mallocx to find out whether jemalloc is there finds
 * ours.  Without the library behind it, each hook falls back on the
 * allocator the process does have (mallocx honours its alignment and zero
 * flags), so such a program still runs.
 */
#include "record.h"
#include "shim.h"

#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* The library's definition of NAME, looked up once (with the thread inside
 * the shim: dlsym may allocate). */
#define REAL(type, name)                                                 \
	static __typeof__(type) real_;                                   \
	if (unlikely(!real_)) {                                          \
		int b_ = mt_ext_enter();                                 \
		real_ = (type)mt_next_sym(name);                         \
		mt_ext_leave(b_);                                        \
		if (!real_)                                              \
			real_ = (type)1; /* looked, absent: fall back */ \
	}

#define HAVE_REAL() ((void *)real_ != (void *)1)

/* An allocation by NAME(PARAMS) recorded as FN of SIZE bytes; FALLBACK
 * when the library is not there. */
#define EXT_ALLOC(name, params, args, fn, size, fallback)         \
	EXPORT void *name params                                  \
	{                                                         \
		REAL(void *(*)params, #name)                      \
		int b_ = mt_ext_enter();                          \
		void *p_ = HAVE_REAL() ? real_ args : (fallback); \
		mt_ext_leave(b_);                                 \
		mt_ext_alloc(fn, p_, size);                       \
		return p_;                                        \
	}

/* A free of PTR by NAME(PARAMS). */
#define EXT_FREE(name, params, args, ptr)   \
	EXPORT void name params             \
	{                                   \
		REAL(void(*) params, #name) \
		if (!(ptr))                 \
			return;             \
		mt_ext_free(ptr);           \
		int b_ = mt_ext_enter();    \
		if (HAVE_REAL())            \
			real_ args;         \
		else                        \
			mt_next_free(ptr);  \
		mt_ext_leave(b_);           \
	}

/* A resize: the library's function and its arguments beyond the block, for
 * mt_ext_resize's callback (one per signature). */
struct rz {
	void *f;
	void *heap;
	size_t x, y;
	int flags;
};

static void *rz_pn(void *p, size_t n, void *c)
{
	return ((void *(*)(void *, size_t))((struct rz *)c)->f)(p, n);
}
static void *rz_pnx(void *p, size_t n, void *c)
{
	struct rz *r = c;
	return ((void *(*)(void *, size_t, size_t))r->f)(p, n, r->x);
}
static void *rz_pnxy(void *p, size_t n, void *c)
{
	struct rz *r = c;
	return ((void *(*)(void *, size_t, size_t, size_t))r->f)(p, n, r->x, r->y);
}
static void *rz_pxy(void *p, size_t n, void *c) /* (p, count, size) */
{
	struct rz *r = c;
	(void)n;
	return ((void *(*)(void *, size_t, size_t))r->f)(p, r->x, r->y);
}
static void *rz_hpn(void *p, size_t n, void *c)
{
	struct rz *r = c;
	return ((void *(*)(void *, void *, size_t))r->f)(r->heap, p, n);
}
static void *rz_hpnx(void *p, size_t n, void *c)
{
	struct rz *r = c;
	return ((void *(*)(void *, void *, size_t, size_t))r->f)(r->heap, p, n, r->x);
}
static void *rz_hpxy(void *p, size_t n, void *c) /* (heap, p, count, size) */
{
	struct rz *r = c;
	(void)n;
	return ((void *(*)(void *, void *, size_t, size_t))r->f)(r->heap, p, r->x, r->y);
}
static void *rz_rallocx(void *p, size_t n, void *c)
{
	struct rz *r = c;
	return ((void *(*)(void *, size_t, int))r->f)(p, n, r->flags);
}

/* A resize of PTR to SIZE by NAME(PARAMS) through callback CB with the
 * arguments given after it (struct rz's fields but .f), recorded as FN; an
 * allocation when PTR is NULL. */
#define EXT_RESIZE(name, params, args, fn, ptr, size, cb, ...)      \
	EXPORT void *name params                                    \
	{                                                           \
		REAL(void *(*)params, #name)                        \
		if (!HAVE_REAL()) {                                 \
			int b_ = mt_ext_enter();                    \
			void *p_ = mt_next_realloc(ptr, size);      \
			mt_ext_leave(b_);                           \
			return p_;                                  \
		}                                                   \
		if (!(ptr)) {                                       \
			int b_ = mt_ext_enter();                    \
			void *p_ = real_ args;                      \
			mt_ext_leave(b_);                           \
			mt_ext_alloc(fn, p_, size);                 \
			return p_;                                  \
		}                                                   \
		struct rz r_ = { .f = (void *)real_, __VA_ARGS__ }; \
		return mt_ext_resize(fn, ptr, size, cb, &r_);       \
	}

/* ---- fallbacks: the process's own allocator ---------------------------- */

static void *fb_aligned(size_t align, size_t size, int zero)
{
	void *p = align > 16 ? mt_next_memalign(align, size) : mt_next_malloc(size);
	if (p && zero)
		memset(p, 0, size);
	return p;
}

static size_t mul_or_max(size_t a, size_t b)
{
	size_t r;
	return __builtin_mul_overflow(a, b, &r) ? (size_t)-1 : r;
}

/* ---- jemalloc ---------------------------------------------------------- */

/* MALLOCX_LG_ALIGN(la) is la in the low 6 bits; MALLOCX_ZERO is 0x40. */
#define JE_ALIGN(flags) ((flags)&63 ? (size_t)1 << ((flags)&63) : 0)
#define JE_ZERO(flags) ((flags)&0x40)

/* xallocx: the block's real size before (sallocx) and after; recorded
 * only if it changed.  CTX: the library's xallocx, sallocx and arguments. */
struct xa {
	size_t (*xallocx)(void *, size_t, size_t, int);
	size_t (*sallocx)(const void *, int);
	size_t extra, after;
	int flags;
};

static void *xa_call(void *p, size_t n, void *c)
{
	struct xa *x = c;
	size_t before = x->sallocx(p, 0);
	x->after = x->xallocx(p, n, x->extra, x->flags);
	return x->after != before ? p : NULL;
}

#define JEMALLOC_API(pfx)                                                                     \
	EXT_ALLOC(pfx##mallocx, (size_t size, int flags), (size, flags), MT_FN_MALLOCX, size, \
		  fb_aligned(JE_ALIGN(flags), size, JE_ZERO(flags)))                          \
	EXT_RESIZE(pfx##rallocx, (void *ptr, size_t size, int flags), (ptr, size, flags),     \
		   MT_FN_RALLOCX, ptr, size, rz_rallocx, .flags = flags)                      \
	EXT_FREE(pfx##dallocx, (void *ptr, int flags), (ptr, flags), ptr)                     \
	EXT_FREE(pfx##sdallocx, (void *ptr, size_t size, int flags), (ptr, size, flags), ptr) \
	EXPORT size_t pfx##xallocx(void *ptr, size_t size, size_t extra, int flags)           \
	{                                                                                     \
		REAL(size_t (*)(void *, size_t, size_t, int), #pfx "xallocx")                 \
		static size_t (*sallocx_)(const void *, int);                                 \
		if (unlikely(!sallocx_)) {                                                    \
			int b_ = mt_ext_enter();                                              \
			sallocx_ = (size_t(*)(const void *, int))mt_next_sym(#pfx "sallocx"); \
			mt_ext_leave(b_);                                                     \
		}                                                                             \
		if (!HAVE_REAL() || !sallocx_)                                                \
			return 0; /* not in place: the caller keeps its block as it is */     \
		if (!size)	  /* invalid: no resize to record */                          \
			return real_(ptr, size, extra, flags);                                \
		struct xa x = { real_, sallocx_, extra, 0, flags };                           \
		mt_ext_resize(MT_FN_XALLOCX, ptr, size, xa_call, &x);                         \
		return x.after;                                                               \
	}

JEMALLOC_API()
JEMALLOC_API(je_)

/* A jemalloc built with the je_ prefix names its malloc & co. so too. */
EXT_ALLOC(je_malloc, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(je_calloc, (size_t n, size_t m), (n, m), MT_FN_CALLOC, mul_or_max(n, m),
	  mt_next_calloc(n, m))
EXT_ALLOC(je_memalign, (size_t a, size_t n), (a, n), MT_FN_MEMALIGN, n, mt_next_memalign(a, n))
EXT_ALLOC(je_aligned_alloc, (size_t a, size_t n), (a, n), MT_FN_ALIGNED_ALLOC, n,
	  mt_next_aligned_alloc(a, n))
EXT_ALLOC(je_valloc, (size_t n), (n), MT_FN_VALLOC, n, mt_next_valloc(n))
EXT_RESIZE(je_realloc, (void *p, size_t n), (p, n), MT_FN_REALLOC, p, n, rz_pn, .x = 0)
EXT_FREE(je_free, (void *p), (p), p)

/* posix_memalign's shape: the block through OUT, 0 or an error number. */
#define EXT_PMA(name, fn)                                                        \
	EXPORT int name(void **out, size_t align, size_t size)                   \
	{                                                                        \
		REAL(int (*)(void **, size_t, size_t), #name)                    \
		void *p_ = NULL;                                                 \
		int b_ = mt_ext_enter();                                         \
		int r_ = HAVE_REAL() ? real_(&p_, align, size) :                 \
				       mt_next_posix_memalign(&p_, align, size); \
		mt_ext_leave(b_);                                                \
		if (r_ == 0) {                                                   \
			*out = p_;                                               \
			mt_ext_alloc(fn, p_, size);                              \
		}                                                                \
		return r_;                                                       \
	}

EXT_PMA(je_posix_memalign, MT_FN_POSIX_MEMALIGN)

/* ---- tcmalloc (gperftools) ---------------------------------------------- */

EXT_ALLOC(tc_malloc, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(tc_malloc_skip_new_handler, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(tc_calloc, (size_t n, size_t m), (n, m), MT_FN_CALLOC, mul_or_max(n, m),
	  mt_next_calloc(n, m))
EXT_ALLOC(tc_memalign, (size_t a, size_t n), (a, n), MT_FN_MEMALIGN, n, mt_next_memalign(a, n))
EXT_ALLOC(tc_valloc, (size_t n), (n), MT_FN_VALLOC, n, mt_next_valloc(n))
EXT_ALLOC(tc_pvalloc, (size_t n), (n), MT_FN_PVALLOC, n, mt_next_pvalloc(n))
EXT_PMA(tc_posix_memalign, MT_FN_POSIX_MEMALIGN)
EXT_RESIZE(tc_realloc, (void *p, size_t n), (p, n), MT_FN_REALLOC, p, n, rz_pn, .x = 0)
EXT_FREE(tc_free, (void *p), (p), p)
EXT_FREE(tc_cfree, (void *p), (p), p)
EXT_FREE(tc_free_sized, (void *p, size_t n), (p, n), p)
/* C++'s new and delete as tcmalloc spells them (its operator new is these,
 * under the mangled names, and not hooked: see capture.h). */
EXT_ALLOC(tc_new, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(tc_newarray, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(tc_new_nothrow, (size_t n, const void *nt), (n, nt), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(tc_newarray_nothrow, (size_t n, const void *nt), (n, nt), MT_FN_MALLOC, n,
	  mt_next_malloc(n))
EXT_ALLOC(tc_new_aligned, (size_t n, size_t a), (n, a), MT_FN_ALIGNED_ALLOC, n, fb_aligned(a, n, 0))
EXT_ALLOC(tc_newarray_aligned, (size_t n, size_t a), (n, a), MT_FN_ALIGNED_ALLOC, n,
	  fb_aligned(a, n, 0))
EXT_ALLOC(tc_new_aligned_nothrow, (size_t n, size_t a, const void *nt), (n, a, nt),
	  MT_FN_ALIGNED_ALLOC, n, fb_aligned(a, n, 0))
EXT_ALLOC(tc_newarray_aligned_nothrow, (size_t n, size_t a, const void *nt), (n, a, nt),
	  MT_FN_ALIGNED_ALLOC, n, fb_aligned(a, n, 0))
EXT_FREE(tc_delete, (void *p), (p), p)
EXT_FREE(tc_deletearray, (void *p), (p), p)
EXT_FREE(tc_delete_nothrow, (void *p, const void *nt), (p, nt), p)
EXT_FREE(tc_deletearray_nothrow, (void *p, const void *nt), (p, nt), p)
EXT_FREE(tc_delete_sized, (void *p, size_t n), (p, n), p)
EXT_FREE(tc_deletearray_sized, (void *p, size_t n), (p, n), p)
EXT_FREE(tc_delete_aligned, (void *p, size_t a), (p, a), p)
EXT_FREE(tc_deletearray_aligned, (void *p, size_t a), (p, a), p)
EXT_FREE(tc_delete_aligned_nothrow, (void *p, size_t a, const void *nt), (p, a, nt), p)
EXT_FREE(tc_deletearray_aligned_nothrow, (void *p, size_t a, const void *nt), (p, a, nt), p)
EXT_FREE(tc_delete_sized_aligned, (void *p, size_t n, size_t a), (p, n, a), p)
EXT_FREE(tc_deletearray_sized_aligned, (void *p, size_t n, size_t a), (p, n, a), p)

/* ---- mimalloc ------------------------------------------------------------ */

EXT_ALLOC(mi_malloc, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(mi_malloc_small, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(mi_zalloc, (size_t n), (n), MT_FN_CALLOC, n, mt_next_calloc(1, n))
EXT_ALLOC(mi_zalloc_small, (size_t n), (n), MT_FN_CALLOC, n, mt_next_calloc(1, n))
EXT_ALLOC(mi_calloc, (size_t c, size_t n), (c, n), MT_FN_CALLOC, mul_or_max(c, n),
	  mt_next_calloc(c, n))
EXT_ALLOC(mi_mallocn, (size_t c, size_t n), (c, n), MT_FN_MALLOC, mul_or_max(c, n),
	  mt_next_malloc(mul_or_max(c, n)))
EXT_ALLOC(mi_malloc_aligned, (size_t n, size_t a), (n, a), MT_FN_ALIGNED_ALLOC, n,
	  fb_aligned(a, n, 0))
EXT_ALLOC(mi_malloc_aligned_at, (size_t n, size_t a, size_t o), (n, a, o), MT_FN_ALIGNED_ALLOC, n,
	  fb_aligned(a, n, 0))
EXT_ALLOC(mi_zalloc_aligned, (size_t n, size_t a), (n, a), MT_FN_ALIGNED_ALLOC, n,
	  fb_aligned(a, n, 1))
EXT_ALLOC(mi_zalloc_aligned_at, (size_t n, size_t a, size_t o), (n, a, o), MT_FN_ALIGNED_ALLOC, n,
	  fb_aligned(a, n, 1))
EXT_ALLOC(mi_calloc_aligned, (size_t c, size_t n, size_t a), (c, n, a), MT_FN_ALIGNED_ALLOC,
	  mul_or_max(c, n), fb_aligned(a, mul_or_max(c, n), 1))
EXT_ALLOC(mi_calloc_aligned_at, (size_t c, size_t n, size_t a, size_t o), (c, n, a, o),
	  MT_FN_ALIGNED_ALLOC, mul_or_max(c, n), fb_aligned(a, mul_or_max(c, n), 1))
EXT_ALLOC(mi_aligned_alloc, (size_t a, size_t n), (a, n), MT_FN_ALIGNED_ALLOC, n,
	  fb_aligned(a, n, 0))
EXT_ALLOC(mi_memalign, (size_t a, size_t n), (a, n), MT_FN_MEMALIGN, n, mt_next_memalign(a, n))
EXT_ALLOC(mi_valloc, (size_t n), (n), MT_FN_VALLOC, n, mt_next_valloc(n))
EXT_ALLOC(mi_pvalloc, (size_t n), (n), MT_FN_PVALLOC, n, mt_next_pvalloc(n))
EXT_PMA(mi_posix_memalign, MT_FN_POSIX_MEMALIGN)
EXT_ALLOC(mi_new, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(mi_new_nothrow, (size_t n), (n), MT_FN_MALLOC, n, mt_next_malloc(n))
EXT_ALLOC(mi_new_n, (size_t c, size_t n), (c, n), MT_FN_MALLOC, mul_or_max(c, n),
	  mt_next_malloc(mul_or_max(c, n)))
EXT_ALLOC(mi_new_aligned, (size_t n, size_t a), (n, a), MT_FN_ALIGNED_ALLOC, n, fb_aligned(a, n, 0))
EXT_ALLOC(mi_new_aligned_nothrow, (size_t n, size_t a), (n, a), MT_FN_ALIGNED_ALLOC, n,
	  fb_aligned(a, n, 0))
EXT_ALLOC(mi_strdup, (const char *s), (s), MT_FN_MALLOC, s ? strlen(s) + 1 : 0,
	  NULL /* the library is there if this is called */)
EXT_ALLOC(mi_strndup, (const char *s, size_t n), (s, n), MT_FN_MALLOC, s ? strnlen(s, n) + 1 : 0,
	  NULL)
EXT_RESIZE(mi_realloc, (void *p, size_t n), (p, n), MT_FN_REALLOC, p, n, rz_pn, .x = 0)
EXT_RESIZE(mi_reallocf, (void *p, size_t n), (p, n), MT_FN_REALLOC, p, n, rz_pn, .x = 0)
EXT_RESIZE(mi_rezalloc, (void *p, size_t n), (p, n), MT_FN_REALLOC, p, n, rz_pn, .x = 0)
EXT_RESIZE(mi_new_realloc, (void *p, size_t n), (p, n), MT_FN_REALLOC, p, n, rz_pn, .x = 0)
EXT_RESIZE(mi_reallocn, (void *p, size_t c, size_t n), (p, c, n), MT_FN_REALLOC, p,
	   mul_or_max(c, n), rz_pxy, .x = c, .y = n)
EXT_RESIZE(mi_reallocarray, (void *p, size_t c, size_t n), (p, c, n), MT_FN_REALLOCARRAY, p,
	   mul_or_max(c, n), rz_pxy, .x = c, .y = n)
EXT_RESIZE(mi_recalloc, (void *p, size_t c, size_t n), (p, c, n), MT_FN_REALLOC, p,
	   mul_or_max(c, n), rz_pxy, .x = c, .y = n)
EXT_RESIZE(mi_new_reallocn, (void *p, size_t c, size_t n), (p, c, n), MT_FN_REALLOC, p,
	   mul_or_max(c, n), rz_pxy, .x = c, .y = n)
EXT_RESIZE(mi_realloc_aligned, (void *p, size_t n, size_t a), (p, n, a), MT_FN_REALLOC, p, n,
	   rz_pnx, .x = a)
EXT_RESIZE(mi_rezalloc_aligned, (void *p, size_t n, size_t a), (p, n, a), MT_FN_REALLOC, p, n,
	   rz_pnx, .x = a)
EXT_RESIZE(mi_realloc_aligned_at, (void *p, size_t n, size_t a, size_t o), (p, n, a, o),
	   MT_FN_REALLOC, p, n, rz_pnxy, .x = a, .y = o)
EXT_RESIZE(mi_rezalloc_aligned_at, (void *p, size_t n, size_t a, size_t o), (p, n, a, o),
	   MT_FN_REALLOC, p, n, rz_pnxy, .x = a, .y = o)
EXT_FREE(mi_free, (void *p), (p), p)
EXT_FREE(mi_cfree, (void *p), (p), p)
EXT_FREE(mi_free_size, (void *p, size_t n), (p, n), p)
EXT_FREE(mi_free_aligned, (void *p, size_t a), (p, a), p)
EXT_FREE(mi_free_size_aligned, (void *p, size_t n, size_t a), (p, n, a), p)

/* mi_expand: in place or NULL, never a new block. */
EXPORT void *mi_expand(void *p, size_t n)
{
	REAL(void *(*)(void *, size_t), "mi_expand")
	if (!HAVE_REAL() || !p || !n)
		return HAVE_REAL() ? real_(p, n) : NULL;
	struct rz r = { .f = (void *)real_ };
	return mt_ext_resize(MT_FN_REALLOC, p, n, rz_pn, &r);
}

/* Explicit heaps (mi_heap_t *, opaque here). */
EXT_ALLOC(mi_heap_malloc, (void *h, size_t n), (h, n), MT_FN_MALLOC, n, NULL)
EXT_ALLOC(mi_heap_malloc_small, (void *h, size_t n), (h, n), MT_FN_MALLOC, n, NULL)
EXT_ALLOC(mi_heap_zalloc, (void *h, size_t n), (h, n), MT_FN_CALLOC, n, NULL)
EXT_ALLOC(mi_heap_calloc, (void *h, size_t c, size_t n), (h, c, n), MT_FN_CALLOC, mul_or_max(c, n),
	  NULL)
EXT_ALLOC(mi_heap_mallocn, (void *h, size_t c, size_t n), (h, c, n), MT_FN_MALLOC, mul_or_max(c, n),
	  NULL)
EXT_ALLOC(mi_heap_malloc_aligned, (void *h, size_t n, size_t a), (h, n, a), MT_FN_ALIGNED_ALLOC, n,
	  NULL)
EXT_ALLOC(mi_heap_malloc_aligned_at, (void *h, size_t n, size_t a, size_t o), (h, n, a, o),
	  MT_FN_ALIGNED_ALLOC, n, NULL)
EXT_ALLOC(mi_heap_zalloc_aligned, (void *h, size_t n, size_t a), (h, n, a), MT_FN_ALIGNED_ALLOC, n,
	  NULL)
EXT_ALLOC(mi_heap_zalloc_aligned_at, (void *h, size_t n, size_t a, size_t o), (h, n, a, o),
	  MT_FN_ALIGNED_ALLOC, n, NULL)
EXT_ALLOC(mi_heap_calloc_aligned, (void *h, size_t c, size_t n, size_t a), (h, c, n, a),
	  MT_FN_ALIGNED_ALLOC, mul_or_max(c, n), NULL)
EXT_ALLOC(mi_heap_calloc_aligned_at, (void *h, size_t c, size_t n, size_t a, size_t o),
	  (h, c, n, a, o), MT_FN_ALIGNED_ALLOC, mul_or_max(c, n), NULL)
EXT_ALLOC(mi_heap_alloc_new, (void *h, size_t n), (h, n), MT_FN_MALLOC, n, NULL)
EXT_ALLOC(mi_heap_alloc_new_n, (void *h, size_t c, size_t n), (h, c, n), MT_FN_MALLOC,
	  mul_or_max(c, n), NULL)
EXT_ALLOC(mi_heap_strdup, (void *h, const char *s), (h, s), MT_FN_MALLOC, s ? strlen(s) + 1 : 0,
	  NULL)
EXT_ALLOC(mi_heap_strndup, (void *h, const char *s, size_t n), (h, s, n), MT_FN_MALLOC,
	  s ? strnlen(s, n) + 1 : 0, NULL)
EXT_RESIZE(mi_heap_realloc, (void *h, void *p, size_t n), (h, p, n), MT_FN_REALLOC, p, n, rz_hpn,
	   .heap = h)
EXT_RESIZE(mi_heap_reallocf, (void *h, void *p, size_t n), (h, p, n), MT_FN_REALLOC, p, n, rz_hpn,
	   .heap = h)
EXT_RESIZE(mi_heap_rezalloc, (void *h, void *p, size_t n), (h, p, n), MT_FN_REALLOC, p, n, rz_hpn,
	   .heap = h)
EXT_RESIZE(mi_heap_reallocn, (void *h, void *p, size_t c, size_t n), (h, p, c, n), MT_FN_REALLOC, p,
	   mul_or_max(c, n), rz_hpxy, .heap = h, .x = c, .y = n)
EXT_RESIZE(mi_heap_recalloc, (void *h, void *p, size_t c, size_t n), (h, p, c, n), MT_FN_REALLOC, p,
	   mul_or_max(c, n), rz_hpxy, .heap = h, .x = c, .y = n)
EXT_RESIZE(mi_heap_realloc_aligned, (void *h, void *p, size_t n, size_t a), (h, p, n, a),
	   MT_FN_REALLOC, p, n, rz_hpnx, .heap = h, .x = a)
EXT_RESIZE(mi_heap_rezalloc_aligned, (void *h, void *p, size_t n, size_t a), (h, p, n, a),
	   MT_FN_REALLOC, p, n, rz_hpnx, .heap = h, .x = a)

/* A call of the library's own that is no event of the program's, with
 * whatever it allocates for itself through our hooks left out (mimalloc
 * allocates a heap's bookkeeping with its own mi_heap_malloc). */
#define EXT_QUIET(ret, name, params, args) \
	EXPORT ret name params             \
	{                                  \
		REAL(ret(*) params, #name) \
		if (!HAVE_REAL())          \
			return (ret)0;     \
		int b_ = mt_ext_enter();   \
		ret r_ = real_ args;       \
		mt_ext_leave(b_);          \
		return r_;                 \
	}

EXT_QUIET(void *, mi_heap_new, (void), ())
EXT_QUIET(void *, mi_heap_new_in_arena, (int arena), (arena))

EXPORT void mi_heap_delete(void *h)
{
	REAL(void (*)(void *), "mi_heap_delete")
	if (!HAVE_REAL())
		return;
	int b = mt_ext_enter();
	real_(h);
	mt_ext_leave(b);
}

/* mi_heap_destroy frees every block of the heap at once, without a call
 * per block: each is recorded as freed first, by visiting them. */
static _Bool destroy_visit(const void *heap, const void *area, void *block, size_t size, void *arg)
{
	(void)heap;
	(void)area;
	(void)size;
	(void)arg;
	if (block)
		mt_ext_free(block);
	return 1;
}

EXPORT void mi_heap_destroy(void *h)
{
	REAL(void (*)(void *), "mi_heap_destroy")
	static _Bool (*visit)(const void *, _Bool,
			      _Bool (*)(const void *, const void *, void *, size_t, void *),
			      void *);
	if (!visit) {
		int b = mt_ext_enter();
		visit = (_Bool(*)(const void *, _Bool,
				  _Bool (*)(const void *, const void *, void *, size_t, void *),
				  void *))mt_next_sym("mi_heap_visit_blocks");
		mt_ext_leave(b);
	}
	if (!HAVE_REAL())
		return;
	if (visit && h)
		visit(h, 1, destroy_visit, NULL);
	int b = mt_ext_enter();
	real_(h);
	mt_ext_leave(b);
}

/* ---- C++'s operator new and delete ------------------------------------ */

/* jemalloc, tcmalloc and mimalloc define C++'s operator new and delete
 * themselves, and a program that links or preloads one gets those, which
 * do not call malloc: the shim interposes them too.  When the next
 * definition is the allocator library's, its calls are recorded here (as
 * malloc or aligned_alloc, and free), with the thread inside the shim
 * across the call (some call our hooks on their way: mimalloc's aligned
 * new is its mi_new_aligned); when it is the C++ runtime's, which
 * allocates with malloc and frees with free (hooked), the call is only
 * passed on.
 *
 * A throwing new must not leave the thread marked inside the shim if it
 * throws: it is made as the library's nothrow variant (which never
 * throws), and only if that fails (memory exhausted, after the new_handler
 * was tried) as the throwing one, outside the shim, which then throws or
 * succeeds. */
static const char nothrow_tag; /* std::nothrow: an empty object's address */

/* The start of every operator new hook NAME(PARAMS): the library's own
 * definition (REAL), or malloc's when it has none; the call is passed on
 * unrecorded when it is the C++ runtime's (its malloc, hooked, records it). */
#define CXX_NEW_START(name, params, args, size)              \
	REAL(void *(*)params, #name)                         \
	static int own_ = -1;                                \
	if (!HAVE_REAL())                                    \
		return mt_next_malloc(size);                 \
	if (unlikely(own_ < 0))                              \
		own_ = mt_next_in_heap((const void *)real_); \
	if (!own_)                                           \
		return real_ args;

#define CXX_NOTHROW(name, params, args, fn, size)       \
	EXPORT void *name params                        \
	{                                               \
		CXX_NEW_START(name, params, args, size) \
		int b_ = mt_ext_enter();                \
		void *p_ = real_ args;                  \
		mt_ext_leave(b_);                       \
		mt_ext_alloc(fn, p_, size);             \
		return p_;                              \
	}

#define CXX_NEW(name, params, args, fn, size, nothrow, nparams, nargs) \
	EXPORT void *name params                                       \
	{                                                              \
		CXX_NEW_START(name, params, args, size)                \
		static void *(*nt_)nparams;                            \
		if (unlikely(!nt_)) {                                  \
			int b_ = mt_ext_enter();                       \
			nt_ = (void *(*)nparams)mt_next_sym(nothrow);  \
			mt_ext_leave(b_);                              \
		}                                                      \
		void *p_ = NULL;                                       \
		if (nt_ && mt_next_in_heap((const void *)nt_)) {       \
			int b_ = mt_ext_enter();                       \
			p_ = nt_ nargs;                                \
			mt_ext_leave(b_);                              \
		}                                                      \
		if (!p_)                                               \
			p_ = real_ args;                               \
		mt_ext_alloc(fn, p_, size);                            \
		return p_;                                             \
	}

#define CXX_DELETE(name, params, args)                               \
	EXPORT void name params                                      \
	{                                                            \
		REAL(void(*) params, #name)                          \
		static int own_ = -1;                                \
		if (!HAVE_REAL()) {                                  \
			mt_next_free(p);                             \
			return;                                      \
		}                                                    \
		if (unlikely(own_ < 0))                              \
			own_ = mt_next_in_heap((const void *)real_); \
		if (!own_) {                                         \
			real_ args;                                  \
			return;                                      \
		}                                                    \
		if (p)                                               \
			mt_ext_free(p);                              \
		int b_ = mt_ext_enter();                             \
		real_ args;                                          \
		mt_ext_leave(b_);                                    \
	}

/* Itanium C++ ABI names, 64-bit size_t: new, new[]; nothrow, aligned. */
CXX_NOTHROW(_ZnwmRKSt9nothrow_t, (size_t n, const void *nt), (n, nt), MT_FN_MALLOC, n)
CXX_NOTHROW(_ZnamRKSt9nothrow_t, (size_t n, const void *nt), (n, nt), MT_FN_MALLOC, n)
CXX_NOTHROW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const void *nt), (n, a, nt),
	    MT_FN_ALIGNED_ALLOC, n)
CXX_NOTHROW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const void *nt), (n, a, nt),
	    MT_FN_ALIGNED_ALLOC, n)
CXX_NEW(_Znwm, (size_t n), (n), MT_FN_MALLOC, n, "_ZnwmRKSt9nothrow_t", (size_t, const void *),
	(n, &nothrow_tag))
CXX_NEW(_Znam, (size_t n), (n), MT_FN_MALLOC, n, "_ZnamRKSt9nothrow_t", (size_t, const void *),
	(n, &nothrow_tag))
CXX_NEW(_ZnwmSt11align_val_t, (size_t n, size_t a), (n, a), MT_FN_ALIGNED_ALLOC, n,
	"_ZnwmSt11align_val_tRKSt9nothrow_t", (size_t, size_t, const void *), (n, a, &nothrow_tag))
CXX_NEW(_ZnamSt11align_val_t, (size_t n, size_t a), (n, a), MT_FN_ALIGNED_ALLOC, n,
	"_ZnamSt11align_val_tRKSt9nothrow_t", (size_t, size_t, const void *), (n, a, &nothrow_tag))
CXX_DELETE(_ZdlPv, (void *p), (p))
CXX_DELETE(_ZdaPv, (void *p), (p))
CXX_DELETE(_ZdlPvm, (void *p, size_t n), (p, n))
CXX_DELETE(_ZdaPvm, (void *p, size_t n), (p, n))
CXX_DELETE(_ZdlPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt))
CXX_DELETE(_ZdaPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt))
CXX_DELETE(_ZdlPvSt11align_val_t, (void *p, size_t a), (p, a))
CXX_DELETE(_ZdaPvSt11align_val_t, (void *p, size_t a), (p, a))
CXX_DELETE(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t a), (p, n, a))
CXX_DELETE(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t a), (p, n, a))
CXX_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t a, const void *nt), (p, a, nt))
CXX_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t a, const void *nt), (p, a, nt))
