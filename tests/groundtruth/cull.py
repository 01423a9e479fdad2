"""Culling of short-lived allocations; see cull.c.  Culled allocations leave
the event stream but stay in the totals, which are the same with and without
culling; only "culled_allocations" tells them apart.

Usage: cull.py MODE PROG, MODE being
  counts  allocations, frees, leaks, temporaries and culled counts, per
          site and in total (and the peak of the run without culling)
  peak    peak_bytes of the culled runs: the interface defines it as the
          maximum of the live bytes over the run, with no exception for
          culling, and the 10 medium blocks are live together for 500 ms"""
from gtlib import marker_line

SRC = 'cull.c'
TOTALS = dict(allocations=1015, frees=1010, allocated_bytes=44775, leaked_allocations=5, leaked_bytes=2775,
              temporary_allocations=1000, unmatched_frees=0)
PEAK = dict(peak_bytes=12775, peak_allocations=15)


def check_peak(t, rep, label):
    p = t.only_process(rep)
    if p is not None:
        t.check_totals(p, label=f'{label} totals', **PEAK)


def check(t, rep, label, culled_churn, culled_medium):
    p = t.only_process(rep)
    if p is None:
        return
    t.check_totals(p, label=f'{label} totals', culled_allocations=culled_churn + culled_medium, **TOTALS)
    t.eq(p.get('lost_events'), 0, f'{label}: lost_events')
    t.check_sites_sum_to_totals(p, label)
    t.eq(len(p.get('sites', [])), 3, f'{label}: number of sites')
    for fn, want in (
        ('leak5', dict(allocations=5, allocated_bytes=2775, frees=0, leaked_allocations=5, leaked_bytes=2775,
                       temporary_allocations=0, culled_allocations=0, peak_bytes=2775)),
        ('churn', dict(allocations=1000, allocated_bytes=32000, frees=1000, leaked_allocations=0,
                       temporary_allocations=1000, culled_allocations=culled_churn, peak_bytes=0)),
        ('medium', dict(allocations=10, allocated_bytes=10000, frees=10, leaked_allocations=0,
                        temporary_allocations=0, culled_allocations=culled_medium)),
    ):
        s = t.site(p, fn)
        t.check_site(s, f'{label} {fn}', allocator='malloc', **want)
        t.check_frames(s, f'{label} {fn}', [(fn, SRC, marker_line(SRC, 'site:' + fn)), ('main', SRC, None)])


def run(t, mode, prog):
    runs = []
    rec, _ = t.record([prog], out=t.path('plain.mtrace'))
    rep = t.report(rec)
    check(t, rep, 'no culling', 0, 0)
    check_peak(t, rep, 'no culling')
    rec, _ = t.record([prog], opts=['--cull-temporary=100'], out=t.path('cull100.mtrace'))
    runs.append(('--cull-temporary=100', t.report(rec), 1000, 0))
    rec, _ = t.record([prog], opts=['--cull-temporary'], out=t.path('culldefault.mtrace'))
    runs.append(('--cull-temporary (10 s)', t.report(rec), 1000, 10))

    # the shim alone, configured as bytehound is
    out = t.path('shim-cull.mtrace')
    rc, so, se = t.run([prog], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': out,
                                    'MEMTRACE_CULL_TEMPORARY_ALLOCATIONS': '1',
                                    'MEMTRACE_TEMPORARY_ALLOCATION_LIFETIME_THRESHOLD': '100'})
    t.eq(rc, 0, f'standalone shim with culling: exit status (stderr {se.strip()[-300:]!r})')
    runs.append(('standalone MEMTRACE_CULL_TEMPORARY_ALLOCATIONS=1, threshold 100', t.report(out), 1000, 0))

    for label, rep, churn, medium in runs:
        if mode == 'peak':
            check_peak(t, rep, label)
        else:
            check(t, rep, label, churn, medium)
