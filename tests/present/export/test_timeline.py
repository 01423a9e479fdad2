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
    want = [0] * n
    for a in allocs:
        want[min(int(a / bs), n - 1)] += 1
    t.eq(tl['allocations'], want, 'each allocation counted in the interval of its time')
    # the heap of each interval with an allocation: all blocks allocated by its end
    heap = {}
    for i, a in enumerate(allocs):
        heap[min(int(a / bs), n - 1)] = sum(100 + k for k in range(i + 1))
    t.eq({b: tl['heap_bytes'][b] for b in heap}, heap, 'the heap grows by each block in its interval')
    t.eq(max(tl['heap_bytes']), 2190, 'the chart\'s highest heap is the peak')
    # the smallest step between event times: about the 1 ms sleep, never less than a gap
    t.check(tl.get('time_step_s') and abs(tl['time_step_s'] - min(gaps)) < 1e-6,
            f'time_step_s is the smallest gap ({tl.get("time_step_s")} vs {min(gaps)})')
# a coarse clock: the page says its steps are coarser than an interval
rec2, _ = t.record([prog], out=t.path('coarse.mtrace'), env={'MEMTRACE_PRECISE_TIMESTAMPS': '0'})
html2 = exportlib.export(t, rec2, 'html', out=t.path('coarse.html'))
if html2:
    d2 = json.loads(re.search(rb'<script type="application/json" id="memtrace-data">\n?(.*?)\n?</script>',
                              html2, re.S).group(1))
    tl2 = d2['processes'][0]['timeline']
    allocs2 = sorted(a['allocated_s'] for a in json.loads(exportlib.export(t, rec2, 'json') or b'{"processes":[{"allocations":[]}]}')['processes'][0]['allocations'])
    steps = [b - a for a, b in zip(allocs2, allocs2[1:]) if b > a]
    t.check(not steps or abs(tl2['time_step_s'] - min(steps)) < 1e-6,
            f'coarse: time_step_s is the smallest step between allocation times ({tl2.get("time_step_s")}, {steps})')
t.finish()
