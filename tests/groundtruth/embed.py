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


def names(p):
    """The function names of every frame of every site."""
    return {f.get('function') for s in p.get('sites', []) for f in s.get('frames', [])}


def run(t, prog, other):
    exe = t.path('gt-cxx')
    shutil.copy(prog, exe)
    plain, _ = t.record([exe], out=t.path('plain.mtrace'))
    rc, _, se = t.run([t.memtrace, 'record', '--embed-binaries', '-o', t.path('embed.mtrace'),
                       '--', exe], what='record --embed-binaries')
    t.eq(rc, 0, f'record --embed-binaries: exit status (stderr {se[-300:]!r})')
    t.check('embedded' in se and 'binar' in se, f'record says what it embedded (stderr {se[-300:]!r})')
    embed = t.path('embed.mtrace')
    t.check(os.path.getsize(embed) > os.path.getsize(plain) + os.path.getsize(prog) // 4,
            f'the recording holds the binaries ({os.path.getsize(embed)} B against '
            f'{os.path.getsize(plain)} B without them)')

    both = {}
    for label, rec in (('present', plain), ('embedded', embed)):
        p = t.only_process(t.report(rec))
        if p is None:
            return
        both[label] = p
    # the binaries add no process and change no figure
    t.eq(both['embedded'].get('totals'), both['present'].get('totals'),
         'totals with and without embedded binaries')

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
        t.eq([w for w in p.get('warnings', []) if w.startswith(exe)], [],
             f'no warning about the program ({how}, embedded)')

        q = t.only_process(t.report(plain))
        if q is None:
            return
        t.check(LEAF not in names(q) and 'main' not in names(q),
                f'without embedded binaries the {how} program names no function of its own')
        want = 'build-id differs' if how == 'replaced' else 'cannot open'
        t.check(any(w.startswith(exe) and want in w for w in q.get('warnings', [])),
                f'without embedded binaries a warning names the {how} program '
                f'({q.get("warnings")!r})')
