"""Blocks handed from thread to thread, reallocated on the way; see xthreads.c."""
import os

from gtlib import marker_line

SRC = 'xthreads.c'
N = 3000
KEPT = N // 10

# leaf function -> (caller, expected figures); xthreads.c explains each
SITES = {
    'born': ('main', dict(allocator='malloc', allocations=N, allocated_bytes=100 * N, frees=N,
                          leaked_allocations=0, leaked_bytes=0, peak_bytes=0, peak_allocations=0)),
    'grow1': ('stage1', dict(allocator='realloc', allocations=N, allocated_bytes=200 * N, frees=N,
                             leaked_allocations=0, leaked_bytes=0, peak_bytes=0, peak_allocations=0)),
    'grow2': ('stage2', dict(allocator='realloc', allocations=N, allocated_bytes=4000 * N,
                             frees=N - KEPT, leaked_allocations=KEPT, leaked_bytes=4000 * KEPT,
                             peak_bytes=4000 * KEPT, peak_allocations=KEPT)),
    'summit': ('main', dict(allocator='malloc', allocations=1, allocated_bytes=10000000, frees=1,
                            leaked_allocations=0, leaked_bytes=0, peak_bytes=10000000,
                            peak_allocations=1)),
}


def run(t, prog):
    # both ways the shim records threads: the lock per event, and a buffer
    # per thread merged by time (the default depends on the CPU count)
    for mode in ('0', '1'):
        os.environ['MEMTRACE_THREAD_BUFFERS'] = mode
        try:
            check(t, prog, f'buffers={mode}: ', t.path(f'rec{mode}.mtrace'))
        finally:
            del os.environ['MEMTRACE_THREAD_BUFFERS']


def check(t, prog, label, out):
    _, p = t.record_process([prog], out=out)
    if p is None:
        return
    t.check_no_loss(p, label + 'process')
    foreign = t.foreign_sites(p, prog)
    t.eq(len(t.own_sites(p, prog)), len(SITES), label + 'number of sites in the program')
    t.check_totals(p, label=label + 'totals', extra=foreign, allocations=3 * N + 1, allocated_bytes=4300 * N + 10000000,
                   frees=3 * N - KEPT + 1, leaked_allocations=KEPT, leaked_bytes=4000 * KEPT,
                   peak_bytes=4000 * KEPT + 10000000, peak_allocations=KEPT + 1, unmatched_frees=0)
    t.check_sites_sum_to_totals(p, label + 'totals')
    for fn, (caller, want) in SITES.items():
        s = t.site(p, fn)
        t.check_site(s, label + fn, **want)
        t.check_frames(s, label + fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)),
                               (caller, SRC, marker_line(SRC, 'call:' + fn))])
