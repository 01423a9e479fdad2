#!/usr/bin/env python3
"""tests/realworld/sqlite3_stacks_bpf.py: whole stacks from Debian's own
sqlite3 (built without frame pointers) under the BPF backend.

Records the deterministic sqlite3 workload of tools/sqlite-workload.sh
through the shim and through the BPF backend, and compares the share of
allocations whose stack reaches sqlite3_step or sqlite3_exec: the kernel
unwinds from the same unwind tables as the shim, so the two shares must be
within 2 points of each other (with the frame-pointer walk BPF had before,
almost no stack got past sqlite3's allocator wrapper).  The allocation
counts must agree exactly: the workload makes the same calls every run.

Needs root, BPF, and sqlite3 (tools/setup.sh installs it); exits 77 (a skip)
without root or BPF, fails without sqlite3.  Environment: MEMTRACE,
MEMTRACE_SHIM, MEMTRACE_SOURCE_ROOT.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import bpflib  # noqa: E402
import gtlib  # noqa: E402

ROWS = 20000
TOLERANCE = 0.02
REACH = ('sqlite3_step', 'sqlite3_exec')


def share(t, proc):
    """(allocations, share of them whose stack has a REACH function)."""
    total = reached = 0
    for s in proc.get('sites', []):
        n = s.get('allocations', 0)
        total += n
        if any(f.get('function') in REACH for f in s.get('frames') or []):
            reached += n
    return total, (reached / total if total else 0.0)


def main():
    why = bpflib.bpf_unavailable()
    if why:
        print(f'sqlite3-stacks-bpf: skipped: {why}')
        return 77
    t = gtlib.Case('sqlite3-stacks-bpf')
    sqlite3 = shutil.which('sqlite3')
    if not sqlite3:
        t.fail('sqlite3 not found: install it (tools/setup.sh)')
        t.finish()
    root = os.environ.get('MEMTRACE_SOURCE_ROOT', os.path.join(HERE, '..', '..'))
    script = t.path('workload.sql')
    subprocess.run(['sh', os.path.join(root, 'tools', 'sqlite-workload.sh'), '-n', str(ROWS), '-o', script],
                   check=True)
    cmd = [sqlite3, ':memory:', '.read ' + script]
    figures = {}
    for backend in ('preload', 'bpf'):
        rec, _ = t.record(cmd, opts=['--backend=' + backend], out=t.path(backend + '.mtrace'), timeout=300)
        p = t.only_process(t.report(rec))
        if p is None:
            t.finish()
        figures[backend] = share(t, p)
        if backend == 'bpf':
            lost = {k: v for k, v in p.get('lost_by_kind', {}).items() if v}
            t.eq(lost, {}, 'BPF: nothing lost, no stack cut')
    (ns, ss), (nb, sb) = figures['preload'], figures['bpf']
    print(f'allocations: shim {ns}, bpf {nb}; share reaching {"/".join(REACH)}: '
          f'shim {100 * ss:.2f}%, bpf {100 * sb:.2f}%')
    t.eq(nb, ns, 'allocations: BPF against the shim')
    t.check(ss > 0.5, f'the shim\'s stacks reach {REACH} ({100 * ss:.2f}%)')
    t.check(abs(sb - ss) <= TOLERANCE,
            f'BPF\'s share of stacks reaching {REACH} ({100 * sb:.2f}%) within {100 * TOLERANCE:.0f} points '
            f'of the shim\'s ({100 * ss:.2f}%)')
    t.finish()


if __name__ == '__main__':
    sys.exit(main())
