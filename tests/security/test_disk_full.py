#!/usr/bin/env python3
"""test_disk_full.py - a full disk costs events, never the recording.

`memtrace record` of tools/bench/churn.c (5,000,000 allocations, each
freed 64 later) into a 16 KB tmpfs that this test mounts in its own
temporary directory (and unmounts, whatever happens).  The recording is far
larger than that, so its writes fail with ENOSPC.  Checked:
  - the traced program runs to its end: its own output is unchanged, and the
    exit status recorded in the file is its own (7);
  - record says so in one line naming the file and the error, and exits 125
    (memtrace failed: docs/interface.md);
  - the file is readable: `memtrace report --json` succeeds, and every chunk
    in it is whole (a write cut short was taken back);
  - it does not pass for lossless: lost_events > 0, all of kind
    write_failed, and the text report's lost line names the kind;
  - what it shows is a prefix of the truth, and nothing vanished unseen:
    the same run recorded to a roomy directory has at least as many
    allocations and frees, and the events shown plus those counted lost are
    exactly that run's.
The standalone shim (MEMTRACE_OUTPUT in the same tmpfs) is held to the
same: the program runs on, and the file is whole, readable and counts its
loss exactly.
"""
import json
import os
import subprocess
import sys
import tempfile

MEMTRACE = os.environ['MEMTRACE']
SHIM = os.environ['MEMTRACE_SHIM']
CHURN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools', 'bench', 'churn.c')
N = 5000000
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        failures.append(what)


def build_prog(d):
    """churn.c with an exit status of its own, to see that it is kept."""
    src = os.path.join(d, 'prog.c')
    with open(src, 'w') as f:
        f.write('#define main churn_main\n#include "%s"\n#undef main\n'
                'int main(int argc, char **argv) { churn_main(argc, argv); return 7; }\n'
                % os.path.abspath(CHURN))
    prog = os.path.join(d, 'churn')
    subprocess.run(['gcc', '-O1', '-g', '-o', prog, src], check=True)
    return prog


def report_json(path):
    r = subprocess.run([MEMTRACE, 'report', '--json', path], capture_output=True, text=True)
    if r.returncode != 0:
        return r, None
    return r, json.loads(r.stdout)['processes']


def main():
    if os.geteuid() != 0:
        print('SKIP: mounting a small tmpfs needs root')
        return 77
    with tempfile.TemporaryDirectory(prefix='mt-diskfull-') as d:
        prog = build_prog(d)
        roomy = os.path.join(d, 'roomy.mtrace')
        full = subprocess.run([MEMTRACE, 'record', '-q', '-o', roomy, '--', prog, str(N)],
                              capture_output=True, text=True)
        check(full.returncode == 7, 'with room, record exits with the program\'s status (rc %d)' % full.returncode)
        _, procs = report_json(roomy)
        truth = procs[0]['totals']

        mnt = os.path.join(d, 'small')
        os.mkdir(mnt)
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=16k', 'tmpfs', mnt], check=True)
        try:
            out = os.path.join(mnt, 'out.mtrace')
            r = subprocess.run([MEMTRACE, 'record', '-q', '-o', out, '--', prog, str(N)],
                               capture_output=True, text=True)
            size = os.path.getsize(out)
            rj, procs = report_json(out)
            text = subprocess.run([MEMTRACE, 'report', out], capture_output=True, text=True)
            os.unlink(out)
            # the standalone shim, into the same small file system
            shim_out = os.path.join(mnt, 'shim.mtrace')
            env = dict(os.environ, LD_PRELOAD=SHIM, MEMTRACE_OUTPUT=shim_out)
            s = subprocess.run([prog, str(N)], env=env, capture_output=True, text=True)
            sj, shim_procs = report_json(shim_out)
        finally:
            subprocess.run(['umount', mnt])

    check(r.stdout == full.stdout == 'done %d\n' % N, 'the program ran to its end: %r' % r.stdout)
    check(r.returncode == 125, 'record exits 125: memtrace failed (rc %d)' % r.returncode)
    lines = r.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith('memtrace: error: cannot write ') and out in lines[0]
          and 'No space left on device' in lines[0], 'one line names the file and the error: %r' % r.stderr)
    check(size > 16 and size <= 16384, 'the file holds what fitted (%d bytes)' % size)
    check(rj.returncode == 0 and procs is not None and len(procs) == 1,
          'memtrace report --json reads it (rc %d: %s)' % (rj.returncode, rj.stderr.strip()))
    if procs is None or len(procs) != 1:
        print('%d failed' % len(failures))
        return 1
    check('truncated' not in rj.stderr, 'every chunk in it is whole: %r' % rj.stderr)
    p = procs[0]
    t = p['totals']
    lost = p['lost_events']
    kinds = p['lost_by_kind']
    print('shown: %d allocations, %d frees; lost %d; roomy run: %d allocations, %d frees'
          % (t['allocations'], t['frees'], lost, truth['allocations'], truth['frees']))
    check(p.get('exit_status') == 7, 'the program\'s exit status is in the file (%r)' % p.get('exit_status'))
    check(lost > 0 and kinds.get('write_failed') == lost,
          'the loss is counted as write_failed (%d of %r)' % (lost, kinds))
    check(t['allocations'] < truth['allocations'] and t['frees'] < truth['frees'],
          'the figures are a prefix: %d <= %d allocations' % (t['allocations'], truth['allocations']))
    check(t['allocations'] + t['frees'] + lost == truth['allocations'] + truth['frees'],
          'shown + lost = every event (%d + %d + %d against %d + %d)'
          % (t['allocations'], t['frees'], lost, truth['allocations'], truth['frees']))
    lost_line = [line for line in text.stdout.splitlines() if 'lost events' in line]
    check(text.returncode == 0 and len(lost_line) == 1 and 'write_failed' in lost_line[0],
          'the text report\'s lost line names the kind: %r' % lost_line)
    check(s.returncode == 7 and s.stdout == 'done %d\n' % N,
          'shim: the program runs on, its status unchanged (rc %d)' % s.returncode)
    check(sj.returncode == 0 and shim_procs is not None and len(shim_procs) == 1
          and 'truncated' not in sj.stderr, 'shim: the file is whole and readable (%s)' % sj.stderr.strip())
    if shim_procs:
        p = shim_procs[0]
        t, lost = p['totals'], p['lost_events']
        print('shim: shown %d allocations, %d frees; lost %d' % (t['allocations'], t['frees'], lost))
        check(lost > 0 and p['lost_by_kind'].get('write_failed') == lost, 'shim: the loss is counted as write_failed')
        check(t['allocations'] + t['frees'] + lost == truth['allocations'] + truth['frees'],
              'shim: shown + lost = every event')
    print('%d failed' % len(failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
