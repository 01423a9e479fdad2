#!/usr/bin/env python3
"""nobpf.py DYNAMIC STATIC - memtrace where the BPF backend cannot run: a
cross build under qemu-user (no bpf() system call), or a build without
BPF (armhf, mips64el: no BPF programs for them).  Run by tools/cross.sh
ARCH --test (suite cross); the checks hold wherever BPF is unavailable.

  - `memtrace -p PID`, `top` and `sweep` fail with exit status 1 and one
    line naming what is missing and suggesting `memtrace record`;
  - `memtrace record -v` of a dynamically linked program (DYNAMIC) says
    the shim records it and that BPF is unavailable, with why, and records
    it (its figures are gt-peak's: see peak.c);
  - `memtrace record` of a static program (STATIC), which auto would give
    to BPF, warns in one line that BPF is unavailable and why.
"""
import os
import subprocess
import sys

import gtlib

# what the one line says is missing, whichever way BPF is missing here
MISSING = ('bpf() system call', 'built without the BPF backend', 'no uprobes', 'no BTF')


def says_missing(line):
    return any(m in line for m in MISSING)


def main():
    dynamic, static = sys.argv[1:3]
    t = gtlib.Case('nobpf')
    sleeper = subprocess.Popen(['sleep', '60'])
    try:
        for what, argv in (('memtrace -p', ['-p', str(sleeper.pid), '--duration', '1']),
                           ('memtrace top', ['top', '--all']),
                           ('memtrace sweep', ['sweep'])):
            rc, so, se = t.run([t.memtrace, *argv], timeout=60, what=what)
            lines = [x for x in se.splitlines() if x.strip()]
            t.eq(rc, 1, f'{what}: exit status (stderr {se.strip()!r})')
            if t.eq(len(lines), 1, f'{what}: lines on stderr ({lines!r})'):
                line = lines[0]
                t.check(line.startswith('memtrace: error:'), f'{what}: an error line: {line!r}')
                t.check(says_missing(line), f'{what}: names what is missing: {line!r}')
                t.check('memtrace record' in line, f'{what}: suggests memtrace record: {line!r}')
    finally:
        sleeper.kill()
        sleeper.wait()

    rec = t.path('peak.mtrace')
    rc, so, se = t.run([t.memtrace, 'record', '-v', '-o', rec, '--', dynamic], timeout=90,
                       what='memtrace record -v')
    t.eq(rc, 0, f'memtrace record -v: exit status (stderr {se.strip()[-300:]!r})')
    chosen = [x for x in se.splitlines() if x.startswith('memtrace: backend:')]
    if t.eq(len(chosen), 1, f'record -v: one "backend:" line ({se.strip()!r})'):
        line = chosen[0]
        t.check(line.startswith('memtrace: backend: the shim'), f'record -v: the shim: {line!r}')
        t.check('BPF is unavailable' in line and says_missing(line),
                f'record -v: BPF unavailable, and why: {line!r}')
    p = t.only_process(t.report(rec))
    if p is not None:
        t.eq(p.get('backend'), 'preload', 'backend of the recording')
        t.check_site(t.site(p, 'many_blocks'), 'many_blocks', allocations=10, frees=6,
                     leaked_allocations=4)

    rc, so, se = t.run([t.memtrace, 'record', '-o', t.path('static.mtrace'), '--', static],
                       timeout=90, what='memtrace record of a static program')
    warn = [x for x in se.splitlines() if x.startswith('memtrace: warning:')]
    if t.eq(len(warn), 1, f'record of a static program: one warning ({se.strip()!r})'):
        t.check('BPF backend that would trace it is unavailable' in warn[0] and says_missing(warn[0]),
                f'record of a static program: BPF unavailable, and why: {warn[0]!r}')
    t.finish()


if __name__ == '__main__':
    main()
