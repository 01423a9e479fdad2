"""Allocations and frees before and after main; see lifecycle.c."""
from gtlib import marker_line

SRC = 'lifecycle.c'

SITES = {
    'ctor_leak': ('gt_ctor', dict(allocations=1, allocated_bytes=1234, frees=0, leaked_allocations=1,
                                  leaked_bytes=1234, temporary_allocations=0)),
    'ctor_kept': ('gt_ctor', dict(allocations=1, allocated_bytes=2345, frees=1, leaked_allocations=0,
                                  temporary_allocations=0)),
    'main_alloc': ('main', dict(allocations=1, allocated_bytes=3456, frees=1, leaked_allocations=0,
                                temporary_allocations=0)),
    'tls_alloc': ('thread_main', dict(allocations=1, allocated_bytes=4567, frees=1, leaked_allocations=0,
                                      temporary_allocations=1)),
}


def run(t, prog):
    _, p = t.record_process([prog])
    if p is None:
        return
    t.check_no_loss(p)
    t.eq(len(t.own_sites(p, prog)), len(SITES), 'number of sites in the program')
    for fn, (caller, want) in SITES.items():
        s = t.site(p, fn)
        t.check_site(s, fn, allocator='malloc', **want)
        t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)),
                               (caller, SRC, marker_line(SRC, 'call:' + fn))])
    foreign = t.foreign_sites(p, prog)
    t.check_totals(p, extra=foreign, allocations=4, allocated_bytes=11602, frees=3, leaked_allocations=1,
                   leaked_bytes=1234, temporary_allocations=1)
    t.check_sites_sum_to_totals(p)
