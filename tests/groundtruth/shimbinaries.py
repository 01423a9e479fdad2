"""MEMTRACE_WRITE_BINARIES_TO_OUTPUT: the standalone shim (LD_PRELOAD, no
`memtrace record`) puts the files the process mapped into its own
recording, as record --embed-binaries does, so that a recording of
dlopen.c stays symbolized after the program and its library are deleted,
where one made without it loses their function names (and says why).

The program and its library run from copies in the case's directory, so
that deleting them touches nothing else; the library is dlclose'd before
the program ends, so it is no longer mapped at exit when the shim writes
the binaries: it must still go in.  The figures are dlopen.py's."""
import os
import shutil

from gtlib import marker_line

SRC = 'dlopen.c'
LIBSRC = 'gtdl.c'


def run(t, prog, lib):
    d = t.path('bin')
    os.makedirs(d)
    exe, so = os.path.join(d, 'gt-dlopen'), os.path.join(d, 'libgt-dl.so')
    shutil.copy(prog, exe)
    shutil.copy(lib, so)
    recs = {}
    for label, embed in (('plain', '0'), ('embedded', '1')):
        out = t.path(label + '.mtrace')
        rc, _, se = t.run([exe, so, 'close'], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': out,
                                                   'MEMTRACE_WRITE_BINARIES_TO_OUTPUT': embed,
                                                   'MEMTRACE_LOG': 'info'},
                          what=f'gt-dlopen under the shim ({label})')
        t.eq(rc, 0, f'{label}: exit status of the program (stderr {se[-300:]!r})')
        recs[label] = out
    plain, embed = recs['plain'], recs['embedded']
    if None in t.check_embedded(plain, embed, [exe, so]):
        return

    shutil.rmtree(d)
    p = t.only_process(t.report(embed))
    if p is None:
        return
    t.check_no_loss(p)
    s = t.site(p, 'gtdl_leak')
    t.check_site(s, 'gtdl_leak (deleted, embedded)', allocations=3, allocated_bytes=3 * 777,
                 leaked_allocations=3, leaked_bytes=3 * 777)
    t.check_frames(s, 'gtdl_leak (deleted, embedded)',
                   [('gtdl_leak', LIBSRC, marker_line(LIBSRC, 'site:gtdl_leak')),
                    ('main', SRC, marker_line(SRC, 'call:gtdl_leak'))])
    s = t.site(p, 'gtdl_temp')
    t.check_site(s, 'gtdl_temp (deleted, embedded)', allocations=1, allocated_bytes=888, frees=1,
                 temporary_allocations=1)
    t.check_frames(s, 'gtdl_temp (deleted, embedded)',
                   [('gtdl_temp', LIBSRC, marker_line(LIBSRC, 'site:gtdl_temp'))])
    s = t.site(p, 'main_after')
    t.check_site(s, 'main_after (deleted, embedded)', allocations=1, allocated_bytes=123,
                 leaked_allocations=1)
    t.check_frames(s, 'main_after (deleted, embedded)',
                   [('main_after', SRC, marker_line(SRC, 'site:main_after')),
                    ('main', SRC, marker_line(SRC, 'call:main_after'))])
    t.check_not_warned(p, d, 'the deleted program or library (embedded)')
    t.check_unsymbolized(t.only_process(t.report(plain)), exe,
                         {'gtdl_leak', 'gtdl_temp', 'main_after', 'main'}, 'cannot open',
                         'the deleted program and library')
