"""A child made by the raw clone3 system call, with and without
--follow-forks; see clone3.c.

Usage: clone3.py MODE PROG, MODE being 'nofollow' or 'follow'."""
import os

from gtlib import marker_line

SRC = 'clone3.c'


def check_one(t, p, prog, label, fn, n, size, frees, status):
    if p is None:
        return
    t.eq(p.get('exe'), os.path.realpath(prog), f'{label}: exe')
    t.check_totals(p, label=f'{label} totals', allocations=n, frees=frees, allocated_bytes=n * size,
                   leaked_allocations=n - frees, leaked_bytes=(n - frees) * size, temporary_allocations=0,
                   peak_bytes=n * size, peak_allocations=n, unmatched_frees=0)
    t.check_no_loss(p, label)
    t.eq(len(p.get('sites', [])), 1, f'{label}: number of sites')
    s = t.site(p, fn)
    t.check_site(s, f'{label} {fn}', allocations=n, allocated_bytes=n * size, frees=frees,
                 leaked_allocations=n - frees)
    t.check_frames(s, f'{label} {fn}', [(fn, SRC, marker_line(SRC, 'site:' + fn)), ('main', SRC, None)])
    t.eq(p.get('exit_status'), status, f'{label}: exit_status')


def run(t, mode, prog):
    follow = mode == 'follow'
    rep, pids = t.record_forking(prog, follow)
    if rep is None:
        return
    procs = t.processes(rep, 2 if follow else 1)
    parent = t.process_with_pid(rep, pids['parent'])
    check_one(t, parent, prog, 'parent', 'parent_alloc', 30000, 100, 10000, 0)
    if parent is not None:
        t.eq(parent.get('main'), True, 'parent: the main entry')
    if not follow:
        return
    child = t.process_with_pid(rep, pids['child'])
    if child is not None:
        t.eq(child.get('ppid'), pids['parent'], 'child: ppid')
        t.eq(child.get('main'), False, 'child: not the main entry')
    check_one(t, child, prog, 'child', 'child_alloc', 20000, 200, 5000, 9)
    t.eq([p.get('pid') for p in procs], [pids['parent'], pids['child']], 'entries in start order')
