"""realloc that grows, shrinks, moves, fails and frees; see realloc.c."""
from gtlib import marker_line

SRC = 'realloc.c'
# the bpf axis (run_case.py --backend=bpf): the same figures as the shim's
BPF = {}
MIB = 1 << 20

# leaf function -> expected site figures (realloc.c explains each)
SITES = {
    'first_alloc': dict(allocator='malloc', allocations=1, allocated_bytes=100, frees=1,
                        leaked_allocations=0, leaked_bytes=0, peak_bytes=0, temporary_allocations=1),
    'grow': dict(allocator='realloc', allocations=1, allocated_bytes=200, frees=1,
                 leaked_allocations=0, leaked_bytes=0, peak_bytes=0, temporary_allocations=1),
    'shrink': dict(allocator='realloc', allocations=1, allocated_bytes=50, frees=0,
                   leaked_allocations=1, leaked_bytes=50, peak_bytes=50, temporary_allocations=0),
    'small': dict(allocator='malloc', allocations=1, allocated_bytes=64, frees=1,
                  leaked_allocations=0, leaked_bytes=0, peak_bytes=0, temporary_allocations=0),
    'neighbour': dict(allocator='malloc', allocations=1, allocated_bytes=64, frees=0,
                      leaked_allocations=1, leaked_bytes=64, peak_bytes=64, temporary_allocations=0),
    'move': dict(allocator='realloc', allocations=1, allocated_bytes=MIB, frees=1,
                 leaked_allocations=0, leaked_bytes=0, peak_bytes=MIB, temporary_allocations=1),
    'victim': dict(allocator='malloc', allocations=1, allocated_bytes=300, frees=0,
                   leaked_allocations=1, leaked_bytes=300, peak_bytes=0, temporary_allocations=0),
    'zero_victim': dict(allocator='malloc', allocations=1, allocated_bytes=77, frees=1,
                        leaked_allocations=0, leaked_bytes=0, peak_bytes=0, temporary_allocations=1),
}


def run(t, prog):
    _, p = t.record_process([prog])
    if p is None:
        return
    t.check_totals(p, allocations=8, frees=5, allocated_bytes=100 + 200 + 50 + 64 + 64 + MIB + 300 + 77,
                   peak_bytes=50 + 64 + MIB, peak_allocations=3,
                   leaked_allocations=3, leaked_bytes=50 + 64 + 300,
                   temporary_allocations=4, unmatched_frees=0)
    t.check_no_loss(p)
    t.check_sites_sum_to_totals(p)
    # the failed realloc and realloc(d, 0) allocate nothing: no site of theirs
    t.eq(len(p.get('sites', [])), len(SITES), 'number of sites')
    t.eq(t.sites_of(p, 'fail'), [], 'sites of the failed realloc')
    t.eq(t.sites_of(p, 'zero'), [], 'sites of realloc(d, 0)')
    for fn, want in SITES.items():
        s = t.site(p, fn)
        t.check_site(s, fn, **want)
        t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)), ('main', SRC, None)])
