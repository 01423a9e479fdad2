"""Allocations before an exec; see exec.c."""
import os

from gtlib import marker_line, parse_kv

SRC = 'exec.c'


def run(t, prog):
    rec, out = t.record([prog], expect_rc=5)
    pid = parse_kv(out).get('pid')
    if not t.check(isinstance(pid, int), f'the program printed its pid ({out!r})'):
        return
    rep = t.report(rec)
    if rep is None:
        return
    procs = t.processes(rep)
    with_before = [p for p in procs if t.sites_of(p, 'before_exec')]
    if not t.eq(len(with_before), 1, 'number of processes with the pre-exec allocations'):
        return
    p = with_before[0]
    t.eq(p.get('pid'), pid, 'pid of the pre-exec process')
    t.eq(p.get('exe'), os.path.realpath(prog), 'exe of the pre-exec process')
    t.check_totals(p, allocations=4, frees=1, allocated_bytes=4 * 4444, leaked_allocations=3,
                   leaked_bytes=3 * 4444, peak_bytes=4 * 4444, temporary_allocations=0, unmatched_frees=0)
    t.check_no_loss(p)
    t.eq(len(p.get('sites', [])), 1, 'number of sites of the pre-exec image')
    s = t.site(p, 'before_exec')
    t.check_site(s, 'before_exec', allocator='malloc', allocations=4, frees=1, leaked_allocations=3,
                 leaked_bytes=3 * 4444)
    t.check_frames(s, 'before_exec', [('before_exec', SRC, marker_line(SRC, 'site:before_exec')),
                                      ('main', SRC, None)])
    after = [q for q in procs if t.sites_of(q, 'after_exec')]
    t.note(f'{len(procs)} process entries; the image after the exec was '
           f'{"traced" if after else "not traced"} (without --follow-forks; not part of the contract)')
