"""cli-shim-env: `memtrace record` with MEMTRACE_SHIM naming something that
is not the shim.

  test_shim_env.py A_SHARED_LIBRARY (any library but the shim: gt-dl)

  - a missing file, a directory, a program, a text file: exit 125 before
    the command runs, one line naming MEMTRACE_SHIM=PATH and what is wrong
    (a missing one was "cannot find libmemtrace-preload.so ... set
    MEMTRACE_SHIM"; the others ran the command untraced, exit 0);
  - a shared library that is not the shim: the command runs, untraced, and
    record exits 125 with one line saying no process was traced and the
    recording holds nothing (it exited 0 with an empty recording, and a
    --fail-on-leak gate passed).
"""
import os
import sys

import gtlib
from gtlib import stderr_lines

t = gtlib.Case('cli-shim-env')
lib = sys.argv[1]
sh = '/bin/sh'


def record(shim, label, ran_expected, *mentions, opts=()):
    marker = t.path('ran')
    if os.path.exists(marker):
        os.unlink(marker)
    out = t.path('rec.mtrace')
    rc, so, se = t.run([t.memtrace, 'record', '-q', *opts, '-o', out, '--', sh, '-c', f': > {marker}'],
                       env={'MEMTRACE_SHIM': shim})
    t.eq(rc, 125, f'{label}: exit status')
    lines = [ln for ln in stderr_lines(se) if ln.startswith('memtrace')]
    t.eq(len(lines), 1, f'{label}: one line from memtrace ({lines})')
    if lines:
        t.check(lines[0].startswith('memtrace: error:'), f'{label}: an error: {lines[0]!r}')
        for m in mentions:
            t.check(m in lines[0], f'{label}: the line says {m!r}: {lines[0]!r}')
    t.eq(os.path.exists(marker), ran_expected, f'{label}: the command ran')


text = t.path('notes.txt')
with open(text, 'w') as f:
    f.write('not a library\n')
record(t.path('missing.so'), 'MEMTRACE_SHIM missing', False, 'MEMTRACE_SHIM=' + t.path('missing.so'),
       'No such file')
record(t.tmp, 'MEMTRACE_SHIM a directory', False, 'MEMTRACE_SHIM=' + t.tmp, 'not a regular file')
record(os.path.realpath(sys.executable), 'MEMTRACE_SHIM a program', False, 'MEMTRACE_SHIM=', 'a program')
record(text, 'MEMTRACE_SHIM a text file', False, 'MEMTRACE_SHIM=' + text, 'not an ELF file')
record(lib, 'MEMTRACE_SHIM another library', True, 'no process of', 'was traced', 'holds nothing')
record(lib, 'MEMTRACE_SHIM another library, --fail-on-leak', True, 'no process of',
       opts=('--fail-on-leak',))

t.finish()
