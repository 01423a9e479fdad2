"""cli-badargs: arguments that name the wrong thing get one error line that
names the option or file at fault, and the documented exit status.

  test_badargs.py GT_PEAK

  - --suppressions DIR (a directory): report and diff exit 1, record
    --fail-on-leak exits 2 before running the command; the line names DIR
    and says why (it used to say only "cannot read the suppressions DIR");
  - --where with a condition SQLite refuses: report and export exit 1 with
    a line naming --where (it said "where:", the server's parameter);
  - a filter range whose lower end is above its upper end (--size-min 10
    --size-max 5, --from 50% --to 10%) is a usage error naming both, in
    report, export and diff (it gave an empty report, exit 0); equal ends,
    and ends of different kinds (seconds and a percentage), are not;
  - report --callers/--callees FN with an FN on no stack: exit 1 and one
    line, nothing on stdout (the whole report came first);
  - a FIFO given as the recording: report, query, export and diff exit 1
    at once with a line naming it a pipe (they waited forever for a writer;
    a pipe such as <(cat FILE) was "damaged");
  - MEMTRACE_TOKEN too short for the server's token: the error names the
    variable (it said "the access token must be 16 to 79 ...", --token's
    limit being 64);
  - --help and --version written to a full device (/dev/full) exit 1 with a
    line saying so (they exited 0, the output lost).
"""
import os
import sys

import gtlib
from gtlib import stderr_lines

t = gtlib.Case('cli-badargs')
prog = sys.argv[1]


def one_error(argv, want_rc, label, *mentions):
    rc, so, se = t.run(argv)
    t.eq(rc, want_rc, f'{label}: exit status')
    lines = [ln for ln in stderr_lines(se) if not ln.startswith('Try ')]
    t.eq(len(lines), 1, f'{label}: one error line ({lines})')
    if lines:
        t.check(lines[0].startswith('memtrace: error:'), f'{label}: "memtrace: error:": {lines[0]!r}')
        for m in mentions:
            t.check(m in lines[0], f'{label}: the line says {m!r}: {lines[0]!r}')
    return so


rec, _ = t.record([prog])
d = t.path('supp.d')
os.mkdir(d)
one_error([t.memtrace, 'report', '--suppressions', d, rec], 1, 'report --suppressions DIR', d,
          'Is a directory')
one_error([t.memtrace, 'diff', '--suppressions', d, rec, rec], 1, 'diff --suppressions DIR', d,
          'Is a directory')
marker = t.path('ran')
one_error([t.memtrace, 'record', '-q', '--fail-on-leak', '--suppressions', d, '-o', t.path('r.mtrace'),
           '--', 'sh', '-c', f'touch {marker}'], 2, 'record --fail-on-leak --suppressions DIR', d,
          'Is a directory')
t.check(not os.path.exists(marker), 'record with an unreadable suppressions file runs no command')

for cmd in (['report'], ['report', '--json'], ['export', '-f', 'folded']):
    label = f'{" ".join(cmd)} --where (a syntax error)'
    so = one_error([t.memtrace, *cmd, '--where', 'size > (', rec], 1, label, '--where:', 'syntax error')
    t.eq(so, '', f'{label}: nothing on stdout')
    label = f'{" ".join(cmd)} --where (no such column)'
    one_error([t.memtrace, *cmd, '--where', 'nosuchcolumn > 1', rec], 1, label, '--where:', 'nosuchcolumn')

for cmd in (['report'], ['export', '-f', 'folded'], ['diff']):
    files = [rec, rec] if cmd == ['diff'] else [rec]
    for lo, hi, a, b in (('--size-min', '--size-max', '10', '5'), ('--from', '--to', '50%', '10%'),
                         ('--lifetime-min', '--lifetime-max', '2s', '1s')):
        label = f'{" ".join(cmd)} {lo} {a} {hi} {b}'
        so = one_error([t.memtrace, *cmd, lo, a, hi, b, *files], 2, label, lo, hi)
        t.eq(so, '', f'{label}: nothing on stdout')
    for extra in (['--size-min', '5', '--size-max', '5'], ['--from', '1', '--to', '50%']):
        rc, so, se = t.run([t.memtrace, *cmd, *extra, *files])
        t.eq(rc, 0, f'{" ".join(cmd + extra)}: exit status (stderr {se.strip()[-200:]!r})')

for args in (['--callers'], ['--callees'], ['--json', '--callers']):
    label = f'report {" ".join(args)} (a name on no stack)'
    so = one_error([t.memtrace, 'report', *args, 'gt_no_such_function', rec], 1, label,
                   "'gt_no_such_function'")
    t.eq(so, '', f'{label}: nothing on stdout')
    rc, so, se = t.run([t.memtrace, 'report', *args, 'main', rec])
    t.check(rc == 0 and so.strip(), f'report {" ".join(args)} main: a report, exit 0 ({rc}, {se.strip()!r})')

fifo = t.path('rec.fifo')
os.mkfifo(fifo)
one_error([t.memtrace, 'report', '--suppressions', fifo, rec], 1, 'report --suppressions FIFO', fifo, 'pipe')
for cmd in (['report'], ['query'], ['export', '-f', 'folded'], ['diff', rec]):
    label = f'{" ".join(cmd[:1])} FIFO'
    rc, so, se = t.run([t.memtrace, *cmd, fifo], timeout=20)
    if rc is None:
        continue  # (the timeout is a failure already)
    t.eq(rc, 1, f'{label}: exit status')
    lines = stderr_lines(se)
    t.check(len(lines) == 1 and fifo in lines[0] and 'pipe' in lines[0],
            f'{label}: one line naming it a pipe ({lines})')

# a token from the environment the server cannot take names the variable
rc, so, se = t.run([t.memtrace, 'server', '-l', '0.0.0.0:0', rec], env={'MEMTRACE_TOKEN': 'abc'}, timeout=20)
t.eq(rc, 1, 'server off loopback with MEMTRACE_TOKEN=abc: exit status')
lines = stderr_lines(se)
t.check(len(lines) == 1 and 'MEMTRACE_TOKEN' in lines[0] and '16 to 64' in lines[0],
        f'server with MEMTRACE_TOKEN=abc: one line naming the variable ({lines})')

if os.path.exists('/dev/full'):
    for argv in (['--help'], ['--version'], ['report', '--help'], ['query', '--help']):
        label = f'memtrace {" ".join(argv)} > /dev/full'
        with open('/dev/full', 'w') as full:
            rc, se = None, ''
            try:
                import subprocess
                p = subprocess.run([t.memtrace, *argv], stdout=full, stderr=subprocess.PIPE, text=True,
                                   timeout=30)
                rc, se = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                t.fail(f'{label}: timed out')
        t.eq(rc, 1, f'{label}: exit status')
        lines = stderr_lines(se)
        t.check(len(lines) == 1 and lines[0].startswith('memtrace: error:') and 'standard output' in lines[0],
                f'{label}: one error line about standard output ({lines})')
else:
    t.note('no /dev/full here: output errors not checked')

t.finish()
