"""query-where: --where 'SQL' on report and export gives the figures of the
equivalent bytehound filter, byte for byte.

  test_where.py GT_PEAK GT_TEMPORARY GT_FORK

gt-peak (peak.c): 14 allocations of its own; site_a (100000), site_b
(50000) and site_c (90000) are its only blocks of 50000 bytes or more, b
leaks; many_blocks makes ten blocks of 1000 bytes, four leak.
gt-temporary (temporary.c): 9 temporary allocations among 17 of its own.
gt-fork (fork.c) under --follow-forks: two processes in one recording, so
that allocation ids run across processes.
"""

import json
import sys

import gtlib

t = gtlib.Case('query-where')
peak_prog, tmp_prog, fork_prog = sys.argv[1:4]
peak, _ = t.record([peak_prog], out=t.path('peak.mtrace'))
tmp, _ = t.record([tmp_prog], out=t.path('temporary.mtrace'))
fork, _ = t.record([fork_prog], opts=['--follow-forks'], out=t.path('fork.mtrace'))


def run(*argv):
    rc, so, se = t.run([t.memtrace, *argv])
    if not t.eq(rc, 0, f'memtrace {" ".join(argv)}: exit status (stderr {se.strip()!r})'):
        return None
    return so


def same(rec, where, filt, what, cmd=('report', '--json'), check=None):
    """--where WHERE and the filter options FILT give the same output."""
    a = run(*cmd, '--where', where, rec)
    b = run(*cmd, *filt, rec)
    if a and b and '--json' in cmd:
        # a JSON report names its filter; everything else must be the same
        ja, jb = json.loads(a), json.loads(b)
        t.eq(ja.pop('filter', None), {'where': where}, f'{what}: the report names --where')
        t.check(jb.pop('filter', None), f'{what}: the report names {" ".join(filt)}')
        t.check(ja == jb, f'{what}: --where {where!r} differs from {" ".join(filt)}')
    else:
        t.check(a is not None and a == b,
                f'{what}: --where {where!r} differs from {" ".join(filt)}')
    if check and a:
        check(json.loads(a))
    return a


def totals(rep, i=0):
    return rep['processes'][i]['totals']


# sizes: a, b, c
same(peak, 'size >= 50000', ['--size-min', '50000'], 'gt-peak sizes',
     check=lambda r: t.eq((totals(r)['allocations'], totals(r)['allocated_bytes'],
                           totals(r)['leaked_bytes'], totals(r)['peak_bytes']),
                          (3, 240000, 50000, 150000), 'gt-peak: size >= 50000 figures'))
same(peak, 'size BETWEEN 1000 AND 1000', ['--size-min=1000', '--size-max=1000'],
     'gt-peak size range',
     check=lambda r: t.eq((totals(r)['allocations'], totals(r)['leaked_allocations']), (10, 4),
                          'gt-peak: the 1000-byte blocks'))
# lifetimes
same(peak, 'free_s IS NULL', ['--lifetime', 'only_leaked'], 'gt-peak leaks',
     check=lambda r: t.eq((totals(r)['leaked_bytes'], totals(r)['frees']), (54000, 0),
                          'gt-peak: leaks only'))
same(tmp, 'temporary', ['--lifetime', 'only_temporary'], 'gt-temporary temporaries',
     check=lambda r: t.check(totals(r)['allocations'] >= 9, 'gt-temporary: its 9 temporaries'))
# frames: any frame of the stack, as bytehound's function regex
same(peak, "site_id IN (SELECT site_id FROM frames WHERE function GLOB 'site_[ab]')",
     ['--function-regex', '^site_[ab]$'], 'gt-peak frames',
     check=lambda r: t.eq(totals(r)['allocated_bytes'], 150000, 'gt-peak: site_a and site_b'))
# --where with bytehound's filters: both apply
a = run('report', '--json', '--where', 'free_s IS NULL', '--size-min', '10000', peak)
b = run('report', '--json', '--lifetime', 'only_leaked', '--size-min', '10000', peak)
ja, jb = (json.loads(x) if x else {} for x in (a, b))
t.eq((ja.pop('filter', None), jb.pop('filter', None)),
     ({'where': 'free_s IS NULL', 'size_min': '10000'}, {'lifetime': 'only_leaked', 'size_min': '10000'}),
     '--where with --size-min: the report names both')
t.check(a is not None and ja == jb, '--where with --size-min: both apply')
if a:
    t.eq(totals(json.loads(a))['leaked_bytes'], 50000, 'leaked blocks of 10000 bytes or more')
# an export
same(peak, 'free_s IS NULL', ['--lifetime', 'only_leaked'], 'export folded',
     cmd=('export', '--format', 'folded', '--weight', 'leaked'))
# two processes: ids run across them
same(fork, 'free_s IS NULL', ['--lifetime', 'only_leaked'], 'gt-fork leaks')
same(fork, 'size >= 100', ['--size-min', '100'], 'gt-fork sizes')
whole = run('report', '--json', fork)
if whole:
    procs = json.loads(whole)['processes']
    t.eq(len(procs), 2, 'gt-fork --follow-forks: two processes')
    child = procs[-1]['pid']
    r = run('report', '--json', '--where', f'pid = {child}', fork)
    if r:
        got = {p['pid']: p['totals'] for p in json.loads(r)['processes']}
        keys = ('allocations', 'allocated_bytes', 'leaked_allocations', 'leaked_bytes',
                'peak_bytes')
        for p in procs:
            want = {k: p['totals'][k] if p['pid'] == child else 0 for k in keys}
            t.eq({k: got.get(p['pid'], {}).get(k) for k in keys}, want,
                 f'--where pid = {child}: process {p["pid"]}')
        t.check(procs[-1]['totals']['allocations'] > 0, 'gt-fork: the child allocates')

# a bad condition: one line naming it, exit 1
for bad, says in (('nosuch > 1', 'no such column: nosuch'), ('size >', 'syntax error'),
                  ('1); DELETE FROM sites; SELECT (1', 'not one SQL expression')):
    rc, so, se = t.run([t.memtrace, 'report', '--where', bad, peak])
    t.eq(rc, 1, f'report --where {bad!r}: exit status')
    t.eq(len(se.strip().splitlines()), 1, f'report --where {bad!r}: one line ({se!r})')
    t.check(says in se and 'where' in se, f'report --where {bad!r}: says {says!r} ({se!r})')
rc, so, se = t.run([t.memtrace, 'report', '--where', '', peak])
t.eq(rc, 2, "report --where '': usage error")

t.finish()
