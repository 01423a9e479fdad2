"""record --embed-binaries: a recording of cxx.cpp stays symbolized after
its binary is deleted or replaced by another program, where one made
without it loses the program's function names (and says why).

The program runs from a copy in the case's directory, so that deleting
it touches nothing else; the figures are cxx.py's."""
import os
import shutil

from gtlib import marker_line

SRC = 'cxx.cpp'
LEAF = 'gt::make_ints()'


def run(t, prog, other):
    exe = t.path('gt-cxx')
    shutil.copy(prog, exe)
    plain, _ = t.record([exe], out=t.path('plain.mtrace'))
    rc, _, se = t.run([t.memtrace, 'record', '--embed-binaries', '-o', t.path('embed.mtrace'),
                       '--', exe], what='record --embed-binaries')
    t.eq(rc, 0, f'record --embed-binaries: exit status (stderr {se[-300:]!r})')
    t.check('embedded' in se and 'binar' in se, f'record says what it embedded (stderr {se[-300:]!r})')
    embed = t.path('embed.mtrace')
    if None in t.check_embedded(plain, embed, [prog]):
        return

    for how in ('deleted', 'replaced'):
        if how == 'deleted':
            os.unlink(exe)
        else:
            shutil.copy(other, exe)  # another program at the same path: another build-id
        p = t.only_process(t.report(embed))
        if p is None:
            return
        s = t.site(p, LEAF)
        t.check_site(s, f'{LEAF} ({how}, embedded)', allocations=1, allocated_bytes=4000,
                     leaked_bytes=4000)
        t.check_frames(s, f'{LEAF} ({how}, embedded)',
                       [(LEAF, SRC, marker_line(SRC, 'site:make_ints')), ('main', SRC, None)])
        t.check_not_warned(p, exe, f'the program ({how}, embedded)')
        t.check_unsymbolized(t.only_process(t.report(plain)), exe, {LEAF, 'main'},
                             'build-id differs' if how == 'replaced' else 'cannot open',
                             f'the {how} program')
