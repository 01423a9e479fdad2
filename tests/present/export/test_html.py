"""export-html: the self-contained HTML report of gt-peak (and gt-cxx, and
gt-fork's two processes), checked twice: its embedded JSON against the
report of the same recording and the figures peak.c derives (totals, the
timeline's peak, allocations and leaks, the sites), and the page itself in
Chromium (tests/present/browser/html.js): it loads nothing from elsewhere and logs
no error, the summary shows the peak, the chart is drawn, a click zooms the
flamegraph, the weight buttons change its total, the table sorts by the
column clicked.  Screenshots go to tests/artifacts/."""

import json
import os
import re
import shutil
import subprocess

import exportlib

t, progs = exportlib.setup('export-html')
SRC = os.environ.get('MEMTRACE_SOURCE_ROOT') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
BROWSER = os.path.join(SRC, 'tests', 'browser')
ARTIFACTS = os.path.join(SRC, 'tests', 'artifacts')
# an argument that would end the data's <script> element if it were not escaped
NASTY = '</script><!--<script>x&y'


def page(rec, *args, out):
    """(raw text, embedded data) of the html export of REC."""
    raw = exportlib.export(t, rec, 'html', *args, out=out)
    if raw is None:
        return '', None
    text = raw.decode('utf-8')
    blocks = re.findall(r'<script type="application/json" id="memtrace-data">\n(.*?)\n</script>', text, re.S)
    if not t.check(len(blocks) == 1, f'html {args}: one embedded data block (found {len(blocks)})'):
        return text, None
    try:
        return text, json.loads(blocks[0])
    except ValueError as e:
        t.fail(f'html {args}: the embedded data is not JSON: {e}')
        return text, None


def sites(proc):
    """The sites of the page's data as {leaf function: site dict}, frames
    decoded into [(name, file, line)] leaf first."""
    out = {}
    fi = {k: i for i, k in enumerate(proc['frame_fields'])}
    for s in proc['sites']:
        d = dict(zip(proc['site_fields'], s))
        fr = []
        for k in exportlib.page_frames(proc, d):
            f = proc['frames'][k]
            fr.append((f[fi['name']], proc['files'][f[fi['file']]] if f[fi['file']] >= 0 else None, f[fi['line']]))
        d['frames'] = fr
        out.setdefault(fr[0][0] if fr else None, []).append(d)
    return out


def self_contained(text, what):
    """Nothing in the page can load anything from elsewhere."""
    for pat, why in ((r'https?://', 'an http(s) address'), (r'<script[^>]*\ssrc\s*=', 'a <script src>'),
                     (r'<link\b', 'a <link>'), (r'<(img|iframe|object|embed)\b', 'an embedded resource'),
                     (r'@import|url\(', 'a CSS import or url()'), (r'\bimport\s*\(', 'a dynamic import')):
        m = re.search(pat, text)
        t.check(not m, f'{what}: {why} at offset {m and m.start()}: {text[m.start() - 60:m.end() + 60]!r}' if m
                else f'{what}: no {why}')
    t.check(re.search(r'Content-Security-Policy" content="default-src \'none\'', text),
            f'{what}: the page forbids loading anything (content security policy)')


# ---- gt-peak: the data --------------------------------------------------

peak, _ = t.record([progs['peak'], NASTY], out=t.path('peak.mtrace'))
rep = t.report(peak)
rproc = t.processes(rep, 1)[0] if rep else {'totals': {}}
rtot = rproc['totals']
peak_html = t.path('peak.html')
text, data = page(peak, out=peak_html)
self_contained(text, 'gt-peak')
t.check(NASTY not in text and '\\u003c/script\\u003e' in text, 'the argument\'s </script> is escaped in the data')
proc = None
if data:
    t.eq(data.get('memtrace_html'), 1, 'data: "memtrace_html": 1')
    t.eq(data.get('weight'), None, 'data: no --weight: the page opens each process on its leaks or its peak')
    procs = data.get('processes', [])
    if t.eq(len(procs), 1, 'data: one process'):
        proc = procs[0]
if proc:
    tot = proc['totals']
    t.eq(proc['pid'], rproc.get('pid'), 'data: pid')
    t.eq(proc['argv'][-1], NASTY, 'data: the argument comes back intact')
    for k, want in (('allocations', 14), ('frees', 9), ('allocated_bytes', 261999), ('peak_bytes', 156000),
                    ('peak_allocations', 8), ('leaked_allocations', 5), ('leaked_bytes', 54000),
                    ('temporary_allocations', 0)):
        t.eq(tot.get(k), rtot.get(k), f'data: totals "{k}" = the report\'s')
        t.eq(tot.get(k), want, f'data: totals "{k}" = peak.c\'s')
    t.eq(tot.get('peak_time_s'), rtot.get('peak_time_s'), 'data: peak time = the report\'s')
    t.eq(proc['lost_events'], 0, 'data: lost events')

    tl = proc['timeline']
    heap, allocs, leaked, bs = tl['heap_bytes'], tl['allocations'], tl['leaked_bytes'], tl['bucket_s']
    t.check(200 <= len(heap) <= 400 and len(heap) == len(allocs) == len(leaked),
            f'timeline: 200 to 400 buckets per series ({len(heap)}, {len(allocs)}, {len(leaked)})')
    t.eq(max(heap), 156000, 'timeline: the highest heap in use is the peak')
    t.eq(sum(allocs), 14, 'timeline: the allocations add up')
    frees = tl.get('frees') or []
    t.eq(len(frees), len(allocs), 'timeline: frees per interval')
    t.eq(sum(frees), 9, 'timeline: the frees add up')
    # many[0..3] are freed at ~0.3 s, a, many[4], many[5], c and e at ~0.6 s
    t.eq(sum(frees[:len(frees) * 2 // 3]), 4, 'timeline: 4 frees in the first two thirds of the run')
    t.eq(leaked[-1], 54000, 'timeline: leaked at the end')
    # the recorder's memory samples: the most of each interval, the highest
    # of them all the report's peak RSS and most mapped data
    mem = rproc.get('memory') or {}
    t.eq(max(tl.get('rss_bytes') or [0]), mem.get('peak_rss_bytes'), 'timeline: the highest RSS is the report\'s')
    t.check(0 < max(tl.get('rss_anon_bytes') or [0]) <= mem.get('peak_rss_bytes', 0),
            'timeline: anonymous resident memory, within the resident')
    t.eq(len(tl.get('rss_bytes') or []), len(heap), 'timeline: RSS in every interval')
    # a bucket shows the most the heap held in it: when the frees at 0.6 s
    # fall into the last bucket (the process exits right after them, so
    # within its 2 ms or not, as the machine's load has it), that bucket
    # still shows the peak they free from
    t.check(heap[-1] == 54000 or (frees[-1] > 0 and 54000 < heap[-1] <= 156000),
            f'timeline: heap in use at the end is what leaked (54000), or what the last '
            f'bucket held before the frees in it (got {heap[-1]}, {frees[-1]} frees in it)')
    t.check(all(a <= b for a, b in zip(leaked, leaked[1:])), 'timeline: leaked only grows')
    t.check(abs(bs * len(heap) - proc['duration_s']) < 0.01 * proc['duration_s'] + 1e-6,
            f'timeline: buckets span the run ({bs} s x {len(heap)} vs {proc["duration_s"]} s)')
    first_peak = heap.index(156000)
    t.check(abs(first_peak * bs - tot['peak_time_s']) <= bs + 1e-6,
            f'timeline: the peak is in the bucket of its time (bucket {first_peak} of {bs} s, '
            f'peak at {tot["peak_time_s"]} s)')
    # the 300 ms sleep at the start: nothing allocated, nothing leaked
    quiet = int(0.25 / bs)
    t.check(max(heap[:quiet]) == 0 and max(leaked[:quiet]) == 0 and sum(allocs[:quiet]) == 0,
            'timeline: nothing during the first 250 ms of sleep')
    # the peak lasts 300 ms: over the middle of that time, the heap stays at it
    mid = [heap[int((tot['peak_time_s'] + d) / bs)] for d in (0.05, 0.15, 0.25)]
    t.eq(mid, [156000] * 3, 'timeline: the peak is held for 300 ms')

    ss = sites(proc)
    for fn, allocations, allocated, leaked_b, peak_b in (('many_blocks', 10, 10000, 4000, 6000),
                                                         ('site_a', 1, 100000, 0, 100000),
                                                         ('site_b', 1, 50000, 50000, 50000),
                                                         ('site_c', 1, 90000, 0, 0), ('site_e', 1, 11999, 0, 0)):
        s = ss.get(fn, [])
        if t.check(len(s) == 1, f'data: one site of {fn}'):
            got = tuple(s[0][k] for k in ('allocations', 'allocated_bytes', 'leaked_bytes', 'peak_bytes'))
            t.eq(got, (allocations, allocated, leaked_b, peak_b), f'data: {fn} (allocations, bytes, leaked, peak)')
    a = ss.get('site_a', [None])[0]
    if a:
        line = exportlib.gtlib.marker_line('peak.c', 'site:site_a')
        t.eq(a['frames'][0][2], line, 'data: site_a\'s line')
        t.check(a['frames'][0][1].endswith('/peak.c'), 'data: site_a\'s file')
        t.eq(a['frames'][1][0], 'main', 'data: site_a is called by main')

_, dl = page(peak, '--weight', 'leaked', out=t.path('leaked.html'))
t.eq(dl and dl.get('weight'), 'leaked', '--weight leaked: the flamegraph starts on leaked bytes')
_, df = page(peak, '--size-min', '50000', out=t.path('filtered.html'))
if df:
    t.eq(df.get('filtered'), True, 'filtered: the page says so')
    ft = df['processes'][0]['totals']
    t.eq((ft['allocations'], ft['allocated_bytes']), (3, 240000), 'filtered: site_a, b and c only')
    t.eq(max(df['processes'][0]['timeline']['heap_bytes']), 150000, 'filtered: the highest heap is a + b')

# ---- gt-temporary: the chart's temporaries are the report's ---------------

tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
for args, what in (((), 'whole'), (('--function-regex', '^solo$'), 'solo only')):
    rj = t.report(tmp, list(args))
    _, dt = page(tmp, *args, out=t.path('temporary.html'))
    if rj and dt:
        want = t.processes(rj, 1)[0]['totals']['temporary_allocations']
        tl = dt['processes'][0]['timeline']
        t.eq(sum(tl.get('temporary') or []), want, f'gt-temporary ({what}): the chart\'s temporaries are the '
             'report\'s')
        t.check(all(a >= b for a, b in zip(tl['frees'], tl['temporary'])),
                f'gt-temporary ({what}): temporaries are frees, each interval')
        if args:
            t.eq(want, 5, 'gt-temporary: solo made 5 temporaries (temporary.c)')

# ---- gt-fork: two processes, a selector; --pid keeps one ----------------

fork_prog = os.path.join(os.path.dirname(progs['peak']), 'gt-fork')
fork_html = None
if t.check(os.access(fork_prog, os.X_OK), f'{fork_prog} is built'):
    fork, out = t.record([fork_prog], opts=['--follow-forks'], out=t.path('fork.mtrace'))
    kv = exportlib.gtlib.parse_kv(out)
    fork_html = t.path('fork.html')
    _, d = page(fork, out=fork_html)
    if d:
        pids = [p['pid'] for p in d['processes']]
        t.eq(sorted(pids), sorted([kv.get('parent'), kv.get('child')]), 'fork: both processes')
        by = {p['pid']: p['totals'] for p in d['processes']}
        t.eq(by.get(kv.get('parent'), {}).get('allocated_bytes'), 6666, 'fork: the parent\'s bytes')
        t.eq(by.get(kv.get('child'), {}).get('allocated_bytes'), 12109, 'fork: the child\'s bytes')
    _, d = page(fork, '--pid', str(kv.get('child')), out=t.path('child.html'))
    if d:
        t.eq([p['pid'] for p in d['processes']], [kv.get('child')], '--pid: the child alone')


# ---- in Chromium -------------------------------------------------------

def browser(script, *args):
    return exportlib.browser(t, script, *args)


def near(a, b):
    return a is not None and b is not None and abs(a - b) < 0.5


os.makedirs(ARTIFACTS, exist_ok=True)
b = browser('html.js', peak_html, 'site_a', 'site_a', os.path.join(ARTIFACTS, 'html-report.png'))
if b:
    t.eq(b['errors'], [], 'chromium: console errors')
    t.eq(b['requests'], [], 'chromium: requests to the network')
    t.eq(b['title'], 'memtrace: gt-peak', 'chromium: page title')
    fig = b['figures']
    t.eq(fig.get('peak', {}).get('value'), '156 KB', 'chromium: the summary\'s peak')
    t.eq(fig.get('peak', {}).get('sub'), f'156,000 bytes in 8 blocks at {round(rtot.get("peak_time_s", 0) * 1000)} ms',
         'chromium: the summary\'s peak in full, with its time')
    # the leak scan: site_b's block is lost, many_blocks' four still held
    # (peak.c keeps them in a global)
    for key, value, sub in (('allocations', '14', None), ('frees', '9', None), ('allocated', '262 KB', '261,999 bytes'),
                            ('leaked', '50.0 KB', '50,000 bytes in 1 block: definitely + indirectly lost'),
                            ('held', '4.00 KB', '4,000 bytes in 4 blocks a pointer still reached at exit: not leaks'),
                            ('temporary', '0', None), ('lost', '0', 'nothing was lost')):
        t.eq(fig.get(key, {}).get('value'), value, f'chromium: the summary\'s {key}')
        if sub:
            t.eq(fig.get(key, {}).get('sub'), sub, f'chromium: the summary\'s {key} in full')
    c = b['chart']
    t.check(c['drawn'] > 0.1 * c['width'] * c['height'] and c['heap'] > 0.05 * c['width'] * c['height'],
            f'chromium: the chart is drawn ({c["drawn"]} pixels, {c["heap"]} of the heap\'s colour, '
            f'of {c["width"]}x{c["height"]})')
    # resident and mapped memory (record's samples): the heap view does not
    # draw them; the process memory view draws them with the heap
    t.check(c['rss'] == 0 and 'Resident (RSS, sampled)' not in c['keys'],
            f'chromium: the heap view draws no resident memory ({c["rss"]} pixels, {c["keys"]})')
    t.check(b.get('modeShown'), 'chromium: a recording with memory samples offers the process memory view')
    pc = b.get('processChart') or {}
    t.check(pc.get('rss', 0) > pc.get('width', 0) // 4,
            f'chromium: process memory view: resident memory\'s line is drawn ({pc.get("rss")} pixels)')
    t.check(pc.get('heap', 0) > 0, f'chromium: process memory view: the heap is drawn too ({pc.get("heap")} pixels)')
    t.check('Resident (RSS, sampled)' in pc.get('keys', []) and any('anonymous' in k for k in pc.get('keys', []))
            and not any(k.startswith('Allocations per second') for k in pc.get('keys', [])),
            f'chromium: process memory view: the legend names heap and resident memory ({pc.get("keys")})')

    w0, w1 = b['before']['click'], b['after']['click']
    full = w0 and w0['canvasWidth']
    t.check(w0 and near(w0['w'], full * 100000 / 261999),
            f'chromium: site_a is 38.17% of the width before the click ({w0 and w0["w"]} of {full})')
    t.check(w1 and near(w1['w'], full), f'chromium: site_a spans the width once clicked ({w1 and w1["w"]})')
    t.check(b['resetEnabled'], 'chromium: Reset zoom is enabled when zoomed')
    t.eq(b['reset']['click'], w0, 'chromium: Reset zoom gives site_a back its width')
    t.eq(b['details'], f'site_a \u2014 100,000 bytes allocated (38.17%) \u2014 {a and a["frames"][0][1]}:'
         f'{a and a["frames"][0][2]}', 'chromium: hover fills the details line')
    t.check(b['tip'], 'chromium: hover shows a tooltip')

    ws = b['weights']
    for w, total in (('bytes', 'Allocated bytes: 261,999 bytes in total'),
                     ('allocations', 'Allocations: 14 allocations in total'),
                     ('leaked', 'Leaked bytes: 50,000 bytes in total'),  # site_b: the lost block
                     ('peak', 'Bytes at peak: 156,000 bytes in total'),
                     ('temporary', 'Temporary allocations: 0 allocations in total')):
        t.eq(ws.get(w, {}).get('total'), total, f'chromium: weight {w}: the flamegraph\'s total')
        t.eq(ws.get(w, {}).get('pressed'), 'true', f'chromium: weight {w}: its button is pressed')
    t.eq(ws['leaked']['click'], None, 'chromium: weight leaked: site_a (freed) is not drawn')
    t.check(ws['peak']['click'] and near(ws['peak']['click']['w'], full * 100000 / 156000),
            'chromium: weight peak: site_a is 100000 of 156000')
    t.check(ws['allocations']['click'] and near(ws['allocations']['click']['w'], full / 14),
            'chromium: weight allocations: site_a is 1 of 14')
    t.eq(ws['temporary']['root'], None, 'chromium: weight temporary: nothing to draw')
    t.eq(b['matched'], 'Matched: 38.17% (100,000 bytes)', 'chromium: search for site_a')

    t.eq(b['opened'], {'weight': 'leaked', 'sort': 'leaked_bytes'},
         'chromium: the page opens on the leaks, the flamegraph and the table')
    tb = b['table']
    t.eq(tb['initial'][0], 'site_b', 'chromium: the table starts sorted by leaked bytes')
    t.eq(tb['allocations']['rows'][0], 'many_blocks', 'chromium: sorted by allocations, many_blocks first')
    t.eq(tb['allocated']['rows'], ['site_a', 'site_c', 'site_b'], 'chromium: sorted by allocated bytes')
    t.eq(tb['allocated']['sort'], 'descending', 'chromium: allocated sorts largest first')
    t.eq(tb['allocated again']['rows'][:2], ['many_blocks', 'site_e'], 'chromium: a second click sorts the other way')
    t.eq(tb['allocated again']['sort'], 'ascending', 'chromium: ... and says so')
    t.eq(tb['function']['rows'], ['many_blocks', 'site_a', 'site_b'], 'chromium: sorted by function name')
    t.eq(b['stack'][:2], ['site_a', 'main'], 'chromium: a click on a row unfolds its stack')
    t.eq(b['processes'], [], 'chromium: one process, no selector')
    t.check(os.path.getsize(os.path.join(ARTIFACTS, 'html-report.png')) > 20000, 'chromium: a screenshot was taken')

cxx, _ = t.record([progs['cxx']], out=t.path('cxx.mtrace'))
cxx_html = t.path('cxx.html')
text, _ = page(cxx, out=cxx_html)
self_contained(text, 'gt-cxx')
b = browser('html.js', cxx_html, 'gt::throw_it(int)', '__cxa_allocate_exception', t.path('cxx.png'))
if b:
    t.eq(b['errors'], [], 'chromium (gt-cxx): console errors')
    before, after = b['before']['child'], b['after']['child']
    full = before and before['canvasWidth']
    t.check(before and before['w'] < full / 10, f'chromium (gt-cxx): the child is narrow ({before and before["w"]})')
    t.check(after and near(after['w'], full), f'chromium (gt-cxx): the child spans the width after a click on '
            f'its parent ({after and after["w"]} of {full})')
    t.eq(b['figures'].get('leaked', {}).get('sub'), '0 bytes in 0 blocks: definitely + indirectly lost',
         'chromium (gt-cxx): nothing lost')
    t.eq(b['figures'].get('held', {}).get('sub'), '4,144 bytes in 4 blocks a pointer still reached at exit: not leaks',
         'chromium (gt-cxx): its four blocks still held')

if fork_html:
    b = browser('html.js', fork_html, 'main', 'main', t.path('fork.png'), str(kv.get('child', '')))
    if b:
        t.eq(b.get('opensOn'), f'gt-fork [{kv.get("parent")}]', 'chromium (gt-fork): opens on the command\'s process')
        t.check('exited with status 0' in (b.get('state') or ''), f'chromium (gt-fork): the parent exited with 0 '
                f'({b.get("state")!r})')
        t.eq(b.get('pidOpensOn'), f'gt-fork [{kv.get("child")}]', 'chromium (gt-fork): ?pid= opens on the child')
        t.check('exited with status 7' in (b.get('pidState') or ''), f'chromium (gt-fork): the child exited with 7 '
                f'({b.get("pidState")!r})')
        t.eq(b['errors'], [], 'chromium (gt-fork): console errors')
        ps = {p['option']: p for p in b['processes']}
        parent, child = ps.get(f'gt-fork [{kv.get("parent")}]'), ps.get(f'gt-fork [{kv.get("child")}]')
        t.check(parent and child and len(ps) == 2, f'chromium (gt-fork): a selector of both processes ({list(ps)})')
        if parent and child:
            t.eq((parent['allocations'], child['allocations']), ('4', '6'),
                 'chromium (gt-fork): each one\'s allocations')
            t.eq((parent['total'], child['total']), ('Allocated bytes: 6,666 bytes in total',
                                                     'Allocated bytes: 12,109 bytes in total'),
                 'chromium (gt-fork): each one\'s flamegraph')

# ---- gt-resident: heap, mapped and resident memory on one time axis ------

res_prog = os.path.join(os.path.dirname(progs['peak']), 'gt-resident')
if t.check(os.access(res_prog, os.X_OK), f'{res_prog} is built'):
    res, _ = t.record([res_prog], out=t.path('resident.mtrace'))
    res_mem = (t.processes(t.report(res), 1) or [{}])[0].get('memory') or {}
    res_html = t.path('resident.html')
    _, d = page(res, out=res_html)
    rtl = ((d or {}).get('processes') or [{}])[0].get('timeline', {})
    # its mapping of 48 MiB (resident.c), in the intervals from its mmap
    # to its munmap, over what is mapped for good (4 MiB of shared memory,
    # the break malloc moved): the most of the series is the report's peak
    mapped = rtl.get('mapped_bytes') or []
    kept = res_mem.get('mapped_bytes') or 0
    t.eq(res_mem.get('peak_mapped_bytes'), kept + (48 << 20), 'gt-resident: memory.peak_mapped_bytes')
    t.eq(max(mapped or [0]), kept + (48 << 20), 'gt-resident timeline: the most mapped is the 48 MiB mapping and the rest')
    t.check(len(mapped) == len(rtl.get('heap_bytes') or []) and mapped and mapped[0] <= kept
            and mapped[-1] == kept and kept >= 4 << 20,
            f'gt-resident timeline: mapped in every interval, without the 48 MiB at the start and the end '
            f'({mapped[:1]}, {mapped[-1:]}, {kept})')
    t.check(rtl.get('rss_bytes'), 'gt-resident timeline: resident memory samples')
    b = browser('html.js', res_html, 'fragment', 'fragment', os.path.join(ARTIFACTS, 'html-resident.png'))
    if b:
        t.eq(b['errors'], [], 'chromium (gt-resident): console errors')
        t.check(b.get('modeShown'), 'chromium (gt-resident): the process memory view is offered')
        pc = b.get('processChart') or {}
        t.check(pc.get('heap', 0) > 0 and pc.get('rss', 0) > pc.get('width', 0) // 4 and
                pc.get('mapped', 0) > pc.get('width', 0) // 8,
                f'chromium (gt-resident): process memory view draws the heap, resident and mapped memory '
                f'({pc.get("heap")}, {pc.get("rss")} and {pc.get("mapped")} pixels)')
        t.check(any(k.startswith('Mapped by the traced calls') for k in pc.get('keys', [])) and
                'Resident (RSS, sampled)' in pc.get('keys', []),
                f'chromium (gt-resident): the legend names the three ({pc.get("keys")})')
        c = b.get('chart') or {}
        # (the heap's blue line drawn over the frees' green bars blends into
        # a few pixels of the mapped line's teal: far fewer than a line)
        t.check(c.get('mapped', 0) * 10 < pc.get('mapped', 0),
                f'chromium (gt-resident): the heap view draws no mapped memory '
                f'({c.get("mapped")} teal pixels against {pc.get("mapped")} in the memory view)')

t.finish()
