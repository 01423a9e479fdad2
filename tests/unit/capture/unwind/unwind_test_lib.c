/* Shared library for test-unwind, dlopen'd at run time.  Built twice: variant
 * A with frame pointers, variant B without and with its code shifted, so
 * that reloading B where A was exercises the unwinder's invalidation. */
#include <alloca.h>
#include <string.h>

typedef int (*unw_cb)(int);

#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

#ifdef VARIANT_B
NOIPA int lib_pad(int n)
{
    volatile char b[333];
    for (int i = 0; i < (int)sizeof b; i++)
        b[i] = (char)(i * n);
    return b[n % 333] + b[7];
}
#endif

/* Realigns its stack (gcc: a DRAP frame whose CFA is *(rbp-8)) and uses
 * alloca. */
NOIPA __attribute__((force_align_arg_pointer)) int lib_f5b(unw_cb cb, int n)
{
    _Alignas(64) volatile char buf[64];
    char *p = alloca((size_t)n + 16);
    memset(p, n, (size_t)n + 16);
    buf[0] = p[n];
    int r = cb(n + buf[0] - p[n]);
    return r + p[1] - buf[0] + 1;
}

NOIPA int lib_f5a(unw_cb cb, int n)
{
    volatile int x = n;
    return lib_f5b(cb, x) + 1;
}
