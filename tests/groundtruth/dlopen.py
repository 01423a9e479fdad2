"""Allocations from a dlopen'd library; see dlopen.c and gtdl.c.

Usage: dlopen.py PROG LIB [close|settle|alias]"""
import json
import os

import bpflib
from gtlib import marker_line

SRC = 'dlopen.c'
LIBSRC = 'gtdl.c'


def run(t, prog, lib, *mode):
    if mode == ('alias',):
        run_alias(t, prog, lib)
        return
    rec, _ = t.record([prog, lib, *mode])
    rep = t.report(rec)
    p = t.only_process(rep)
    if p is None:
        return
    t.check_no_loss(p)
    libpath = os.path.realpath(lib)
    exe = os.path.realpath(prog)
    s = t.site(p, 'gtdl_leak')
    t.check_site(s, 'gtdl_leak', allocator='malloc', allocations=3, allocated_bytes=3 * 777, frees=0,
                 leaked_allocations=3, leaked_bytes=3 * 777, temporary_allocations=0)
    t.check_frames(s, 'gtdl_leak', [('gtdl_leak', LIBSRC, marker_line(LIBSRC, 'site:gtdl_leak')),
                                    ('main', SRC, marker_line(SRC, 'call:gtdl_leak'))])
    if s:
        t.eq([f.get('module') for f in s['frames'][:2]], [libpath, exe], 'gtdl_leak: modules of frames[0..1]')
    s = t.site(p, 'gtdl_temp')
    t.check_site(s, 'gtdl_temp', allocator='malloc', allocations=1, allocated_bytes=888, frees=1,
                 leaked_allocations=0, temporary_allocations=1)
    t.check_frames(s, 'gtdl_temp', [('gtdl_temp', LIBSRC, marker_line(LIBSRC, 'site:gtdl_temp')),
                                    ('main', SRC, marker_line(SRC, 'call:gtdl_temp'))])
    if s:
        t.eq(s['frames'][0].get('module'), libpath, 'gtdl_temp: module of frames[0]')
    s = t.site(p, 'main_after')
    t.check_site(s, 'main_after', allocator='malloc', allocations=1, allocated_bytes=123, leaked_allocations=1)
    t.check_frames(s, 'main_after', [('main_after', SRC, marker_line(SRC, 'site:main_after')),
                                     ('main', SRC, marker_line(SRC, 'call:main_after'))])

    mine = [x for x in p.get('sites', []) if t.fn(x) in ('gtdl_leak', 'gtdl_temp')]
    foreign = t.foreign_sites(p, prog, exclude=mine)
    t.check_totals(p, extra=foreign, allocations=5, allocated_bytes=3342, frees=1, leaked_allocations=4,
                   leaked_bytes=2454, temporary_allocations=1)
    t.check_sites_sum_to_totals(p)
    # the shim's frames are in no stack (its dlopen wrapper ran the loader's
    # allocations: they went through it)
    t.eq([(t.fn(x), f.get('function')) for x in p.get('sites', []) for f in x.get('frames') or []
          if 'libmemtrace-preload' in (f.get('module') or '')], [],
         'frames of the shim (libmemtrace-preload.so) in the stacks')
    # the loader's own sites must be the loader's (or the C library's), not
    # unsymbolized frames or the program's
    for x in foreign:
        m = os.path.basename((x.get('frames') or [{}])[0].get('module') or '')
        # (the loader is ld-linux-*.so on x86-64 and ARM, ld.so.1 on MIPS)
        t.check(m.startswith('ld-linux') or m.startswith('ld.so') or m.startswith('libc.so'),
                f'library-internal site in module {m!r}, expected the loader or the C library')


def run_bpf(t, prog, lib, *mode):
    """The bpf axis (gt-dlopen-settle-bpf): the library's table is read when
    the BPF backend sees it mapped, so the stacks through it are whole, up
    to main, as the shim's, and none is cut (stack_no_table)."""
    pb = bpflib.same_as_shim(t, prog, args=(lib, *mode))
    if pb is None:
        return
    for fn in ('gtdl_leak', 'gtdl_temp'):
        t.check_frames(t.site(pb, fn), fn, [(fn, LIBSRC, marker_line(LIBSRC, 'site:' + fn)),
                                            ('main', SRC, marker_line(SRC, 'call:' + fn))])
    # every site, the loader's included, reads as the shim's: `memtrace diff`
    # of the two runs matches them all, with the same counts
    rc, so, se = t.run([t.memtrace, 'diff', '--json', t.path('shim.mtrace'), t.path('bpf.mtrace')],
                       what='memtrace diff')
    if t.check(rc == 0, f'memtrace diff --json: exit status {rc}, stderr {se.strip()[-300:]!r}'):
        moved = [(t.fn(x), x['diff']['base']['allocations'], x['diff']['new']['allocations'])
                 for pr in json.loads(so).get('processes', []) for x in pr.get('sites', [])
                 if x['diff']['base']['allocations'] != x['diff']['new']['allocations']]
        t.eq(moved, [], 'sites whose allocations differ between the shim\'s run and BPF\'s')


def run_alias(t, prog, lib):
    """gt-dlopen-alias: one library under two names (LIB, then a symbolic
    link to it, as the loader names a library through its soname link and
    the BPF backend by the file /proc shows): `memtrace diff` of the two
    runs must match its sites (one site each for gtdl_leak and gtdl_temp,
    the same figures on both sides); it saw new sites and gone ones."""
    link = t.path('libgt-dl-alias.so')
    os.symlink(os.path.realpath(lib), link)
    real, _ = t.record([prog, lib], out=t.path('real.mtrace'))
    alias, _ = t.record([prog, link], out=t.path('alias.mtrace'))
    p = t.only_process(t.report(alias))
    s = t.site(p, 'gtdl_leak') if p else None
    if s:
        t.eq(os.path.basename(s['frames'][0].get('module') or ''), 'libgt-dl-alias.so',
             'the second run names the library by its link (else this test tests nothing)')
    rc, so, se = t.run([t.memtrace, 'diff', '--json', real, alias], what='memtrace diff')
    if not t.check(rc == 0, f'memtrace diff --json: exit status {rc}, stderr {se.strip()[-300:]!r}'):
        return
    sites = [x for pr in json.loads(so).get('processes', []) for x in pr.get('sites', [])]
    for fn, n in (('gtdl_leak', 3), ('gtdl_temp', 1)):
        got = [(x['diff']['base']['allocations'], x['diff']['new']['allocations'])
               for x in sites if (x.get('frames') or [{}])[0].get('function') == fn]
        t.eq(got, [(n, n)], f'diff sites of {fn}: (base, new) allocations')
