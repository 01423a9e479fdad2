"""Temporary allocations; see temporary.c."""
from gtlib import marker_line

SRC = 'temporary.c'
# the bpf axis (run_case.py --backend=bpf): the same figures as the shim's
BPF = {}

SITES = {
    'solo': dict(allocations=5, allocated_bytes=50, frees=5, leaked_allocations=0, temporary_allocations=5),
    'outer': dict(allocations=3, allocated_bytes=60, frees=3, leaked_allocations=0, temporary_allocations=0),
    'inner': dict(allocations=3, allocated_bytes=90, frees=3, leaked_allocations=0, temporary_allocations=3),
    'first': dict(allocations=2, allocated_bytes=80, frees=2, leaked_allocations=0, temporary_allocations=0),
    'second': dict(allocations=2, allocated_bytes=100, frees=2, leaked_allocations=0, temporary_allocations=0),
    'thr_block': dict(allocations=1, allocated_bytes=60, frees=1, leaked_allocations=0, temporary_allocations=1),
    'main_between': dict(allocations=1, allocated_bytes=70, frees=0, leaked_allocations=1, leaked_bytes=70,
                         temporary_allocations=0),
}
CALLER = {'thr_block': 'thread_main'}


def run(t, prog):
    rec, p = t.record_process([prog])
    if p is None:
        return
    foreign = t.foreign_sites(p, prog)
    t.eq(len(t.own_sites(p, prog)), len(SITES), 'number of sites in the program')
    t.check_totals(p, extra=foreign, allocations=17, allocated_bytes=510, frees=16,
                   leaked_allocations=1, leaked_bytes=70, temporary_allocations=9)
    t.check_no_loss(p)
    t.check_sites_sum_to_totals(p)
    for fn, want in SITES.items():
        s = t.site(p, fn)
        t.check_site(s, fn, allocator='malloc', **want)
        t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)), (CALLER.get(fn, 'main'), SRC, None)])

    # Cross-check with the temporary view: it lists every site (the
    # interface: "sites holds every site unless -n N limits it"), ranked by
    # temporary allocations, so the ones that have some come first.
    rt = t.report(rec, ['--temporary'])
    pt = t.only_process(rt)
    if pt is not None:
        t.eq(rt.get('view'), 'temporary', 'view of report --temporary --json')
        own = [s for s in t.own_sites(pt, prog)]
        got = sorted((t.fn(s), s.get('temporary_allocations')) for s in own if s.get('temporary_allocations'))
        t.eq(got, [('inner', 3), ('solo', 5), ('thr_block', 1)],
             'sites of the program with temporaries in report --temporary, with their counts')
        counts = [s.get('temporary_allocations') for s in pt.get('sites', [])]
        t.eq(counts, sorted(counts, reverse=True), 'report --temporary ranks sites by temporary allocations')
        t.eq(len(pt.get('sites', [])), len(p.get('sites', [])), 'report --temporary lists every site')
        top = t.report(rec, ['--temporary', '-n', '2'])
        tp = t.only_process(top)
        if tp is not None:
            t.eq([t.fn(s) for s in tp.get('sites', [])], ['solo', 'inner'], 'report --temporary -n 2: the top two')
        counts = [s.get('temporary_allocations', 0) for s in pt.get('sites', [])]
        t.eq(counts, sorted(counts, reverse=True), 'report --temporary ranks sites by temporary_allocations')
