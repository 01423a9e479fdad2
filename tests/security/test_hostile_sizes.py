#!/usr/bin/env python3
"""test_hostile_sizes.py GEN - a recording's sizes and exit statuses are any
64-bit values a hostile file holds: every reader keeps to well-defined
arithmetic on them.  Negating an exit status of INT64_MIN (report, --json,
export html, query) and adding or subtracting sizes near 2^63 as int64_t
(diff's changes, the trees' weights) overflowed: undefined behaviour, which
memtrace built with UBSan (tools/check.sh's sanitized build, halting on the
first error) died of.

GEN (hostile_sizes.c) writes the two recordings in a private temporary
directory.  Each command must end with status 0 and no sanitizer report,
and say what the file says: a status of INT64_MIN is a kill by signal
2^63 (no signal's name), one of INT64_MAX an exit status, and the changes
diff shows have the sign of NEW minus BASE.
"""
import json
import os
import subprocess
import sys
import tempfile

MEMTRACE = os.environ['MEMTRACE']
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def run(*args):
    """memtrace ARGS: its standard output, or None after a failure."""
    r = subprocess.run([MEMTRACE, *args], capture_output=True, text=True, timeout=120)
    what = 'memtrace ' + ' '.join(os.path.basename(a) for a in args)
    ok = check(r.returncode == 0, f'{what}: exit status 0 (got {r.returncode}): '
               f'{r.stderr.strip()[-400:]}')
    ok &= check('runtime error' not in r.stderr and 'Sanitizer' not in r.stderr,
                f'{what}: no sanitizer report')
    return r.stdout if ok else None


def main():
    gen = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix='mt-hostile-sizes-') as d:
        new, base = os.path.join(d, 'new.mtrace'), os.path.join(d, 'base.mtrace')
        subprocess.run([gen, new, base], check=True)

        out = run('report', '--json', new)
        if out is not None:
            procs = {p['pid']: p for p in json.loads(out)['processes']}
            p, q = procs.get(100, {}), procs.get(101, {})
            check(p.get('exit_status') == -2**63, f'pid 100: exit_status {p.get("exit_status")}')
            check('signal' not in p, f'pid 100: no signal\'s name for 2^63 ({p.get("signal")})')
            check(q.get('exit_status') == 2**63 - 1, f'pid 101: exit_status {q.get("exit_status")}')
        for view in ('--leaks', '--peak', '--temporary', '--frequency', '--functions', '--sizes'):
            run('report', '--json', view, new)
        out = run('report', '--all-images', new)
        if out is not None:
            check('killed by signal 9223372036854775808' in out,
                  'report: pid 100 killed by signal 2^63')
            check('exit status 9223372036854775807' in out, 'report: pid 101\'s exit status')
        for view in ('--leaks', '--peak', '--temporary', '--frequency'):
            run('report', view, new)
            run('report', '--top-down', view, new)
        out = run('export', '--format', 'html', new)
        if out is not None:
            check('"exit_status": -9223372036854775808' in out, 'export html: pid 100\'s exit_status')
            check('"signal"' not in out, 'export html: no signal\'s name')
        for fmt in ('folded', 'json', 'speedscope', 'gprof2dot', 'massif'):
            run('export', '--format', fmt, new)
        out = run('query', new, 'select pid, exit_status, signal from processes order by pid')
        if out is not None:
            check('9223372036854775807' in out, f'query: pid 101\'s exit status ({out.strip()!r})')
        # NEW minus BASE at stack 2 (2^63 against 2^64 - 1 bytes) shrinks,
        # by 2^63 - 1; pid 101's stack (2^63 + 5 against none) grows: each
        # change keeps its sign (as int64_t, 2^63 + 5 was negative)
        for view in ('', '--leaks', '--peak', '--temporary', '--frequency'):
            for order in ((base, new), (new, base)):
                run('diff', *([view] if view else []), *order)
                run('diff', '--json', *([view] if view else []), *order)
        out = run('diff', '--json', base, new)
        if out is not None:
            procs = json.loads(out).get('processes', [])
            sites = procs[0].get('sites', []) if procs else []
            two = [s for s in sites if s['frames'][0]['address'] == '0x40110f']
            check(len(sites) == 3 and len(two) == 1, f'diff --json: three sites ({len(sites)})')
            if two:
                check(two[0].get('allocated_bytes') == -(2**63 - 1),
                      f'diff --json: stack 2 shrank by 2^63 - 1 bytes ({two[0].get("allocated_bytes")})')
        out = run('diff', base, new)
        if out is not None:
            if not check('-> -9223372 TB (0x): 0x40110f' in out and
                         '-> +9223372 TB (+1x): 0x40120f' in out,
                         'diff: stack 2 shrank by 2^63 - 1 bytes, pid 101\'s grew by 2^63 + 5'):
                print(out)
    if failures:
        print(f'\n{len(failures)} checks failed')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
