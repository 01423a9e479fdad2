"""cli-thread: `report --thread TID` and `export --thread TID` over gt-threads
(threads.c: 4 threads, thread t allocating 2000 blocks from alloc_tT and
1000 from more_tT, all of s_t = 104 + 32 t bytes; the odd half of
alloc_tT's blocks is never freed).

Each worker thread, found by its sites in the JSON report's threads, must
get exactly its own figures from both commands; a tid the recording holds
no event of is an error naming the file and the tid (it used to give an
empty report, exit 0, as if the thread had been idle).

  test_thread.py GT_THREADS
"""
import json
import os
import sys

import gtlib
from gtlib import stderr_lines

t = gtlib.Case('cli-thread')
prog = sys.argv[1]
N = 2000
SIZE = {k: 104 + 32 * k for k in range(4)}

rec, _ = t.record([prog])
rep = t.report(rec)
p = t.only_process(rep) if rep else None
tids = [th['tid'] for th in p['threads']] if p else []
t.check(len(tids) >= 5, f'the JSON report lists the main thread and 4 workers: {tids}')

found = {}
for tid in tids:
    r = t.report(rec, ['--thread', str(tid)])
    q = t.only_process(r) if r else None
    if not q:
        continue
    fns = {s['frames'][0]['function'] for s in q['sites'] if s.get('frames') and s['allocations']}
    mine = [k for k in range(4) if f'alloc_t{k}' in fns]
    if not mine:
        continue
    t.eq(len(mine), 1, f'thread {tid}: the sites of one worker only ({sorted(fns)})')
    k = mine[0]
    found[k] = tid
    own = [s for s in q['sites'] if s['frames'][0]['function'] in (f'alloc_t{k}', f'more_t{k}')]
    t.eq(sum(s['allocations'] for s in own), 3 * N // 2, f'thread t{k}: allocations of its own sites')
    t.eq(sum(s['allocated_bytes'] for s in own), 3 * N // 2 * SIZE[k], f'thread t{k}: bytes')
    t.eq(sum(s['leaked_allocations'] for s in own), N // 2, f'thread t{k}: leaked (alloc_t{k}\'s odd half)')
    others = [s['frames'][0]['function'] for s in q['sites'] if s['allocations'] and
              any(s['frames'][0]['function'] in (f'alloc_t{j}', f'more_t{j}') for j in range(4) if j != k)]
    t.eq(others, [], f'thread t{k}: no other worker\'s sites')
    # export, through the same filter: the folded stacks weigh bytes
    rc, so, se = t.run([t.memtrace, 'export', '-f', 'folded', '--thread', str(tid), rec])
    t.eq(rc, 0, f'export --thread {tid}: exit status ({se.strip()!r})')
    folded = {}
    for line in so.splitlines():
        stack, _, w = line.rpartition(' ')
        leaf = stack.split(';')[-1]
        folded[leaf] = folded.get(leaf, 0) + int(w)
    t.eq(folded.get(f'alloc_t{k}', 0) + folded.get(f'more_t{k}', 0), 3 * N // 2 * SIZE[k],
         f'export --thread {tid}: bytes of thread t{k}\'s own frames')
t.eq(sorted(found), [0, 1, 2, 3], 'every worker found by its thread id')

# a thread id that is in no process of the recording
absent = max(tids or [1]) + 1
while absent in tids:
    absent += 1
for cmd in (['report'], ['report', '--json'], ['export', '-f', 'folded']):
    rc, so, se = t.run([t.memtrace, *cmd, '--thread', str(absent), rec])
    label = f'{" ".join(cmd)} --thread {absent} (no such thread)'
    t.eq(rc, 1, f'{label}: exit status')
    lines = stderr_lines(se)
    t.eq(len(lines), 1, f'{label}: lines on stderr ({lines})')
    if lines:
        t.check(lines[0].startswith('memtrace: error:') and rec in lines[0] and str(absent) in lines[0],
                f'{label}: the error names the file and the thread: {lines[0]!r}')
    t.eq(so, '', f'{label}: nothing on stdout')

t.finish()
