"""4 threads with cross-thread frees; see threads.c."""
import os

from gtlib import marker_line

SRC = 'threads.c'
N = 2000
SIZES = [104, 136, 168, 200]
S = sum(SIZES)
# the bpf axis (run_case.py --backend=bpf): the same figures as the shim's
# but temporaries (cross-thread frees: the order of events of different
# threads can differ by a few ns between the backends)
BPF = dict(temporaries=False)


def run(t, *args):
    # gt-threads-buffers: with the per-thread buffers whatever the CPU count
    prog = args[-1]
    if args[0] == 'buffers':
        os.environ['MEMTRACE_THREAD_BUFFERS'] = '1'
    _, p = t.record_process([prog])
    if p is None:
        return
    t.check_no_loss(p)
    foreign = t.foreign_sites(p, prog)
    t.eq(len(t.own_sites(p, prog)), 8, 'number of sites in the program')
    t.check_totals(p, extra=foreign, allocations=6 * N, allocated_bytes=3 * N // 2 * S, frees=4 * N,
                   leaked_allocations=2 * N, leaked_bytes=N // 2 * S, temporary_allocations=0)
    t.check_sites_sum_to_totals(p)
    for k, size in enumerate(SIZES):
        fn = f'alloc_t{k}'
        s = t.site(p, fn)
        t.check_site(s, fn, allocator='malloc', allocations=N, allocated_bytes=N * size, frees=N // 2,
                     leaked_allocations=N // 2, leaked_bytes=N // 2 * size, temporary_allocations=0,
                     min_size=size, max_size=size)
        t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)),
                               ('worker', SRC, marker_line(SRC, 'call:alloc'))])
        fn = f'more_t{k}'
        s = t.site(p, fn)
        t.check_site(s, fn, allocator='malloc', allocations=N // 2, allocated_bytes=N // 2 * size,
                     frees=N // 2, leaked_allocations=0, leaked_bytes=0, temporary_allocations=0)
        t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)),
                               ('worker', SRC, marker_line(SRC, 'call:more'))])
    # peak bounds (threads.c): the library's own blocks may add to it
    fb = sum(s.get('allocated_bytes', 0) for s in foreign)
    peak = p.get('totals', {}).get('peak_bytes', 0)
    t.check(N * S <= peak and peak <= 3 * N // 2 * S + fb,
            f'totals peak_bytes = {peak}, expected between {N * S} (all phase-1 blocks) and '
            f'{3 * N // 2 * S + fb} (phase 1 and 2, plus {fb} bytes of the library)')
