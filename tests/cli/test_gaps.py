"""cli-gaps: small things a trial of the command line found, each with what
it did before.

  test_gaps.py GT_PEAK

  - report/export --from past the end of the recording (--from 1h on a run
    of a second) gave an empty report and said nothing: now one warning
    line names the range's start and how long the process ran, the exit
    status stays 0 as for any filter that matches nothing; a --from within
    the run, or a --to past the end, warns of nothing;
  - `memtrace --pidx 1` was taken as attach (any word beginning "--pid")
    and pointed to `memtrace attach --help`: an unknown option before the
    command is memtrace's own, and points to `memtrace --help`;
  - report --top-down with --json, --functions, --callers, --callees,
    --sizes or the summary was silently ignored (the same output): a usage
    error naming both options, nothing on stdout; with --leaks it still
    turns the tree over (main at the top).
"""
import json
import sys

import gtlib
from gtlib import stderr_lines

t = gtlib.Case('cli-gaps')
prog = sys.argv[1]

rec, _ = t.record([prog])
rc, so, se = t.run([t.memtrace, 'report', '--json', rec])
t.eq(rc, 0, 'report --json: exit status')
dur = json.loads(so)['processes'][0]['duration_s']
t.check(0 < dur < 3600, f'the run lasts less than an hour ({dur})')

# --from past the end: a warning naming the start and the run's length
for cmd in (['report'], ['report', '--json'], ['export', '-f', 'folded']):
    for rng in (['--from', '1h'], ['--from', '1h', '--to', '2h']):
        label = f'{" ".join(cmd + rng)}'
        rc, so, se = t.run([t.memtrace, *cmd, *rng, rec])
        t.eq(rc, 0, f'{label}: exit status')
        lines = stderr_lines(se)
        t.check(len(lines) == 1 and lines[0].startswith('memtrace: warning: --from 3600 s is past the end')
                and f'ran {dur:.3f} s' in lines[0],
                f'{label}: one warning naming --from and the run ({dur:.3f} s): {lines}')
    if cmd == ['report', '--json']:
        p = json.loads(so)['processes'][0]
        t.eq(p['totals']['allocations'], 0, f'{label}: nothing in the range')
# within the run, or a --to past its end: no warning
for rng in (['--from', '0'], ['--from', f'{dur / 2:.6f}'], ['--to', '1h'], ['--from', '50%']):
    rc, so, se = t.run([t.memtrace, 'report', *rng, rec])
    t.check(rc == 0 and not stderr_lines(se), f'report {" ".join(rng)}: no warning ({rc}, {se!r})')

# an unknown option before the command is memtrace's own
for opt in ('--pidx', '--pi', '-x', '--bogus'):
    rc, so, se = t.run([t.memtrace, opt, '1'])
    t.eq(rc, 2, f'memtrace {opt} 1: exit status')
    lines = stderr_lines(se)
    t.check(len(lines) == 2 and lines[0] == f"memtrace: error: unknown option '{opt}'"
            and lines[1] == "Try 'memtrace --help' for more information.",
            f'memtrace {opt} 1: names the option and memtrace --help ({lines})')
# -p, -pPID, --pid PID and --pid=PID are still attach (no such process: attach's error)
for argv in (['-p', '999999999'], ['-p999999999'], ['--pid', '999999999'], ['--pid=999999999']):
    rc, so, se = t.run([t.memtrace, *argv])
    lines = stderr_lines(se)
    t.check(rc != 2 and lines and 'unknown option' not in lines[0],
            f'memtrace {" ".join(argv)}: taken as attach ({rc}, {lines})')

# --top-down applies to the text trees only
for extra, named in ((['--json', '--leaks'], '--json'), (['--functions'], '--functions'),
                     (['--callers', 'main'], '--callers'), (['--callees', 'main'], '--callees'),
                     (['--sizes'], '--sizes'), (['--summary'], '--summary'), ([], 'summary')):
    label = f'report --top-down {" ".join(extra)}'
    rc, so, se = t.run([t.memtrace, 'report', '--top-down', *extra, rec])
    t.eq(rc, 2, f'{label}: exit status')
    t.eq(so, '', f'{label}: nothing on stdout')
    lines = [ln for ln in stderr_lines(se) if not ln.startswith('Try ')]
    t.check(len(lines) == 1 and lines[0].startswith('memtrace: error: --top-down') and named in lines[0],
            f'{label}: one error naming --top-down and {named} ({lines})')
rc, bottom, se = t.run([t.memtrace, 'report', '--leaks', rec])
rc2, top, se2 = t.run([t.memtrace, 'report', '--leaks', '--top-down', rec])
t.check(rc == 0 and rc2 == 0 and top != bottom, f'report --leaks --top-down: a different tree ({rc}, {rc2})')
first = [ln for ln in top.splitlines() if '->' in ln][:1]
t.check(first and 'main' in first[0], f'report --leaks --top-down: main at the top ({first})')

t.finish()
