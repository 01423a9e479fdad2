"""export-timeline: the chart's buckets against the allocation times, on
gt-spread (tests/groundtruth/spread.c: 20 allocations at least 1 ms apart,
none freed), recorded with precise timestamps.  The JSON export gives each
allocation's time; the HTML report's timeline must count each in the
bucket of that time, its heap must grow by one block in each, and the peak
must be at the last allocation's time.

Run as `python3 test_timeline.py GT_SPREAD`."""

import json
import re
import sys

import exportlib
import gtlib

t = gtlib.Case('export-timeline')
prog = sys.argv[1]
rec, _ = t.record([prog], out=t.path('spread.mtrace'), env={'MEMTRACE_PRECISE_TIMESTAMPS': '1'})
rep = t.report(rec)
p = t.only_process(rep) if rep else None
js = exportlib.export(t, rec, 'json')
html = exportlib.export(t, rec, 'html', out=t.path('spread.html'))
if p and js and html:
    t.check_totals(p, allocations=20, allocated_bytes=sum(100 + i for i in range(20)), leaked_allocations=20,
                   peak_allocations=20, peak_bytes=2190)
    allocs = sorted(a['allocated_s'] for a in json.loads(js)['processes'][0]['allocations'])
    t.eq(len(allocs), 20, 'json: 20 allocations')
    gaps = [b - a for a, b in zip(allocs, allocs[1:])]
    t.check(all(g >= 0.00099 for g in gaps), f'the allocations are at least 1 ms apart (gaps {gaps})')
    t.check(allocs[-1] - allocs[0] >= 0.019, f'they span 19 ms or more ({allocs[-1] - allocs[0]})')
    t.check(abs(p['totals']['peak_time_s'] - allocs[-1]) < 1e-6,
            f'the peak is at the last allocation ({p["totals"]["peak_time_s"]} vs {allocs[-1]})')
    data = json.loads(re.search(rb'<script type="application/json" id="memtrace-data">\n?(.*?)\n?</script>',
                                html, re.S).group(1))
    tl = data['processes'][0]['timeline']
    bs, n = tl['bucket_s'], len(tl['allocations'])
    t.check(bs < 0.001, f'one interval is shorter than the gaps ({bs} s)')
    want = [0] * n
    for a in allocs:
        want[min(int(a / bs), n - 1)] += 1
    t.eq(tl['allocations'], want, 'each allocation counted in the interval of its time')
    t.eq(sum(1 for v in tl['allocations'] if v), 20, 'twenty intervals with one allocation each')
    # the heap in each allocation's interval: one block more each time
    heap = [tl['heap_bytes'][min(int(a / bs), n - 1)] for a in allocs]
    t.eq(heap, [sum(100 + k for k in range(i + 1)) for i in range(20)],
         'the heap grows by each block in its interval')
    t.eq(max(tl['heap_bytes']), 2190, 'the chart\'s highest heap is the peak')
t.finish()
