"""export-views: heaptrack's views by function, and the sizes and lifetimes,
on the HTML report of gt-functions (tests/groundtruth/functions.c, whose
header derives every figure), driven in Chromium (tests/present/browser/
views.js): the functions table's self and inclusive figures, helper's callers
and callees, the call-site table's names (the useful frame: dupper, not
strdup) and the size and lifetime bars, each against `memtrace report --json
--functions --sizes` and against the program's own table.

Run as `python3 test_views.py GT_FUNCTIONS`."""

import os
import sys

import exportlib
import gtlib

t = gtlib.Case('export-views')
prog = sys.argv[1]
SRC = os.environ.get('MEMTRACE_SOURCE_ROOT') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
ARTIFACTS = os.path.join(SRC, 'tests', 'artifacts')
os.makedirs(ARTIFACTS, exist_ok=True)
# the page's columns: self and inclusive of each of these
W = ('allocations', 'allocated_bytes', 'leaked_bytes', 'peak_bytes', 'temporary_allocations')

rec, _ = t.record([prog], out=t.path('functions.mtrace'))
rep = t.report(rec, ['--functions', '--sizes'])
p = t.only_process(rep) if rep else None
page = t.path('functions.html')
exportlib.export(t, rec, 'html', out=page)
f = exportlib.browser(t, 'views.js', page, 'helper', ARTIFACTS)
if f and p:
    fns = {x['name']: x for x in p['functions']}
    t.eq(sorted(f['functions']), sorted(fns), 'the page lists the functions of report --functions')
    for name, x in fns.items():
        want = [v for w in W for v in (x['self'][w], x['inclusive'][w])]
        t.eq(f['functions'].get(name), want, f'{name}: self and inclusive figures as report --functions')
    # and as functions.c says, for a few
    t.eq(f['functions'].get('helper'), [6, 6, 2350, 2350, 2050, 2050, 2050, 2050, 0, 0], 'helper by construction')
    t.eq(f['functions'].get('wrap'), [4, 8, 700, 1050, 0, 50, 100, 150, 0, 0], 'wrap by construction')
    t.eq(f['functions'].get('right'), [0, 5, 0, 2183, 0, 2050, 0, 2183, 0, 1], 'right by construction')
    t.eq(f['title'], 'helper', 'a click on helper shows it')
    t.eq(f['flameSearch'][0], '^helper$', 'a click on helper highlights it in the flamegraph')
    t.check('(2,350 bytes)' in f['flameSearch'][1], f'the flamegraph\'s match: helper\'s 2,350 bytes ({f["flameSearch"]})')
    r = t.report(rec, ['--callers', 'helper', '--callees', 'helper'])
    q = t.only_process(r) if r else None
    if q:
        for key in ('callers', 'callees'):
            want = {c['name'] if c['name'] != 'malloc' else '[the allocator]': [c['inclusive'][w] for w in W]
                    for c in q[key]}
            t.eq(f[key], want, f'helper\'s {key} as report --{key} helper')
    t.eq(f['callers'].get('right'), [2, 2000, 2000, 2000, 0], 'helper called by right: 2 x 1000')
    t.eq(f['callers'].get('wrap'), [4, 350, 50, 50, 0], 'helper called by wrap: 3 x 100 + 50')
    t.eq(f['moved'], f['firstCaller'], 'a click on a caller moves to it')
    t.eq(f['bySelf'], ['helper', 'rec', 'wrap'], 'sorted by self allocations: helper (6), rec and wrap (4)')
    t.check('dupper' in f['sites'] and not any('strdup' in s for s in f['sites']),
            f'the call-site table names strdup\'s site by dupper ({f["sites"]})')
    sizes = {f'size-{b["max_size"]}': b['allocations'] for b in p['sizes']}
    life = {f'life-{b["max_s"]}': b['allocations'] for b in p['lifetimes']}
    got = f['histo']
    t.eq({k: v for k, v in got.items() if k.startswith('size-')},
         {k.replace('None', 'null'): v for k, v in sizes.items()}, 'size bars as report --sizes')
    t.eq({k: v for k, v in got.items() if k.startswith('life-')},
         {k.replace('None', 'null'): v for k, v in life.items()}, 'lifetime bars as report --sizes')
    t.eq(got.get('never'), 8, 'never freed: the 8 leaked blocks')
    t.eq(got.get('size-8'), 5, 'sizes up to 8 bytes: rec\'s four 7s and strdup\'s 8')
    t.eq(got.get('life-0.1'), 6, 'left\'s six blocks lived 10 to 100 ms')
    # the flamegraph: top-down from the entry point, bottom-up from the allocating functions
    t.eq(f['topDown'], ['_start'], 'flamegraph top-down: _start under the root')
    bu = dict(f['bottomUp'])
    t.eq(bu, {'helper': 2350, 'wrap': 700, 'temp': 33, 'rec': 28, '__strdup': 8},
         'flamegraph bottom-up: the allocating functions at the root, with their self allocated bytes')
    nw = f['narrow']
    t.eq([(m[0], m[1], m[2]) for m in nw['more']], [('3,000 more', 3000, 2)],
         f'3000 frames too narrow to draw: one "3,000 more" block of 3000 bytes under main ({nw})')
    t.check(nw['more'] and nw['more'][0][3] > 2, f'the "N more" block is visible ({nw["more"]})')
    t.eq((nw['tiny'], nw['big']), (0, 1), 'the narrow frames are not drawn one by one; the wide one is')
    t.eq(f['errors'], [], 'no console error')
    for shot in ('views-functions.png', 'views-sizes.png'):
        t.check(os.path.getsize(os.path.join(ARTIFACTS, shot)) > 5000, f'screenshot {shot}')
t.finish()
