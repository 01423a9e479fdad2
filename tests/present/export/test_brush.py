"""export-brush: a time range dragged across the chart of the HTML report
selects, in the page itself, what every view counts: the summary's figures,
the flamegraph in every weight, the call sites and the functions show the
allocations made in the range (from the sites' times the page carries),
each checked in Chromium (tests/present/browser/brush.js) against `memtrace
report --json --from FROM --to TO` over the range the page says it
selected, and "Whole run" brings the whole figures back.

On gt-timeline (tests/groundtruth/timeline.c: 200 blocks of 1000 bytes 100
us apart, then one of 1 MiB), recorded with precise timestamps: a range
inside the spread holds exactly the allocations whose times (the JSON
export's) fall in it, 1000 bytes each, and not the summit; on gt-threads
(threads.c), whose blocks are leaked and freed by other threads, the
figures including the leaks as report --json gives them.  The page says
what stays the whole run's (the peak, sizes, lifetimes).  Screenshots go
to tests/artifacts/html-brush*.png.

Run as `python3 test_brush.py GT_TIMELINE GT_THREADS`."""

import json
import os
import sys

import exportlib
import gtlib

t = gtlib.Case('export-brush')
SRC = os.environ.get('MEMTRACE_SOURCE_ROOT') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
ARTIFACTS = os.path.join(SRC, 'tests', 'artifacts')
os.makedirs(ARTIFACTS, exist_ok=True)
PRECISE = {'MEMTRACE_PRECISE_TIMESTAMPS': '1'}
# the flamegraph's weights (format.js) but the peak, which no range has
WEIGHTS = ['allocated_bytes', 'allocations', 'leaked_bytes', None, 'temporary_allocations']


def useful_name(s):
    fr = s['frames'][s.get('useful_frame', 0)] if s['frames'] else {}
    return fr.get('function') or fr.get('address')


def against_report(what, rec, v):
    """The views V of a brushed page against report --json over its range."""
    lo, hi = v['range']
    q = t.only_process(t.report(rec, ['--from', f'{lo:.9f}s', '--to', f'{hi:.9f}s']))
    if not q:
        return None
    tot = q['totals']
    t.eq((v['allocations'], v['allocated'], v['leaked'], v['temporary']),
         (tot['allocations'], tot['allocated_bytes'], tot['leaked_bytes'], tot['temporary_allocations']),
         f'{what}: summary figures (allocations, bytes, leaked bytes, temporary) as --from/--to')
    t.eq([x for x, w in zip(v['flame'], WEIGHTS) if w], [sum(s[w] for s in q['sites']) for w in WEIGHTS if w],
         f'{what}: flamegraph totals as --from/--to')
    t.eq(v['flame'][3], 0, f'{what}: no bytes at the peak in a range')
    want = {}
    for s in q['sites']:
        if s['allocations']:
            a = want.setdefault(useful_name(s), [0, 0, 0, 0])
            for i, k in enumerate(('allocations', 'allocated_bytes', 'leaked_bytes', 'temporary_allocations')):
                a[i] += s[k]
    t.eq(v['sites'], want, f'{what}: call sites (allocations, bytes, leaked bytes, temporary) as --from/--to')
    t.check(v['note'] and 'whole run' in v['note'], f'{what}: the page says what a range leaves as it was ({v["note"]!r})')
    return q


# gt-timeline: the spread, by construction
rec, _ = t.record([sys.argv[1]], out=t.path('timeline.mtrace'), env=PRECISE)
page = t.path('timeline.html')
js = exportlib.export(t, rec, 'json')
p = t.only_process(t.report(rec))
if exportlib.export(t, rec, 'html', out=page) is not None and js and p:
    allocs = json.loads(js)['processes'][0]['allocations']
    # a range over the middle of the spread, wherever a loaded machine put
    # it (a thread late to its clock makes several at once): from the 50th
    # allocation to the 150th (the page widens it to its grid)
    spread = sorted(a['allocated_s'] for a in allocs if a['size'] == 1000)
    span = p['duration_s']
    lo_s, hi_s = spread[50], spread[150]
    if hi_s - lo_s < span / 100:  # bunched at one moment: a range around it
        mid = (lo_s + hi_s) / 2
        lo_s, hi_s = mid - span / 200, mid + span / 200
    f = exportlib.browser(t, 'brush.js', page, f'{lo_s / span:.6f}', f'{hi_s / span:.6f}', ARTIFACTS)
    if f:
        b = f['brushed']
        t.check(b['range'] and b['range'][0] < b['range'][1], f'a range was selected ({b["range"]})')
        if b['range']:
            lo, hi = b['range']
            inside = [a for a in allocs if lo <= a['allocated_s'] < hi]
            t.check(len(inside) > 10, f'the range holds some of the spread ({len(inside)}: the page chose '
                    f'{lo}..{hi} for {lo_s}..{hi_s}, the spread is {spread[0]}..{spread[-1]} of {span} s)')
            t.eq((b['allocations'], b['allocated']), (len(inside), sum(a['size'] for a in inside)),
                 'timeline: the allocations made in the range, by their times (export json)')
            t.eq(set(a['size'] for a in inside), {1000}, 'timeline: only spread blocks in the range')
            t.eq(b['sites'], {'spread': [len(inside), 1000 * len(inside), 0, 0]}, 'timeline: only spread\'s site')
            t.eq(b['functions'].get('spread'), [len(inside), 1000 * len(inside), 0], 'timeline: spread\'s functions row')
            t.check('summit' not in b['functions'], 'timeline: the summit is not in the range')
            against_report('timeline', rec, b)
        w = f['whole']
        t.eq(w['range'], None, 'Whole run: no range')
        t.eq((w['allocations'], w['allocated']), (p['totals']['allocations'], p['totals']['allocated_bytes']),
             'Whole run: the whole figures again')
        t.eq(w['flame'], f['before']['flame'], 'Whole run: the flamegraph as before the range')
        t.eq(w['sites'], f['before']['sites'], 'Whole run: the call sites as before the range')
        t.eq(f['errors'], [], 'no console error')
        t.eq(f['requests'], [], 'no request leaves the page')

# gt-threads: leaks and frees by other threads, against the report; and a
# thread picked in the page's bar, against report --thread
rec2, _ = t.record([sys.argv[2]], out=t.path('threads.mtrace'), env=PRECISE)
page2 = t.path('threads.html')
p2 = t.only_process(t.report(rec2))
if exportlib.export(t, rec2, 'html', out=page2) is not None and p2:
    # thread 1's (136-byte blocks), found by its site
    tid = next((x['tid'] for x in p2['threads']
                if t.only_process(t.report(rec2, ['--thread', str(x['tid'])]))['totals']['allocated_bytes'] ==
                3000 * 136), None)
    f = exportlib.browser(t, 'brush.js', page2, '0.02', '0.6', ARTIFACTS, str(tid))
    if f and f['brushed']['range']:
        q = against_report('threads', rec2, f['brushed'])
        t.check(q and q['totals']['leaked_bytes'] > 0, 'threads: the range holds leaked blocks')
        t.eq(f['errors'], [], 'threads: no console error')
    if f and tid:
        t.eq(sorted(int(v) for v in f['threadOptions'] if v), sorted(x['tid'] for x in p2['threads'] if x['allocations']),
             'the page\'s thread selector lists the threads that allocated')
        q = t.only_process(t.report(rec2, ['--thread', str(tid)]))
        v = f['thread']
        tot = q['totals']
        t.eq((v['allocations'], v['allocated'], v['leaked'], v['temporary']),
             (tot['allocations'], tot['allocated_bytes'], tot['leaked_bytes'], tot['temporary_allocations']),
             'thread: summary figures as report --thread')
        t.eq((v['allocations'], v['allocated'], v['leaked']), (3000, 3000 * 136, 1000 * 136),
             'thread 1 by construction: 3000 blocks of 136 bytes, 1000 leaked')
        t.eq([x for x, w in zip(v['flame'], WEIGHTS) if w], [sum(s[w] for s in q['sites']) for w in WEIGHTS if w],
             'thread: flamegraph totals as report --thread')
        t.eq(v['sites'], {'alloc_t1': [2000, 272000, 136000, 0], 'more_t1': [1000, 136000, 0, 0]},
             'thread: its two sites by construction')
        t.eq(v['functions'].get('worker'), [3000, 408000, 136000], 'thread: worker\'s functions row')
        t.check(v['note'] and f'Thread {tid}' in v['note'], f'the page says which thread ({v["note"]!r})')
        t.eq(f['threadAfterRange'], '', 'a range dragged afterwards replaces the thread')
for shot in ('html-brush.png', 'html-brush-summary.png', 'html-thread-summary.png'):
    t.check(os.path.exists(os.path.join(ARTIFACTS, shot)) and
            os.path.getsize(os.path.join(ARTIFACTS, shot)) > 5000, f'screenshot {shot}')
t.finish()
