#!/usr/bin/env python3
"""test_fifos.py PEAK - FIFOs where a recording's files are looked for cannot
hang its readers: every file memtrace opens on behalf of a traced process or
a recording is opened non-blocking and kept only if it is a regular file.

A program's .gnu_debuglink names its separate debug file, looked for beside
it: whoever owns the program's directory decides what is there.  libdwfl's
standard search opened it with a plain open(), so a FIFO under that name
hung `memtrace report`, `export` and `server` on a recording someone handed
over (and root's `-p` on that user's process), deaf to SIGINT and SIGTERM.

Here, in a private temporary directory: PEAK (tests/groundtruth/peak.c) is
copied, its symbols moved into peak.debug (objcopy --only-keep-debug, strip
--strip-all, --add-gnu-debuglink) and recorded.  With the real debug file
beside it, the report names site_a..site_e (found through the debuglink
alone); with a FIFO in its place, report and export each end within
TIMEOUT with status 0, the frames unnamed (module+offset), and nothing ever
opened the FIFO for reading (a writer waiting on it would have returned).

Then MEMTRACE_SYSROOT (where a recording made on another machine has its
files looked for first) names a folder holding a FIFO at the path of every
module of the recording: report ends within TIMEOUT with the very figures
and names it gives without it (the C library's, read by the runtime-held
and stdio checks, once blocked there).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

MEMTRACE = os.environ['MEMTRACE']
TIMEOUT = 60
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def run(what, args):
    try:
        r = subprocess.run([MEMTRACE] + args, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        check(False, f'{what}: ends within {TIMEOUT} s (it hung)')
        return None
    check(r.returncode == 0, f'{what}: exit status 0 (got {r.returncode}): {r.stderr.strip()[-300:]}')
    return r


def names(report):
    """The function names of the frames of every site."""
    out = set()
    for p in report['processes']:
        for s in p['sites']:
            for f in s['frames']:
                if f.get('function'):
                    out.add(f['function'])
    return out


def main():
    for tool in ('objcopy', 'strip'):
        if not shutil.which(tool):
            print(f'SKIP: {tool} (binutils) is needed to make a separate debug file')
            return 77
    top = tempfile.mkdtemp(prefix='mt-fifos-')
    try:
        prog = os.path.join(top, 'peak')
        debug = prog + '.debug'
        shutil.copy(sys.argv[1], prog)
        subprocess.run(['objcopy', '--only-keep-debug', prog, debug], check=True)
        subprocess.run(['strip', '--strip-all', prog], check=True)
        subprocess.run(['objcopy', '--add-gnu-debuglink=' + debug, prog], check=True)
        rec = os.path.join(top, 'peak.mtrace')
        r = subprocess.run([MEMTRACE, 'record', '-o', rec, '--', prog], capture_output=True,
                           text=True, timeout=TIMEOUT)
        if not check(r.returncode == 0, f'record: {r.stderr.strip()[-300:]}'):
            return 1
        sites = {'site_a', 'site_b', 'site_c', 'site_e', 'many_blocks'}

        r = run('report, the debug file beside', ['report', '--json', rec])
        if r:
            got = names(json.loads(r.stdout))
            check(sites <= got, f'the debug file found by its debuglink names the sites ({sorted(got)})')

        os.unlink(debug)
        os.mkfifo(debug)
        r = run('report, a FIFO at the debuglink', ['report', '--json', rec])
        if r:
            got = names(json.loads(r.stdout))
            check(not (sites & got), f'no site named without the debug file ({sorted(got & sites)})')
        run('export heaptrack, a FIFO at the debuglink',
            ['export', '--format', 'heaptrack', '-o', os.path.join(top, 'peak.heaptrack'), rec])
        run('report --leaks, a FIFO at the debuglink', ['report', '--leaks', rec])
        os.unlink(debug)
        shutil.copy(sys.argv[1], prog)  # with its symbols again
        r = run('report, no sysroot', ['report', '--json', rec])
        plain = json.loads(r.stdout) if r else None
        root = os.path.join(top, 'sysroot')
        mods = {f['module'] for p in plain['processes'] for s in p['sites'] for f in s['frames']
                if f.get('module', '').startswith('/')} if plain else set()
        mods |= {p['exe'] for p in plain['processes']} if plain else set()
        for m in mods:
            os.makedirs(os.path.dirname(root + m), exist_ok=True)
            os.mkfifo(root + m)
        check(len(mods) >= 2, f'FIFOs at the modules\' paths in the sysroot: {sorted(mods)}')
        try:
            r = subprocess.run([MEMTRACE, 'report', '--json', rec], capture_output=True, text=True,
                               timeout=TIMEOUT, env=dict(os.environ, MEMTRACE_SYSROOT=root))
            check(r.returncode == 0, f'report, FIFOs in MEMTRACE_SYSROOT: status {r.returncode}')
            if r.returncode == 0 and plain:
                got = json.loads(r.stdout)
                for p, q in zip(plain['processes'], got['processes']):
                    check(p['totals'] == q['totals'], 'the same totals as without the sysroot')
                check(names(got) == names(plain), 'the same names as without the sysroot')
        except subprocess.TimeoutExpired:
            check(False, f'report, FIFOs in MEMTRACE_SYSROOT: ends within {TIMEOUT} s (it hung)')
        os.mkfifo(debug)

        # Nothing opened it: a non-blocking open for writing fails with
        # ENXIO while no reader has it open.
        try:
            fd = os.open(debug, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
            check(False, 'no reader holds the FIFO open')
        except OSError as e:
            check(e.errno == 6, f'no reader holds the FIFO open ({e})')
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f'{len(failures)} failure(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
