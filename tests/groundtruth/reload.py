"""A library dlopened where a dlclosed one had been; see reload.c.

Usage: reload.py PROG LIBA LIBB"""
import os

from gtlib import marker_line

SRC, LIBSRC = 'reload.c', 'reloadlib.c'


def check(t, p, label, liba, libb):
    if p is None:
        return
    for fn, lib, n, size in (('reload_a', liba, 2, 1111), ('reload_b', libb, 3, 2222)):
        s = t.site(p, fn)
        t.check_site(s, f'{label} {fn}', allocations=n, allocated_bytes=n * size, leaked_bytes=n * size)
        t.check_frames(s, f'{label} {fn}', [(fn, LIBSRC, marker_line(LIBSRC, 'site:reload')),
                                            ('load_and_call', SRC, marker_line(SRC, 'call:reload')),
                                            ('main', SRC, marker_line(SRC, 'call:load'))])
        if s:
            t.eq(s['frames'][0].get('module'), os.path.realpath(lib), f'{label} {fn}: module of frames[0]')
    # the libraries' own sites: these two, each named from its library
    libs = {os.path.realpath(liba), os.path.realpath(libb)}
    own = sorted((s['frames'][0].get('function'), s.get('allocations'), s.get('allocated_bytes'))
                 for s in p.get('sites', []) if s.get('frames') and s['frames'][0].get('module') in libs)
    t.eq(own, [('reload_a', 2, 2222), ('reload_b', 3, 6666)], f'{label}: the sites of the two libraries')
    # the same addresses, told apart: frames of the two stacks
    a, b = t.site(p, 'reload_a'), t.site(p, 'reload_b')
    if a and b:
        t.eq([f.get('offset') for f in a['frames']], [f.get('offset') for f in b['frames']],
             f'{label}: the two stacks are the same code offsets')


def run(t, prog, liba, libb):
    rec, _ = t.record([prog, liba, libb])
    check(t, t.only_process(t.report(rec)), 'record', liba, libb)
    own = t.path('shim.mtrace')
    rc, so, se = t.run([prog, liba, libb], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': own})
    if t.eq(rc, 0, f'standalone run (stderr {se.strip()[-300:]!r})'):
        check(t, t.only_process(t.report(own)), 'shim', liba, libb)
