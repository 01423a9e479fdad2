/*
 * bench-unwind: nanoseconds per stack capture, mt_unwind() against
 * libunwind's unw_backtrace(), on stacks of 7 and 20 frames (counted from
 * the function that calls the unwinder down to _start, as unw_backtrace
 * reports them).  Built like ordinary distribution code: -O2 without frame
 * pointers.  "cold" is mt_unwind right after mt_unwind_modules_changed():
 * every frame misses the cache.  Usage: bench-unwind [iterations]
 */
#include <libunwind.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "capture/shim/unwind.h"

#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

static long g_iters = 2000000;
static volatile int sink;

struct result {
    double ns;
    int frames;
};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The bottom frame: calls the unwinder in a loop. */
NOIPA void bottom(int which, struct result *r)
{
    uint64_t pcs[64];
    void *bt[64];
    int n = 0;
    double t0 = now_ns();
    if (which == 0) {
        for (long i = 0; i < g_iters; i++)
            n = mt_unwind(pcs, 64, 0);
        r->frames = n + 1;      /* + this function, which mt_unwind omits */
    } else if (which == 2) {
        /* cold: every frame misses the cache, the module table is rebuilt */
        for (long i = 0; i < g_iters; i++) {
            mt_unwind_modules_changed();
            n = mt_unwind(pcs, 64, 0);
        }
        r->frames = n + 1;
    } else {
        for (long i = 0; i < g_iters; i++)
            n = unw_backtrace(bt, 64);
        r->frames = n;
    }
    r->ns = (now_ns() - t0) / (double)g_iters;
    sink += n;
}

NOIPA void rec(int depth, int which, struct result *r)
{
    if (depth > 0)
        rec(depth - 1, which, r);
    else
        bottom(which, r);
    sink++;                     /* no tail call */
}

/* bottom + depth x rec + run + main + __libc_start_call_main +
 * __libc_start_main + _start */
NOIPA void run(int frames, int which, struct result *r)
{
    rec(frames - 7, which, r);
    sink++;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_iters = atol(argv[1]);
    static const int depths[] = { 7, 20 };
    printf("%-8s %-16s %8s %10s\n", "depth", "unwinder", "frames", "ns/unwind");
    for (int d = 0; d < 2; d++) {
        struct result mine, ref;
        long it = g_iters;
        g_iters = 1000;         /* warm up both */
        run(depths[d], 0, &mine);
        run(depths[d], 1, &ref);
        g_iters = it;
        run(depths[d], 0, &mine);
        run(depths[d], 1, &ref);
        printf("%-8d %-16s %8d %10.1f\n", depths[d], "mt_unwind", mine.frames, mine.ns);
        printf("%-8d %-16s %8d %10.1f\n", depths[d], "unw_backtrace", ref.frames, ref.ns);
        g_iters = it / 1000 > 100 ? it / 1000 : 100;
        run(depths[d], 2, &mine);
        g_iters = it;
        printf("%-8d %-16s %8d %10.1f\n", depths[d], "mt_unwind cold", mine.frames, mine.ns);
    }
    return 0;
}
