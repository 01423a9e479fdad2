"""Children made by vfork + exec and posix_spawn, with and without
--follow-forks; see spawn.c.

Usage: spawn.py MODE PROG, MODE being 'nofollow' or 'follow'."""
import os

from gtlib import marker_line

SRC = 'spawn.c'


def run(t, mode, prog):
    follow = mode == 'follow'
    rep, pids = t.record_forking(prog, follow, ('parent', 'vforked', 'spawned'))
    if rep is None:
        return
    procs = t.processes(rep, 3 if follow else 1)
    p = t.process_with_pid(rep, pids['parent'])
    if p is not None:
        t.eq(p.get('main'), True, 'parent: the main entry')
        t.check_totals(p, label='parent totals', allocations=4, frees=0, allocated_bytes=5000,
                       leaked_allocations=4, leaked_bytes=5000, temporary_allocations=0, unmatched_frees=0)
        t.check_no_loss(p, 'parent')
        t.eq(sorted(t.fn(s) for s in p.get('sites', [])), ['parent_after', 'parent_alloc'], 'parent: sites')
        t.eq(p.get('exit_status'), 0, 'parent: exit_status')
    if not follow:
        return
    for name, fn, totals, status in (
            ('vforked', 'vforked_alloc', dict(allocations=4, frees=0, allocated_bytes=12000,
                                              leaked_allocations=4, leaked_bytes=12000), 4),
            ('spawned', 'spawned_alloc', dict(allocations=6, frees=2, allocated_bytes=3000,
                                              leaked_allocations=4, leaked_bytes=2000), 6)):
        c = t.process_with_pid(rep, pids[name])
        if c is None:
            continue
        t.eq(c.get('ppid'), pids['parent'], f'{name}: ppid')
        t.eq(c.get('name'), os.path.basename(prog), f'{name}: name')
        t.check_totals(c, label=f'{name} totals', temporary_allocations=0, unmatched_frees=0, **totals)
        t.check_no_loss(c, name)
        s = t.site(c, fn)
        t.check_frames(s, f'{name} {fn}', [(fn, SRC, marker_line(SRC, 'site:' + fn)), ('main', SRC, None)])
        t.eq(c.get('exit_status'), status, f'{name}: exit_status')
        t.eq(c.get('main'), False, f'{name}: not the main entry')
    t.eq([q.get('pid') for q in procs], [pids['parent'], pids['vforked'], pids['spawned']],
         'entries in start order')
