"""export-filters: bytehound's allocation filters in `memtrace report`, on
ground truths whose answer to each filter follows from their sources.

gt-peak (peak.c): sleeps 300 ms, allocates many_blocks (10 x 1000) and frees
four of them, allocates site_a (100000) and site_b (50000), sleeps 300 ms,
frees a, allocates site_c (90000), frees many[4] and many[5], allocates
site_e (11999), frees c and e.  So at ~0.3 s: 12 allocations, 4 frees; at
~0.6 s: 2 allocations, 5 frees; leaked: b and many[6..9].
gt-temporary (temporary.c): 9 temporary allocations (solo 5, inner 3,
thr_block 1) among 17 of its own.
"""

import exportlib

t, progs = exportlib.setup('export-filters')
OWN = ('many_blocks', 'site_a', 'site_b', 'site_c', 'site_e')

peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
base = t.report(peak)
base_proc = t.processes(base, 1)[0] if base else None


def own_sites(rep):
    """{function: (allocations, allocated_bytes, leaked_allocations)} of
    gt-peak's own sites with allocations in report REP."""
    out = {}
    for s in (t.processes(rep, 1)[0]['sites'] if rep else []):
        fn = s['frames'][0].get('function') if s.get('frames') else None
        if fn in OWN and s['allocations']:
            out[fn] = (s['allocations'], s['allocated_bytes'], s['leaked_allocations'])
    return out


def totals(rep):
    return t.processes(rep, 1)[0]['totals'] if rep else {}


# ---- sizes: site_a, site_b, site_c are the only blocks of 50000 bytes or more
r = t.report(peak, ['--size-min', '50000'])
t.eq(own_sites(r), {'site_a': (1, 100000, 0), 'site_b': (1, 50000, 1), 'site_c': (1, 90000, 0)},
     '--size-min 50000: own sites')
t.eq(totals(r).get('allocated_bytes'), 240000, '--size-min 50000: allocated bytes')
# a and b live together (150000), then b and c (140000)
t.eq(totals(r).get('peak_bytes'), 150000, '--size-min 50000: peak of the matched blocks')
t.eq(totals(r).get('leaked_bytes'), 50000, '--size-min 50000: leaked')
r = t.report(peak, ['--size-min=1000', '--size-max=1000'])
t.eq(own_sites(r), {'many_blocks': (10, 10000, 4)}, '--size-min=1000 --size-max=1000')

# ---- source and function regexes: exactly the program's own sites
r = t.report(peak, ['--source-regex', r'peak\.c$'])
t.eq(totals(r).get('allocations'), 14, "--source-regex 'peak\\.c$': allocations")
t.eq(totals(r).get('allocated_bytes'), 261999, "--source-regex 'peak\\.c$': bytes")
t.eq(totals(r).get('leaked_bytes'), 54000, "--source-regex 'peak\\.c$': leaked")
t.eq(totals(r).get('peak_bytes'), 156000, "--source-regex 'peak\\.c$': peak")
r = t.report(peak, ['--negative-source-regex', r'peak\.c$'])
if base_proc:
    t.eq(totals(r).get('allocations'), base_proc['totals']['allocations'] - 14,
         '--negative-source-regex: the rest of the allocations')
r = t.report(peak, ['--function-regex', '^site_[ab]$'])
t.eq(own_sites(r), {'site_a': (1, 100000, 0), 'site_b': (1, 50000, 1)}, '--function-regex ^site_[ab]$')
t.eq(totals(r).get('allocations'), 2, '--function-regex ^site_[ab]$: nothing else')
r = t.report(peak, ['--negative-function-regex', 'site_'])
t.eq(own_sites(r), {'many_blocks': (10, 10000, 4)}, '--negative-function-regex site_')

# ---- lifetimes
r = t.report(peak, ['--lifetime', 'only_leaked', '--source-regex', r'peak\.c$'])
t.eq(own_sites(r), {'many_blocks': (4, 4000, 4), 'site_b': (1, 50000, 1)}, 'only_leaked')
t.eq(totals(r).get('frees'), 0, 'only_leaked: no frees')
if base_proc:
    r = t.report(peak, ['--lifetime', 'only_leaked'])
    t.eq(totals(r).get('allocations'), base_proc['totals']['leaked_allocations'],
         'only_leaked: as many allocations as the whole report leaks')
r = t.report(peak, ['--lifetime', 'only_whole_group_leaked', '--source-regex', r'peak\.c$'])
t.eq(own_sites(r), {'site_b': (1, 50000, 1)}, 'only_whole_group_leaked')
r = t.report(peak, ['--group-leaked-allocations-min', '100%', '--source-regex', r'peak\.c$'])
t.eq(own_sites(r), {'site_b': (1, 50000, 1)}, '--group-leaked-allocations-min 100%')
r = t.report(peak, ['--group-leaked-allocations-min', '4', '--group-leaked-allocations-max', '40%'])
t.eq(own_sites(r), {'many_blocks': (10, 10000, 4)}, 'group leaked between 4 and 40%')
r = t.report(peak, ['--group-allocations-min', '2', '--source-regex', r'peak\.c$'])
t.eq(own_sites(r), {'many_blocks': (10, 10000, 4)}, '--group-allocations-min 2')

# lived at least 0.2 s: many[4..9] (freed at ~0.6 s or leaked), a, b
r = t.report(peak, ['--lifetime-min', '0.2', '--source-regex', r'peak\.c$'])
t.eq(own_sites(r), {'many_blocks': (6, 6000, 4), 'site_a': (1, 100000, 0), 'site_b': (1, 50000, 1)},
     '--lifetime-min 0.2')
r = t.report(peak, ['--lifetime-max', '0.1', '--source-regex', r'peak\.c$'])
t.eq(own_sites(r), {'many_blocks': (4, 4000, 0), 'site_c': (1, 90000, 0), 'site_e': (1, 11999, 0)},
     '--lifetime-max 0.1')

# ---- time ranges (allocations at ~0.3 s and ~0.6 s; margins of 50 ms and more)
rng = ['--from', '0.25', '--to', '0.55', '--source-regex', r'peak\.c$']
r = t.report(peak, rng)
t.eq(own_sites(r), {'many_blocks': (10, 10000, 4), 'site_a': (1, 100000, 0), 'site_b': (1, 50000, 1)},
     '--from 0.25 --to 0.55')
r = t.report(peak, rng + ['--lifetime', 'only_deallocated_in_current_range'])
t.eq(own_sites(r), {'many_blocks': (4, 4000, 0)}, 'only_deallocated_in_current_range')
r = t.report(peak, rng + ['--lifetime', 'only_not_deallocated_in_current_range'])
t.eq(own_sites(r), {'many_blocks': (6, 6000, 4), 'site_a': (1, 100000, 0), 'site_b': (1, 50000, 1)},
     'only_not_deallocated_in_current_range')
r = t.report(peak, ['--to', '25%', '--source-regex', r'peak\.c$'])
t.eq(own_sites(r), {}, '--to 25%: before the first allocation')
r = t.report(peak, ['--from', '75%', '--source-regex', r'peak\.c$'])
t.eq(own_sites(r), {'site_c': (1, 90000, 0), 'site_e': (1, 11999, 0)}, '--from 75%')

# ---- durations: ms, s, min, h and %; "m" alone is refused (minutes or ms?)
for args, want, what in (
        (['--from', '250ms', '--to', '550ms'],
         {'many_blocks': (10, 10000, 4), 'site_a': (1, 100000, 0), 'site_b': (1, 50000, 1)}, '250ms to 550ms'),
        (['--from', '200ms', '--to', '0.55s'],
         {'many_blocks': (10, 10000, 4), 'site_a': (1, 100000, 0), 'site_b': (1, 50000, 1)}, '200ms to 0.55s'),
        (['--from', '1.5s'], {}, '--from 1.5s: after the run'),
        (['--to', '10%'], {}, '--to 10%: before the first allocation'),
        (['--to', '1min'], own_sites(base), '--to 1min: the whole run'),
        (['--to', '1h'], own_sites(base), '--to 1h: the whole run')):
    t.eq(own_sites(t.report(peak, args + ['--source-regex', r'peak\.c$'])), want, what)
for bad in ('200m', '5x', '1.5 s', 'inf', '-1s'):
    rc, so, se = t.run([t.memtrace, 'report', '--from', bad, peak])
    t.eq(rc, 2, f'report --from {bad}: a usage error')
    first = se.strip().splitlines()[0] if se.strip() else ''
    t.check(f"--from: '{bad}' is not a duration" in first and '200ms, 1.5s, 2min, 1h' in first and '10%' in first,
            f'report --from {bad}: the message names the accepted forms ({first!r})')
    t.eq(so, '', f'report --from {bad}: no report')

# ---- a filtered report says so, and its rates divide by the span kept
r = t.report(peak, ['--from', '250ms', '--to', '550ms', '--size-min', '50000'])
if r and base_proc:
    t.eq(r.get('filter'), {'from': '250ms', 'to': '550ms', 'size_min': '50000'}, 'JSON: the filter as given')
    p = t.processes(r, 1)[0]
    t.check(abs(p.get('span_s', -1) - 0.3) < 1e-6 and abs(p.get('span_from_s', -1) - 0.25) < 1e-6,
            f'JSON: the span kept is 0.25 s to 0.55 s ({p.get("span_from_s")}, {p.get("span_s")})')
    t.eq(base.get('filter'), None, 'JSON unfiltered: "filter" is null')
    t.eq(base_proc.get('span_s'), base_proc.get('duration_s'), 'JSON unfiltered: the span is the run')
    rc, so, se = t.run([t.memtrace, 'report', '--from', '250ms', '--to', '550ms', '--size-min', '50000', peak])
    t.check('  filtered:        --from=250ms --to=550ms --size-min=50000\n' in so,
            f'text: the filter is named ({so[:600]!r})')
    # a, b: 2 allocations in 0.3 s
    t.check('  rate:            7 allocations/s over 0.300 s (the span filtered)\n' in so,
            f'text: the rate divides by the 0.3 s kept ({so[:900]!r})')
    rc, so, se = t.run([t.memtrace, 'report', peak])
    t.check('filtered:' not in so, 'text unfiltered: no "filtered:" line')
    d = base_proc['duration_s']
    want = f"  rate:            {round(base_proc['totals']['allocations'] / d):,} allocations/s over {d:.3f} s\n"
    t.check(want in so, f'text unfiltered: the rate over the whole run {want!r} ({so[:900]!r})')

# ---- --peak says when the peak was
if base_proc:
    rc, so, se = t.run([t.memtrace, 'report', '--peak', peak])
    want = f"  peak: 156 KB in 8 blocks, at {base_proc['totals']['peak_time_s']:.3f} s\n"
    t.check(want in so, f'report --peak: {want!r} ({so[:400]!r})')
    t.check(0.25 < base_proc['totals']['peak_time_s'] < 0.6, 'the peak is at about 0.3 s')

# ---- temporaries keep their meaning in the whole stream
r = t.report(tmp, ['--lifetime', 'only_temporary'])
tb = t.report(tmp)
if r and tb:
    p, pb = t.processes(r, 1)[0], t.processes(tb, 1)[0]
    t.eq(p['totals']['allocations'], pb['totals']['temporary_allocations'],
         'only_temporary: as many allocations as the whole report has temporaries')
    t.eq(p['totals']['temporary_allocations'], pb['totals']['temporary_allocations'],
         'only_temporary: each is still temporary')
    got = {s['frames'][0]['function']: s['allocations'] for s in p['sites'] if s['allocations']}
    for fn, n in (('solo', 5), ('inner', 3), ('thr_block', 1)):
        t.eq(got.get(fn), n, f'only_temporary: {fn}')
    for fn in ('outer', 'first', 'second', 'main_between'):
        t.check(fn not in got, f'only_temporary: {fn} has no temporary allocation')
# a filter that leaves some events out must not make others temporary:
# outer's block is freed after inner's free, which the filter drops
r = t.report(tmp, ['--function-regex', '^outer$'])
t.eq(totals(r).get('temporary_allocations'), 0, 'outer alone: still no temporary')

# ---- bad filters: usage errors naming the option
for args, needle in ((['--size-min', 'abc'], '--size-min'), (['--lifetime', 'some'], '--lifetime'),
                     (['--from', '150%'], '--from'), (['--function-regex', '('], '--function-regex'),
                     (['--group-leaked-allocations-min', 'x%'], '--group-leaked-allocations-min'),
                     (['--to'], '--to')):
    rc, so, se = t.run([t.memtrace, 'report', *args, peak] if args != ['--to'] else
                       [t.memtrace, 'report', peak, '--to'])
    t.eq(rc, 2, f'report {" ".join(args)}: exit status')
    first = se.strip().splitlines()[0] if se.strip() else ''
    t.check(first.startswith('memtrace: error:') and needle in first,
            f'report {" ".join(args)}: one error line naming {needle}, got {se.strip()!r}')

t.finish()
