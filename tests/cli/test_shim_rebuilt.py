"""cli-shim-rebuilt: reporting a recording after the shim that made it was
rebuilt (its build-id changed), as happens to every recording after an
upgrade of memtrace.

  test_shim_rebuilt.py GT_PEAK

The shim's frames are left out of every stack by their module, so the
report must not warn that the shim's "build-id differs from the
recording" (it did, on stderr and in the JSON warnings), and its figures
must be those of the report made before (peak.c: 14 allocations, 9
frees, 54,000 bytes in 5 blocks leaked).  A program rebuilt since is still
news: its warning stays.
"""
import os
import shutil
import sys

import gtlib
from gtlib import stderr_lines

t = gtlib.Case('cli-shim-rebuilt')
NOTE = b'\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00'  # a 20-byte GNU build-id


def new_build_id(path):
    """Changes the first byte of PATH's GNU build-id; False when it has none."""
    data = bytearray(open(path, 'rb').read())
    at = data.find(NOTE)
    if at < 0:
        return False
    data[at + len(NOTE)] ^= 0xff
    with open(path, 'wb') as f:
        f.write(data)
    return True


shim = t.path('libmemtrace-preload.so')
shutil.copy(t.shim, shim)
prog = t.path('gt-peak')
shutil.copy(sys.argv[1], prog)
rec, _ = t.record([prog], env={'MEMTRACE_SHIM': shim})
before = t.report(rec)
p0 = t.only_process(before) if before else None
if p0:
    t.check_totals(p0, 'before', allocations=14, frees=9, leaked_allocations=5, leaked_bytes=54000)

if t.check(new_build_id(shim), 'the shim has a GNU build-id note to change'):
    rc, so, se = t.run([t.memtrace, 'report', rec])
    t.eq(rc, 0, 'report after the shim changed: exit status')
    t.eq([ln for ln in stderr_lines(se) if 'libmemtrace-preload' in ln], [],
         'report after the shim changed: no warning about the shim')
    after = t.report(rec)
    p1 = t.only_process(after) if after else None
    if p0 and p1:
        t.eq([w for w in p1.get('warnings', []) if 'libmemtrace-preload' in w], [],
             'JSON warnings: none about the shim')
        t.eq(p1['totals'], p0['totals'], 'the totals of the report made before')
        t.eq([s['frames'] for s in p1['sites']], [s['frames'] for s in p0['sites']],
             'the sites\' frames of the report made before')

if t.check(new_build_id(prog), 'the program has a GNU build-id note to change'):
    rc, so, se = t.run([t.memtrace, 'report', rec])
    t.check(any(prog in ln and 'build-id differs' in ln for ln in stderr_lines(se)),
            f'a program rebuilt since is still warned about ({stderr_lines(se)})')

t.finish()
