"""A live-bytes curve with a known maximum; see peak.c."""
from gtlib import marker_line

SRC = 'peak.c'
# the bpf axis (run_case.py --backend=bpf): the same figures as the shim's
BPF = {}

SITES = {
    'many_blocks': dict(allocations=10, allocated_bytes=10000, frees=6, leaked_allocations=4,
                        leaked_bytes=4000, peak_bytes=6000, peak_allocations=6, temporary_allocations=0),
    'site_a': dict(allocations=1, allocated_bytes=100000, frees=1, leaked_allocations=0, leaked_bytes=0,
                   peak_bytes=100000, peak_allocations=1, temporary_allocations=0),
    'site_b': dict(allocations=1, allocated_bytes=50000, frees=0, leaked_allocations=1, leaked_bytes=50000,
                   peak_bytes=50000, peak_allocations=1, temporary_allocations=0),
    'site_c': dict(allocations=1, allocated_bytes=90000, frees=1, leaked_allocations=0, leaked_bytes=0,
                   peak_bytes=0, peak_allocations=0, temporary_allocations=0),
    'site_e': dict(allocations=1, allocated_bytes=11999, frees=1, leaked_allocations=0, leaked_bytes=0,
                   peak_bytes=0, peak_allocations=0, temporary_allocations=0),
}

TOTALS = dict(allocations=14, frees=9, allocated_bytes=261999, peak_bytes=156000, peak_allocations=8,
              leaked_allocations=5, leaked_bytes=54000, temporary_allocations=0, unmatched_frees=0)


def check_recording(t, rep, label):
    check_process(t, t.only_process(rep), label)


def check_process(t, p, label):
    """The figures of gt-peak's entry P (None: already failed)."""
    if p is None:
        return
    t.check_totals(p, label=f'{label} totals', **TOTALS)
    t.check_no_loss(p, label)
    t.check_sites_sum_to_totals(p, label)
    t.eq(sum(s.get('peak_bytes', 0) for s in p.get('sites', [])), 156000,
         f'{label}: sum of the sites\' peak_bytes (what was live at the peak)')
    t.eq(len(p.get('sites', [])), len(SITES), f'{label}: number of sites')
    for fn, want in SITES.items():
        s = t.site(p, fn)
        t.check_site(s, f'{label} {fn}', allocator='malloc', **want)
        t.check_frames(s, f'{label} {fn}', [(fn, SRC, marker_line(SRC, 'site:' + fn)), ('main', SRC, None)])
    # The peak is reached after a 300 ms sleep and held for 300 ms: the
    # figures place it in time, from the start of the process.  Only lower
    # bounds are checked, which load cannot break (a sleep only lasts
    # longer; timestamps may be coarse: a margin of 50 ms).
    pt, dur = p.get('totals', {}).get('peak_time_s'), p.get('duration_s')
    if t.check(isinstance(pt, (int, float)) and isinstance(dur, (int, float)),
               f'{label}: peak_time_s ({pt!r}) and duration_s ({dur!r}) are numbers'):
        t.check(0.25 <= pt, f'{label}: peak_time_s = {pt}, expected about 0.3 s (at least 0.25)')
        t.check(dur - pt >= 0.25, f'{label}: duration_s - peak_time_s = {dur - pt:.3f}, the peak is '
                f'held 300 ms before the process goes on, expected >= 0.25 s')


def run(t, prog):
    rec, _ = t.record([prog])
    check_recording(t, t.report(rec), 'record')
