#!/usr/bin/env python3
"""test_terminal.py - names from the traced program never reach the user's
terminal as escape sequences.

A program's path, its arguments and its symbols are bytes its author chose:
"\\x1b]0;...\\x07" sets the terminal's title, "\\x1b[2J" clears it, and some
terminals answer queries with keystrokes.  The ground-truth program argv[1]
is copied to a name holding ESC and recorded with an OSC sequence and a C1
control (U+009B, CSI) among its arguments, and once more through env, whose
image ends with an exec of that name; the text views (summary, leak tree,
--peak, the images) and the record summary on stderr must show them escaped
(\\xNN), and the JSON report must keep them exactly, as data.
"""
import json
import os
import shutil
import sys

import gtlib

t = gtlib.Case('security-terminal')
name = t.path('ev\x1b[31mil')
shutil.copy(sys.argv[1], name)
osc = 'title\x1b]0;pwned\x07'
c1 = 'csi\u009b2J'
argv = [name, osc, c1]
rec = t.path('rec.mtrace')
rc, so, se = t.run([t.memtrace, 'record', '-o', rec, '--', *argv], what='memtrace record')
t.eq(rc, 0, 'memtrace record: exit status')
CONTROL = [chr(c) for c in range(0x20) if c not in (0x09, 0x0a)] + ['\x7f'] + \
    [chr(c) for c in range(0x80, 0xa0)]


def clean(text, what):
    bad = sorted({hex(ord(ch)) for ch in text if ch in CONTROL})
    t.check(not bad, f'{what}: no control characters reach the terminal (found {bad})')


clean(se, 'record summary on stderr')
for args in ([], ['--leaks'], ['--peak'], ['--frequency']):
    rc, so, se = t.run([t.memtrace, 'report', *args, rec], what='memtrace report')
    t.eq(rc, 0, f'report {" ".join(args)}: exit status')
    clean(so + se, f'report {" ".join(args)}')
    if not args:
        t.check('ev\\x1b[31mil' in so, f'report: the program name shown escaped ({so[:160]!r})')
        t.check('title\\x1b]0;pwned\\x07' in so, 'report: the OSC argument shown escaped')
        t.check('csi\\xc2\\x9b2J' in so, 'report: the C1 argument shown escaped, byte by byte')
# run through env: env's image ends with an exec of that name, which its
# header (--all-images) and its line under the main image's report say
chain = t.path('chain.mtrace')
rc, so, se = t.run([t.memtrace, 'record', '-o', chain, '--', 'env', *argv], what='memtrace record')
t.eq(rc, 0, 'memtrace record -- env: exit status')
clean(se, 'record summary of env on stderr')
for args in ([], ['--all-images']):
    rc, so, se = t.run([t.memtrace, 'report', *args, chain], what='memtrace report')
    t.eq(rc, 0, f'report {" ".join(args)} of env: exit status')
    clean(so + se, f'report {" ".join(args)} of env')
    t.check('replaced by exec of ' in so and 'ev\\x1b[31mil' in so.split('replaced by exec of ')[1],
            f'report {" ".join(args)} of env: the exec\'s path shown escaped')
rc, so, _ = t.run([t.memtrace, 'report', '--json', rec], what='memtrace report --json')
doc = json.loads(so) if rc == 0 else {}
p = (doc.get('processes') or [{}])[0]
t.eq(p.get('exe'), os.path.realpath(name), 'JSON: exe exactly as it is')
t.eq(p.get('argv', [])[1:], [osc, c1], 'JSON: argv exactly as it is')
t.finish()
