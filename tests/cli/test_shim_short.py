"""cli-shim-short: the standalone shim asked to serve (MEMTRACE_ENABLE_SERVER)
a program that ends before its server starts (20 ms in), here
`sh -c 'exit 7'`.

It used to end in silence: no server, no word.  It must say, in one line
on standard error, that the recording was not served and that
MEMTRACE_SERVER_WAIT makes it wait for a gatherer (nothing with
MEMTRACE_LOG=off); its file must say the process exited with status 7 (a
standalone recording used to say "still running" whatever the exit).
A setting that would have kept the server from starting (a bad
MEMTRACE_LISTEN) is named instead, as it is in a longer program.  With
MEMTRACE_SERVER_WAIT the same program serves instead.

  test_shim_short.py
"""
import os
import shutil

import gtlib
from gtlib import stderr_lines

t = gtlib.Case('cli-shim-short')
sh = shutil.which('sh')
if not t.shim or not os.path.exists(t.shim):
    t.fail(f'MEMTRACE_SHIM is not the shim ({t.shim!r})')
    t.finish()


def run(name, extra):
    out = t.path(name)
    env = {'LD_PRELOAD': t.shim, 'MEMTRACE_ENABLE_SERVER': '1', 'MEMTRACE_OUTPUT': out,
           'MEMTRACE_LISTEN': '127.0.0.1:0', **extra}
    rc, so, se = t.run([sh, '-c', 'exit 7'], env=env, timeout=30)
    t.eq(rc, 7, f'{name}: the program\'s own status')
    return out, stderr_lines(se)


out, lines = run('short.mtrace', {})
t.eq(len(lines), 1, f'served, too short for the server: one line on stderr ({lines})')
if lines:
    t.check(lines[0].startswith('memtrace[') and 'not served' in lines[0] and
            'MEMTRACE_SERVER_WAIT' in lines[0], f'the line says it was not served, and what to do: {lines[0]!r}')
rep = t.report(out)
p = t.only_process(rep) if rep else None
if p:
    t.eq(p.get('exit_status'), 7, 'the standalone recording says the process exited with status 7')

out, lines = run('quiet.mtrace', {'MEMTRACE_LOG': 'off'})
t.eq(lines, [], 'MEMTRACE_LOG=off: nothing on stderr')

out, lines = run('badlisten.mtrace', {'MEMTRACE_LISTEN': 'no:such:address'})
t.check(len(lines) == 1 and 'MEMTRACE_LISTEN' in lines[0] and 'no:such:address' in lines[0],
        f'a bad MEMTRACE_LISTEN is named, short program or not ({lines})')

out, lines = run('waited.mtrace', {'MEMTRACE_SERVER_WAIT': '1'})
t.check(any('streaming' in ln for ln in lines) and not any('not served' in ln for ln in lines),
        f'with MEMTRACE_SERVER_WAIT it serves, waiting for a gatherer ({lines})')

t.finish()
