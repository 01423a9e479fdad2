"""server-threads: the thread filter and the GUI's thread selector, on a
recording of gt-threads (tests/groundtruth/threads.c: 4 threads, thread t
allocating 2000 blocks from alloc_tT and 1000 from more_tT, all of s_t =
104 + 32 t bytes; 1000 of alloc_tT's blocks leaked, the others freed, half
of alloc_tT's by another thread).

On the command line: report --json lists the threads with what each
allocated, and --thread TID keeps exactly thread t's sites, figures and
frees (a free by another thread still ends a kept block).  In Chromium
(tests/present/browser/threads.js): the selector lists the same threads;
picking thread t makes every view follow - the summary, the call sites, the
functions, the flamegraph in every weight, the chart's buckets, the size
histogram and the single allocations - each against `report --json --thread
TID`; the URL and the filter form say thread=TID, a reload keeps it, and
"all threads" brings back the whole figures.  Screenshots go to
tests/artifacts/gui-thread*.png.

Run as `python3 test_threads.py GT_THREADS`."""

import os
import sys

import exportlib
import gtlib
import serverlib

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get('MEMTRACE_SOURCE_ROOT') or os.path.join(HERE, '..', '..', '..')
ARTIFACTS = os.path.join(SRC, 'tests', 'artifacts')
os.makedirs(ARTIFACTS, exist_ok=True)
N = 2000
SIZES = [104, 136, 168, 200]
# the flamegraph's weights (format.js): the site figure each sums
WEIGHTS = ['allocated_bytes', 'allocations', 'leaked_bytes', 'peak_bytes', 'temporary_allocations']

t = gtlib.Case('server-threads')
rec, _ = t.record([sys.argv[1]], out=t.path('threads.mtrace'))
p = t.only_process(t.report(rec))
if p is None:
    t.finish()


def own(q, k):
    """Sites of thread K's functions in process Q: {name: site}."""
    return {s['frames'][0]['function']: s for s in q['sites']
            if s['frames'] and s['frames'][0].get('function') in (f'alloc_t{k}', f'more_t{k}')}


# the threads: the main one and the 4 workers, each found by its sites
threads = {x['tid']: x for x in p.get('threads', [])}
t.check(p['pid'] in threads, f'the main thread {p["pid"]} is listed ({sorted(threads)})')
t.eq(sum(x['allocations'] for x in threads.values()), p['totals']['allocations'],
     'the threads\' allocations sum to the process\'s')
t.eq(sum(x['allocated_bytes'] for x in threads.values()), p['totals']['allocated_bytes'],
     'the threads\' bytes sum to the process\'s')
worker = {}
for k, size in enumerate(SIZES):
    for tid in threads:
        q = t.only_process(t.report(rec, ['--thread', str(tid)]))
        if q and own(q, k).get(f'alloc_t{k}', {}).get('allocations'):
            worker[k] = (tid, q)
            break
t.eq(sorted(worker), [0, 1, 2, 3], 'each worker\'s sites are one thread\'s')
for k, (tid, q) in worker.items():
    size = SIZES[k]
    mine = own(q, k)
    t.eq({n: (s['allocations'], s['allocated_bytes'], s['frees'], s['leaked_allocations'])
          for n, s in mine.items()},
         {f'alloc_t{k}': (N, N * size, N // 2, N // 2), f'more_t{k}': (N // 2, N // 2 * size, N // 2, 0)},
         f'--thread {tid}: thread {k}\'s sites (frees by another thread count)')
    others = [s['frames'][0].get('function') for s in q['sites'] if s['allocations'] and
              s['frames'][0].get('function', '').startswith(('alloc_t', 'more_t')) and s not in mine.values()]
    t.eq(others, [], f'--thread {tid}: no other worker\'s allocations')
    # whatever else the thread allocated (the C library's own blocks)
    extra = q['totals']['allocations'] - 3 * N // 2
    t.check(extra >= 0, f'--thread {tid}: at least thread {k}\'s 3000 allocations ({q["totals"]})')
    t.eq(q['totals']['allocations'], threads[tid]['allocations'],
         f'--thread {tid}: the allocations the thread list gives it')
    tot = q['totals']
    t.eq(tot['frees'] + tot['leaked_allocations'] + tot.get('runtime_held_allocations', 0), tot['allocations'],
         f'--thread {tid}: every kept block is freed, leaked or held')

# the GUI, on thread 1
k = 1
tid, q = worker.get(k, (None, None))
proc, port = serverlib.start(t, [rec])
f = exportlib.browser(t, 'threads.js', f'http://127.0.0.1:{port}/ui/0', str(tid), ARTIFACTS) if proc and tid else None
if f and q:
    t.eq(sorted(int(v) for v, _ in f['options'] if v), sorted(threads), 'the selector lists report --json\'s threads')
    t.check(any(v == str(p['pid']) and '(main)' in text for v, text in f['options']),
            f'the main thread is named so ({f["options"]})')
    t.check(f['options'] and f['options'][0][0] == '', 'the selector offers all threads first')
    for what, want, v in (('all', p, f['all']), ('one', q, f['one']), ('back', p, f['back'])):
        tot = want['totals']
        t.eq((v['allocations'], v['frees']), (tot['allocations'], tot['frees']), f'{what}: summary figures')
        t.eq(v['flame'], [sum(s[w] for s in want['sites']) for w in WEIGHTS], f'{what}: flamegraph totals')
        t.eq(v['chart'], tot['allocations'], f'{what}: the chart\'s allocations over its buckets')
        t.eq(v['sizes'], tot['allocations'], f'{what}: the size histogram\'s bars')
        want_sites = {}
        for s in want['sites']:
            if s['allocations']:
                fr = s['frames'][s.get('useful_frame', 0)] if s['frames'] else {}
                n = fr.get('function') or fr.get('address')
                a = want_sites.get(n, [0, 0])
                want_sites[n] = [a[0] + s['allocations'], a[1] + s['allocated_bytes']]
        got_sites = {n: x for n, x in v['sites'].items() if x[0]}
        t.eq(got_sites, want_sites, f'{what}: call sites with allocations (allocations, bytes)')
    one = f['one']
    t.eq(one['sites'].get(f'alloc_t{k}'), [N, N * SIZES[k]], 'thread 1: alloc_t1 by construction')
    t.eq(one['sites'].get(f'more_t{k}'), [N // 2, N // 2 * SIZES[k]], 'thread 1: more_t1 by construction')
    t.eq(one['functions'].get('worker'), 3 * N // 2,
         'thread 1: worker\'s inclusive allocations, its 3000')
    t.eq(f['all']['functions'].get('worker'), 4 * 3 * N // 2, 'all threads: worker\'s 12000')
    t.eq((one['field'], one['selected']), (str(tid), str(tid)), 'the form and the selector say the thread')
    t.check(f'thread={tid}' in one['url'], f'the URL says thread={tid} ({one["url"]})')
    t.eq(f['reloaded'], str(tid), 'a reload keeps the thread')
    t.eq(f['allocationThreads'], [str(tid)], 'the single allocations are all the thread\'s')
    t.check(f'of {q["totals"]["allocations"]:,}' in f['allocationStatus'] or
            f'{q["totals"]["allocations"]:,}' in f['allocationStatus'],
            f'the allocation list counts the thread\'s {q["totals"]["allocations"]} ({f["allocationStatus"]!r})')
    t.eq((f['back']['field'], f['back']['selected']), ('', ''), 'all threads again: no thread filter')
    t.check(f.get('tip') and 'worker' in f['tip'] and 'null' not in f['tip'],
            f'a frame\'s tooltip names it and reads no "null" ({f.get("tip")!r})')
    t.check('null' not in f['summary'], f'the summary reads no "null" ({f["summary"][-200:]!r})')
    t.eq(f['errors'], [], 'no console error')
    t.eq(f['requests'], [], 'no request elsewhere')
    for shot in ('gui-thread.png', 'gui-thread-flamegraph.png'):
        t.check(os.path.getsize(os.path.join(ARTIFACTS, shot)) > 5000, f'screenshot {shot}')
t.finish()
