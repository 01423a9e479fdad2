/*
 * next.c - the allocator the process would have used without the shim.
 *
 * The shim defines malloc & co., so it must hand each call on to the next
 * definition in symbol lookup order: a jemalloc, tcmalloc or mimalloc that
 * was preloaded after the shim or linked into the program stays in force,
 * and glibc serves only when it is the allocator.  Those definitions are
 * found with dlsym(RTLD_NEXT) on the first call of any hook (the loader
 * itself calls malloc before any constructor runs, so this cannot wait for
 * one).  When every one of them is the __libc_* function the shim's own
 * references bind to (glibc's; or mimalloc's and tcmalloc's, which define
 * those names too, as aliases of their malloc & co.), the hooks call those
 * directly, as they always did (mt_next_glibc): no indirect call, no cost.
 *
 * dlsym may itself allocate (its error strings); calls made on the resolving
 * thread while it runs are served from a small static buffer, whose blocks
 * free() recognises and ignores.  Once that buffer has been used, the
 * direct path is not taken (a block of it must never reach __libc_free), so
 * frees check for it.
 */
#include "shim.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

struct mt_next mt_next;
int mt_next_glibc = -1;
static __thread int t_resolving;
static char heap_path[1024];
static const void *heap_base;
static const char *heap_name = "unknown";

/* ---- the bootstrap buffer --------------------------------------------- */

/* 64 KiB is far more than dlsym needs (it allocates only on errors). */
_Alignas(64) uint8_t mt_next_boot[MT_NEXT_BOOT_SIZE];
static atomic_size_t boot_used;

/* A block of SIZE bytes (zeroed: the buffer is never reused), aligned to
 * ALIGN (a power of two), with its size kept in the 16 bytes before it. */
static void *boot_alloc(size_t align, size_t size)
{
	if (align < 16)
		align = 16;
	if (size > MT_NEXT_BOOT_SIZE || align > MT_NEXT_BOOT_SIZE / 4)
		return NULL;
	size_t need = size + align + 16, at = atomic_fetch_add(&boot_used, need);
	if (at + need > MT_NEXT_BOOT_SIZE)
		return NULL;
	uintptr_t p = ((uintptr_t)(mt_next_boot + at) + 16 + align - 1) & ~(uintptr_t)(align - 1);
	((size_t *)p)[-1] = size;
	return (void *)p;
}

int mt_next_boot_owns(const void *p)
{
	return (const uint8_t *)p >= mt_next_boot &&
	       (const uint8_t *)p < mt_next_boot + MT_NEXT_BOOT_SIZE;
}

size_t mt_next_boot_size(const void *p)
{
	return ((const size_t *)p)[-1];
}

/* ---- lookup ------------------------------------------------------------ */

static void *next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* Does the object that defines the next malloc also define NAME? */
static int heap_defines(const char *name, const void *base)
{
	Dl_info info;
	void *s = next_sym(name);
	return s && dladdr(s, &info) && info.dli_fbase == base;
}

/* Names the allocator that the next malloc belongs to, by what its object
 * defines besides malloc (the file name says nothing of a static build). */
static void name_heap(void)
{
	Dl_info info;
	if (!mt_next.malloc || !dladdr((void *)mt_next.malloc, &info) || !info.dli_fname)
		return;
	size_t n = strlen(info.dli_fname);
	if (n >= sizeof heap_path)
		n = sizeof heap_path - 1;
	memcpy(heap_path, info.dli_fname, n);
	heap_path[n] = 0;
	heap_base = info.dli_fbase;
	if (heap_defines("mallocx", info.dli_fbase) || heap_defines("je_mallocx", info.dli_fbase))
		heap_name = "jemalloc";
	else if (heap_defines("tc_malloc", info.dli_fbase))
		heap_name = "tcmalloc";
	else if (heap_defines("mi_malloc", info.dli_fbase))
		heap_name = "mimalloc";
	else if (heap_defines("gnu_get_libc_version", info.dli_fbase))
		heap_name = "glibc";
}

int mt_next_resolve(void)
{
	if (t_resolving)
		return -1;
	t_resolving = 1;
	struct mt_next n;
	n.malloc = (void *(*)(size_t))next_sym("malloc");
	n.free = (void (*)(void *))next_sym("free");
	n.calloc = (void *(*)(size_t, size_t))next_sym("calloc");
	n.realloc = (void *(*)(void *, size_t))next_sym("realloc");
	n.memalign = (void *(*)(size_t, size_t))next_sym("memalign");
	n.aligned_alloc = (void *(*)(size_t, size_t))next_sym("aligned_alloc");
	n.posix_memalign = (int (*)(void **, size_t, size_t))next_sym("posix_memalign");
	n.valloc = (void *(*)(size_t))next_sym("valloc");
	n.pvalloc = (void *(*)(size_t))next_sym("pvalloc");
	/* Without a malloc and a free after us (a program that cannot be), or
	 * a memalign (every allocator library we know has one), glibc serves. */
	if (!n.malloc || !n.free || !n.calloc || !n.realloc || !n.memalign) {
		n.malloc = __libc_malloc;
		n.free = __libc_free;
		n.calloc = __libc_calloc;
		n.realloc = __libc_realloc;
		n.memalign = __libc_memalign;
	}
	/* A function the next malloc's object does not define (jemalloc has no
	 * pvalloc) would be found further on, in glibc: a block of the wrong
	 * heap.  Made from that object's memalign instead. */
	Dl_info mi;
	if (dladdr((void *)n.malloc, &mi)) {
		void **own[] = { (void **)&n.aligned_alloc, (void **)&n.posix_memalign,
				 (void **)&n.valloc, (void **)&n.pvalloc };
		for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
			Dl_info fi;
			if (*own[i] && (!dladdr(*own[i], &fi) || fi.dli_fbase != mi.dli_fbase))
				*own[i] = NULL;
		}
	}
	int glibc = n.malloc == __libc_malloc && n.free == __libc_free &&
		    n.calloc == __libc_calloc && n.realloc == __libc_realloc &&
		    n.memalign == __libc_memalign && n.valloc == __libc_valloc &&
		    n.pvalloc == __libc_pvalloc;
	mt_next = n;
	name_heap();
	t_resolving = 0;
	/* tcmalloc and mimalloc define __libc_malloc & co. themselves: the
	 * names match, the heap is theirs, and their calls to their own API
	 * must pass through the hooks as one event (the NEXT path). */
	if (strcmp(heap_name, "glibc"))
		glibc = 0;
	/* Blocks of the bootstrap buffer may exist (dlsym's messages while
	 * the heap was named): the hooks that call glibc directly look for them
	 * first (mt_boot_owns: two compares), so glibc stays the fast path. */
	__atomic_store_n(&mt_next_glibc, glibc, __ATOMIC_RELEASE);
	return 0;
}

int mt_next_in_heap(const void *fn)
{
	Dl_info info;
	if (mt_next_glibc < 0)
		mt_next_resolve();
	return fn && heap_base && dladdr((void *)fn, &info) && info.dli_fbase == heap_base;
}

const char *mt_next_heap_name(void)
{
	return heap_name;
}

const char *mt_next_heap_path(void)
{
	return heap_path;
}

/* ---- the calls, when not glibc's --------------------------------------- */

/* Resolved, or -1 while this thread resolves (dlsym calling malloc). */
static int ready(void)
{
	if (likely(__atomic_load_n(&mt_next_glibc, __ATOMIC_ACQUIRE) >= 0))
		return 0;
	return mt_next_resolve();
}

void *mt_next_malloc(size_t n)
{
	return ready() ? boot_alloc(16, n) : mt_next.malloc(n);
}

void mt_next_free(void *p)
{
	if (mt_next_boot_owns(p))
		return;
	if (ready() == 0)
		mt_next.free(p);
}

void *mt_next_calloc(size_t n, size_t m)
{
	size_t total;
	if (ready())
		return __builtin_mul_overflow(n, m, &total) ? NULL : boot_alloc(16, total);
	return mt_next.calloc(n, m);
}

void *mt_next_realloc(void *old, size_t n)
{
	if (ready() || mt_next_boot_owns(old)) {
		void *p = ready() ? boot_alloc(16, n) : mt_next.malloc(n);
		if (p && old) {
			size_t was = mt_next_boot_size(old);
			memcpy(p, old, was < n ? was : n);
		}
		return p;
	}
	return mt_next.realloc(old, n);
}

void *mt_next_memalign(size_t align, size_t n)
{
	return ready() ? boot_alloc(align, n) : mt_next.memalign(align, n);
}

void *mt_next_aligned_alloc(size_t align, size_t n)
{
	if (ready())
		return boot_alloc(align, n);
	return mt_next.aligned_alloc ? mt_next.aligned_alloc(align, n) : mt_next.memalign(align, n);
}

int mt_next_posix_memalign(void **out, size_t align, size_t n)
{
	if (ready() || !mt_next.posix_memalign) {
		void *p = ready() ? boot_alloc(align, n) : mt_next.memalign(align, n);
		if (!p)
			return 12; /* ENOMEM */
		*out = p;
		return 0;
	}
	return mt_next.posix_memalign(out, align, n);
}

void *mt_next_valloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (ready())
		return boot_alloc(page, n);
	return mt_next.valloc ? mt_next.valloc(n) : mt_next.memalign(page, n);
}

void *mt_next_pvalloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (ready())
		return boot_alloc(page, n);
	if (mt_next.pvalloc)
		return mt_next.pvalloc(n);
	size_t up = n ? (n + page - 1) & ~(page - 1) : page;
	return up < n ? NULL : mt_next.memalign(page, up);
}

void *mt_next_sym(const char *name)
{
	return next_sym(name);
}
