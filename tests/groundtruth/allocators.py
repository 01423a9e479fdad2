"""Every allocation function; see allocators.c for why each figure is what it is."""
import os

from gtlib import marker_line

SRC = 'allocators.c'
# the bpf axis (run_case.py --backend=bpf): the same figures as the shim's
BPF = {}

# leaf function -> (allocator name, calls, requested size), as in allocators.c
TABLE = {
    'do_malloc': ('malloc', 1, 1001),
    'do_calloc': ('calloc', 2, 3 * 337),
    'do_realloc': ('realloc', 3, 1021),
    'do_reallocarray': ('reallocarray', 4, 7 * 147),
    'do_posix_memalign': ('posix_memalign', 5, 1031),
    'do_aligned_alloc': ('aligned_alloc', 6, 1280),
    'do_memalign': ('memalign', 7, 1039),
    'do_valloc': ('valloc', 8, 1049),
    'do_pvalloc': ('pvalloc', 9, 1051),
}


def expected_totals():
    allocs = sum(n for _, n, _ in TABLE.values())
    total = sum(n * sz for _, n, sz in TABLE.values())
    freed = sum(sz for _, _, sz in TABLE.values())  # the first block of each site
    return dict(allocations=allocs, frees=len(TABLE), allocated_bytes=total,
                peak_bytes=total, peak_allocations=allocs,
                leaked_allocations=allocs - len(TABLE), leaked_bytes=total - freed,
                temporary_allocations=0, unmatched_frees=0)


def check_recording(t, rep, prog, label):
    """The checks shared with the standalone-shim case (shim.py)."""
    p = t.only_process(rep)
    if p is None:
        return
    exp = expected_totals()
    # a preloaded allocator that links libstdc++ brings its start-up blocks
    startup = t.startup_sites(p, prog, label)
    t.check_totals(p, label=f'{label} totals', extra=startup, **exp)
    t.check_no_loss(p, label)
    t.eq(len(t.own_sites(p, prog)), len(TABLE), f'{label}: number of sites of the program')
    t.check_sites_sum_to_totals(p, label)
    t.eq(p.get('exe'), os.path.realpath(prog), f'{label}: exe')
    for fn, (allocator, n, size) in TABLE.items():
        s = t.site(p, fn)
        t.check_site(s, f'{label} {fn}', allocator=allocator, allocations=n, allocated_bytes=n * size,
                     frees=1, leaked_allocations=n - 1, leaked_bytes=(n - 1) * size,
                     peak_bytes=n * size, peak_allocations=n, temporary_allocations=0,
                     min_size=size, max_size=size)
        t.check_frames(s, f'{label} {fn}', [
            (fn, SRC, marker_line(SRC, 'site:' + fn)),
            ('main', SRC, marker_line(SRC, 'call:' + fn)),
        ])
        if s:
            mods = [f.get('module') for f in s['frames'][:2]]
            t.eq(mods, [os.path.realpath(prog)] * 2, f'{label} {fn}: module of frames[0..1]')
            t.check(not any(f.get('inlined') for f in s['frames'][:2]),
                    f'{label} {fn}: frames[0..1] must not be marked inlined (the functions are noinline)')


def run(t, prog):
    rec, _ = t.record([prog])
    rep = t.report(rec)
    check_recording(t, rep, prog, 'record')
