#!/usr/bin/env python3
"""leakkinds_valgrind.py PROG N [ARGS...] - the kinds PROG (gt-leakkinds,
gt-leakcxx) says its blocks are (the ones the leak scan must find:
test-procscan, leakkinds.py) are the kinds valgrind's memcheck finds for
them, with the heuristics off; N of its blocks are lost one way or another.

Its definitely, indirectly and possibly lost bytes and blocks are the
program's own (the C runtime loses nothing); memcheck's still reachable
counts the runtime's blocks too (stdio's buffer), so it is at least the
program's; a thread's TLS block, which memcheck calls possibly lost once the
thread is gone, is the runtime's and left out.  The register-held block is not made here: at an exit
its thread is gone, to memcheck as to a scan at the exit.
"""
import re
import shutil
import subprocess
import sys

import gtlib

t = gtlib.Case('leakkinds-valgrind ' + sys.argv[1].rsplit('/', 1)[-1])
prog, nlost, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
vg = shutil.which('valgrind')
if not t.check(vg, 'valgrind is installed (tools/setup.sh installs it)'):
    t.finish()
p = subprocess.run([vg, '--leak-check=full', '--show-leak-kinds=all', '--leak-check-heuristics=none',
                    prog, *args], capture_output=True, text=True, timeout=300)
t.eq(p.returncode, 0, f'valgrind exit status (stderr {p.stderr[-400:]!r})')
want = {k: [0, 0] for k in ('definite', 'indirect', 'possible', 'reachable')}
for m in re.finditer(r'^block [0-9a-f]+ (\d+) (\w+)$', p.stdout, re.M):
    want[m.group(2)][0] += int(m.group(1))
    want[m.group(2)][1] += 1
t.eq(want['definite'][1] + want['indirect'][1] + want['possible'][1], nlost,
     f'{prog}: {nlost} blocks lost one way or another')
# memcheck's loss records, less the runtime's: the thread's TLS block
# (_dl_allocate_tls), which a dead thread's descriptor points into
KIND = {'definitely lost': 'definite', 'indirectly lost': 'indirect', 'possibly lost': 'possible',
        'still reachable': 'reachable'}
got = {k: [0, 0] for k in KIND.values()}
records = re.split(r'^==\d+== $', p.stderr, flags=re.M)
runtime = 0
for rec in records:
    m = re.search(r'([\d,]+) (?:\(([\d,]+) direct, ([\d,]+) indirect\) )?bytes in ([\d,]+) blocks are '
                  r'(definitely lost|indirectly lost|possibly lost|still reachable) in loss record', rec)
    if not m:
        continue
    if '_dl_allocate_tls' in rec:
        runtime += 1
        continue
    direct = m.group(2) or m.group(1)
    got[KIND[m.group(5)]][0] += int(direct.replace(',', ''))
    got[KIND[m.group(5)]][1] += int(m.group(4).replace(',', ''))
t.note(f'{runtime} loss records of the runtime\'s thread blocks left out')
t.check(re.search(r'definitely lost: [\d,]+ bytes', p.stderr), 'memcheck printed its leak summary')
for key in ('definite', 'indirect', 'possible'):
    t.eq(got.get(key), want[key], f'memcheck {key}: [bytes, blocks]')
r = got['reachable']
t.check(r[0] >= want['reachable'][0] and r[1] >= want['reachable'][1],
        f'memcheck still reachable {r} holds the program\'s {want["reachable"]}')
t.finish()
