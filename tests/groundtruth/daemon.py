"""A daemon's start under memtrace; see daemon.c.

Usage: daemon.py MODE PROG, MODE one of
  record       memtrace record: behaves as natively, the parent's figures exact
  follow       memtrace record -f: the child's figures exact too
  shim         the standalone shim, following forks: one file per process,
               written although the program closed the shim's descriptors
  nofile       -f, a child whose descriptor limit is 3: traced all the same,
               and seeing the limit it set
  nofile-hard  -f, a child whose hard limit is 3 too: not traced, and stderr
               says so naming it"""
import os
import re

from gtlib import marker_line, parse_kv

SRC = 'daemon.c'
FILES = ('parent.txt', 'spare.txt', 'child.txt')


def contents(d):
    out = {}
    for f in FILES:
        p = os.path.join(d, f)
        out[f] = open(p).read() if os.path.exists(p) else None
    return out


def result(t, d, label):
    p = os.path.join(d, 'result.txt')
    if not t.check(os.path.exists(p), f'{label}: the program wrote {p}'):
        return {}
    return parse_kv(open(p).read())


def check_parent(t, p, prog, label):
    if p is None:
        return
    t.check_no_loss(p, label)
    for fn, n, size in (('before_close', 10, 100), ('after_close', 20, 200)):
        s = t.site(p, fn)
        t.check_site(s, f'{label} {fn}', allocator='malloc', allocations=n, allocated_bytes=n * size, frees=0,
                     leaked_allocations=n, leaked_bytes=n * size)
        t.check_frames(s, f'{label} {fn}', [(fn, SRC, marker_line(SRC, 'site:' + fn)), ('main', SRC, None)])
    t.check_totals(p, label=f'{label} totals', extra=t.foreign_sites(p, prog), allocations=30, frees=0,
                   leaked_allocations=30, leaked_bytes=10 * 100 + 20 * 200)
    t.eq(t.sites_of(p, 'child_work'), [], f'{label}: the child\'s allocations in the parent\'s entry')


def check_child(t, c, prog, label):
    if c is None:
        return
    t.check_no_loss(c, label)
    s = t.site(c, 'child_work')
    t.check_site(s, f'{label} child_work', allocator='malloc', allocations=30, allocated_bytes=9000, frees=5,
                 leaked_allocations=25, leaked_bytes=7500)
    t.check_totals(c, label=f'{label} totals', extra=t.foreign_sites(c, prog), allocations=30, frees=5,
                   leaked_allocations=25)


def run_nofile(t, mode, prog):
    rec = t.path('rec.mtrace')
    rc, so, se = t.run([t.memtrace, 'record', '-f', '-o', rec, '--', prog, t.tmp, mode])
    t.eq(rc, 0, f'{mode}: exit status (stderr {se.strip()[-300:]!r})')
    kv = parse_kv(so)
    t.eq(kv.get('status'), 0, f'{mode}: the child saw the limit it set and open() failing as without memtrace')
    rep = t.report(rec)
    if rep is None or 'child' not in kv:
        return
    said = [l for l in se.splitlines() if re.match(rf'memtrace\[{kv["child"]}\]: not traced: ', l)]
    if mode == 'nofile':
        t.eq(said, [], f'{mode}: no "not traced" line')
        t.processes(rep, 2)
        check_child(t, t.process_with_pid(rep, kv['child']), prog, 'child (limit 3)')
    else:
        t.eq(len(said), 1, f'{mode}: one line on stderr says the child (pid {kv["child"]}) is not traced '
             f'(stderr {se!r})')
        t.eq([p.get('pid') for p in t.processes(rep)], [kv['parent']], f'{mode}: only the parent recorded')


def run(t, mode, prog):
    if mode.startswith('nofile'):
        run_nofile(t, mode, prog)
        return
    native = t.path('native')
    os.mkdir(native)
    rc, _, _ = t.run([prog, native])
    t.eq(rc, 0, 'exit status without memtrace')
    want = contents(native)
    d = t.path('traced')
    os.mkdir(d)
    if mode == 'shim':
        rc, so, se = t.run([prog, d], env={'LD_PRELOAD': t.shim, 'MEMTRACE_FOLLOW_FORKS': '1',
                                           'MEMTRACE_OUTPUT': os.path.join(t.tmp, 'out.%p.mtrace')})
        t.eq(rc, 0, f'exit status under the shim (stderr {se.strip()[-300:]!r})')
    else:
        t.record([prog, d], opts=['-f'] if mode == 'follow' else [])
    t.eq(contents(d), want, 'the files the program wrote, as without memtrace')
    kv = result(t, d, mode)
    t.eq(kv.get('status'), 0, 'the child\'s exit status')
    if 'parent' not in kv:
        return
    if mode == 'shim':
        for who, check in (('parent', check_parent), ('child', check_child)):
            f = t.path(f'out.{kv[who]}.mtrace')
            if t.check(os.path.exists(f), f'the {who}\'s recording {f} exists'):
                check(t, t.only_process(t.report(f)), prog, who)
        return
    rep = t.report(t.path('rec.mtrace'))
    if rep is None:
        return
    if mode == 'record':
        p = t.only_process(rep)
        t.eq(p and p.get('pid'), kv['parent'], 'pid of the only process')
        check_parent(t, p, prog, 'parent')
        return
    t.processes(rep, 2)
    check_parent(t, t.process_with_pid(rep, kv['parent']), prog, 'parent')
    check_child(t, t.process_with_pid(rep, kv['child']), prog, 'child')
