"""fork with and without --follow-forks; see fork.c.

Usage: fork.py MODE PROG, MODE being 'nofollow' or 'follow'.  The bpf
axis (nofollow: the BPF backend follows no fork) checks that the child it
did not trace is named all the same, as the shim's recording names it."""
import os

from gtlib import marker_line, parse_kv

SRC = 'fork.c'


def check_parent(t, p, prog, label):
    if p is None:
        return
    t.eq(p.get('exe'), os.path.realpath(prog), f'{label}: exe')
    t.check_totals(p, label=f'{label} totals', allocations=4, frees=0, allocated_bytes=3 * 1111 + 3333,
                   leaked_allocations=4, leaked_bytes=3 * 1111 + 3333, temporary_allocations=0,
                   peak_bytes=3 * 1111 + 3333, unmatched_frees=0)
    t.check_no_loss(p, label)
    t.eq(len(p.get('sites', [])), 2, f'{label}: number of sites')
    for fn, n, size in (('parent_alloc', 3, 1111), ('parent_after', 1, 3333)):
        s = t.site(p, fn)
        t.check_site(s, f'{label} {fn}', allocations=n, allocated_bytes=n * size, leaked_allocations=n)
        t.check_frames(s, f'{label} {fn}', [(fn, SRC, marker_line(SRC, 'site:' + fn)), ('main', SRC, None)])
    t.eq(t.sites_of(p, 'child_alloc') + t.sites_of(p, 'child_temp'), [],
         f'{label}: the child\'s allocations in the parent\'s entry')
    t.eq(p.get('exit_status'), 0, f'{label}: exit_status')


def run(t, mode, prog):
    follow = mode == 'follow'
    rep, pids = t.record_forking(prog, follow)
    if rep is None:
        return
    if not follow:
        p = t.only_process(rep)
        if p is not None:
            t.eq(p.get('pid'), pids['parent'], 'pid of the only process')
            t.eq(p.get('untraced_children'), 1, 'the one child it forked, not traced, is counted')
        check_parent(t, p, prog, 'parent')
        return

    t.processes(rep, 2)
    parent = t.process_with_pid(rep, pids['parent'])
    check_parent(t, parent, prog, 'parent')
    if parent is not None:
        t.eq(parent.get('untraced_children'), 0, 'parent: its child is traced: none untraced')
    c = t.process_with_pid(rep, pids['child'])
    if c is None:
        return
    t.eq(c.get('ppid'), pids['parent'], 'child: ppid')
    t.eq(c.get('exe'), os.path.realpath(prog), 'child: exe')
    t.check_totals(c, label='child totals', allocations=6, frees=1, allocated_bytes=5 * 2222 + 999,
                   leaked_allocations=5, leaked_bytes=5 * 2222, temporary_allocations=1,
                   peak_bytes=5 * 2222 + 999, unmatched_frees=0)
    t.check_no_loss(c, 'child')
    t.eq(len(c.get('sites', [])), 2, 'child: number of sites')
    s = t.site(c, 'child_alloc')
    t.check_site(s, 'child child_alloc', allocations=5, allocated_bytes=5 * 2222, frees=0,
                 leaked_allocations=5, leaked_bytes=5 * 2222, temporary_allocations=0)
    t.check_frames(s, 'child child_alloc',
                   [('child_alloc', SRC, marker_line(SRC, 'site:child_alloc')), ('main', SRC, None)])
    s = t.site(c, 'child_temp')
    t.check_site(s, 'child child_temp', allocations=1, allocated_bytes=999, frees=1, leaked_allocations=0,
                 temporary_allocations=1)
    t.check_frames(s, 'child child_temp',
                   [('child_temp', SRC, marker_line(SRC, 'site:child_temp')), ('main', SRC, None)])
    t.eq(t.sites_of(c, 'parent_alloc') + t.sites_of(c, 'parent_after'), [],
         'child: the parent\'s allocations in the child\'s entry')
    if 'exit_status' in c:
        t.eq(c['exit_status'], 7, 'child: exit_status')
    else:
        t.note('the child\'s entry has no "exit_status" (an extra key, not in the interface): not checked')


def run_bpf(t, mode, prog):
    rec = t.path('rec.mtrace')
    rc, out, se = t.run([t.memtrace, 'record', '--backend=bpf', '-o', rec, '--', prog],
                        what='memtrace record --backend=bpf')
    t.eq(rc, 0, f'memtrace record --backend=bpf: exit status (stderr {se.strip()[-300:]!r})')
    t.check('1 child process not traced' in se,
            f'record says the child was not traced: {se.strip()[-400:]!r}')
    pids = parse_kv(out)
    rep = t.report(rec)
    p = t.only_process(rep) if rep else None
    if p is None or not t.check('parent' in pids, f'the program printed its pids ({out!r})'):
        return
    t.eq(p.get('pid'), pids['parent'], 'pid of the only process')
    t.eq(p.get('untraced_children'), 1, 'the one child it forked, not traced, is counted')
    check_parent(t, p, prog, 'parent (bpf)')
