"""server-gui: the web GUI of `memtrace server` on recordings of gt-peak and
gt-temporary.  Over HTTP: the pages and /static/ files (their types, the
Content-Security-Policy that allows only the server itself, 404 for unknown
files and ways out of /static/), and /data/<id>/report, the GUI's data,
against the JSON report and what peak.c derives, filtered.  In Chromium
(tests/present/browser/gui.js): the list links to each recording; gt-peak's page
shows the peak of 156,000 bytes and site_a first by allocated bytes, draws
the chart, a sparkline of live bytes per site and the flamegraph, zooms on a click, unfolds a site's stack;
the filter form with size_min=50000 leaves exactly site_a, site_b and
site_c and 240,000 bytes allocated, in the export links too; no console
error, no request elsewhere.  Screenshots go to tests/artifacts/gui-*.png.

At 1024 pixels, gt-leakkinds's page (tests/present/browser/pages.js):
its leak-kind selector's figures are the kinds leakkinds.c gives its
blocks, the kind picked stays picked under a filter, the chart's buttons
each on one line, the summary and chart before the filters.

Run as `python3 test_gui.py GT_PEAK GT_TEMPORARY GT_LEAKKINDS`."""

import http.client
import json
import os
import re
import sys

import exportlib
import serverlib

HERE = os.path.dirname(os.path.abspath(__file__))

t, peak, temp, proc, PORT = serverlib.setup('server-gui')
SRC = os.environ.get('MEMTRACE_SOURCE_ROOT') or os.path.join(HERE, '..', '..', '..')
ARTIFACTS = os.path.join(SRC, 'tests', 'artifacts')
POLICY = "default-src 'self'"
OPENER = serverlib.OPENER
# the downloads the page offers: every format of memtrace export
EXPORTS = ['heaptrack', 'flamegraph', 'flamegraph.pl', 'pprof', 'massif', 'speedscope', 'gprof2dot', 'json', 'html']
BASE = f'http://127.0.0.1:{PORT}'


def raw(path):
    """(status, headers, body) of GET PATH sent as it is (no client-side
    normalization of . and ..)."""
    c = http.client.HTTPConnection('127.0.0.1', PORT, timeout=120)
    c.putrequest('GET', path, skip_accept_encoding=True)
    c.endheaders()
    r = c.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    c.close()
    return out


def get(path, want=200, ctype=None):
    st, hdr, body = raw(path)
    t.eq(st, want, f'GET {path}: status')
    if ctype:
        t.eq(hdr.get('content-type'), ctype, f'GET {path}: Content-Type')
    return hdr, body


def report(path):
    hdr, body = get(path, ctype='application/json')
    try:
        return json.loads(body)
    except ValueError as e:
        t.fail(f'GET {path}: not JSON ({e})')
        return None


# ---- pages and static files ------------------------------------------------

for path, title in (('/', 'memtrace server'), ('/ui/0', 'memtrace: recording 0'),
                    ('/ui/last', 'memtrace: recording last'), ('/ui/0?size_min=50000', 'memtrace: recording 0')):
    hdr, body = get(path, ctype='text/html; charset=utf-8')
    text = body.decode('utf-8', 'replace')
    t.check(hdr.get('content-security-policy', '').startswith(POLICY),
            f'GET {path}: a policy of default-src \'self\' ({hdr.get("content-security-policy")!r})')
    t.check(f'<title>{title}</title>' in text, f'GET {path}: title {title}')
    t.check('{{' not in text, f'GET {path}: every slot of the template is filled')
    for src in ('format.js', 'flamegraph.js', 'chart.js', 'table.js', 'report.js', 'gui.js'):
        t.check(f'<script src="/static/{src}"></script>' in text, f'GET {path}: loads /static/{src}')
    t.check('<link rel="stylesheet" href="/static/report.css">' in text, f'GET {path}: loads report.css')
    t.check('<script>' not in text and 'style=' not in text, f'GET {path}: nothing inline')

for name, ctype in (('report.js', 'text/javascript; charset=utf-8'), ('gui.js', 'text/javascript; charset=utf-8'),
                    ('report.css', 'text/css; charset=utf-8'), ('gui.css', 'text/css; charset=utf-8'),
                    ('favicon.svg', 'image/svg+xml')):
    hdr, body = get('/static/' + name, ctype=ctype)
    t.check(hdr.get('content-security-policy', '').startswith(POLICY), f'/static/{name}: the policy')
    t.check(len(body) > 100, f'/static/{name}: {len(body)} bytes')
_, js = get('/static/gui.js')
t.check(b'Memtrace' in js and b'/data/' in js, '/static/gui.js is the GUI script')

for path in ('/static/../x', '/static/..%2fx', '/static/nope.js', '/static/report.html', '/static/',
             '/static/a/report.js', '/static/./report.js', '/ui/2', '/ui/x', '/ui/0/1', '/ui/',
             '/favicon.ico', '/index.html'):
    st, _, _ = raw(path)
    t.eq(st, 404, f'GET {path}: status')
st, _, _ = raw('/?x=1')
t.eq(st, 400, 'GET /?x=1: status')

# ---- /data/<id>/report -----------------------------------------------------


def leaves(proc):
    """{leaf function: site} of a process of the report page's data."""
    fields = proc.get('site_fields', [])
    out = {}
    for s in proc.get('sites', []):
        site = dict(zip(fields, s))
        idx = exportlib.page_frames(proc, site)
        out[proc['frames'][idx[0]][0] if idx else None] = site
    return out


rep = t.report(peak)
rp = t.processes(rep, 1)[0] if rep else {'totals': {}}
doc = report('/data/0/report') or {}
procs = doc.get('processes') or [{}]
t.eq(doc.get('memtrace_html'), 1, 'report: memtrace_html')
t.eq(doc.get('filtered'), False, 'report: not filtered')
tot = procs[0].get('totals', {})
t.eq(tot.get('peak_bytes'), 156000, 'report: peak bytes')
t.eq(tot.get('peak_allocations'), 8, 'report: peak blocks')
t.eq(tot.get('allocations'), 14, 'report: allocations')
t.eq(tot.get('allocated_bytes'), 261999, 'report: allocated bytes')
t.eq(tot.get('leaked_bytes'), 54000, 'report: leaked bytes')
t.eq(tot.get('allocations'), rp['totals'].get('allocations'), 'report: allocations as memtrace report')
t.eq(max(procs[0].get('timeline', {}).get('heap_bytes') or [0]), 156000, 'report: timeline peak')
sites = leaves(procs[0])
for fn, by in (('site_a', 100000), ('site_b', 50000), ('site_c', 90000), ('site_e', 11999), ('many_blocks', 10000)):
    t.eq((sites.get(fn) or {}).get('allocated_bytes'), by, f'report: {fn} allocated bytes')

# the sparklines' data: live bytes of each site in 60 steps, highest in each
for fn, top, last in (('site_a', 100000, None), ('site_b', 50000, 50000), ('site_c', 90000, None),
                      ('many_blocks', 10000, None)):
    ser = (sites.get(fn) or {}).get('live_series') or [0]
    t.eq(len(ser), 60, f'report: {fn} live_series steps')
    t.eq(max(ser), top, f'report: {fn} live_series highest')
    if last is not None:
        t.eq(ser[-1], last, f'report: {fn} live_series at the end (leaked)')
    t.eq(ser[0], 0, f'report: {fn} live_series at the start (gt-peak sleeps 300 ms first)')
sa = (sites.get('site_a') or {}).get('live_series') or []
sc = (sites.get('site_c') or {}).get('live_series') or []
t.check(sa and sc and sa.index(100000) < sc.index(90000), 'report: site_a is live before site_c')
html = exportlib.export(t, peak, 'html', out=t.path('peak.html')) or b''
data = html.split(b'<script type="application/json" id="memtrace-data">', 1)[-1].split(b'</script>', 1)[0]
t.check(b'"frames"' in data and b'live_series' not in data, 'the html export\'s data has no live_series')

doc = report('/data/0/report?size_min=50000') or {}
procs = doc.get('processes') or [{}]
t.eq(doc.get('filtered'), True, 'report size_min=50000: filtered')
t.eq(procs[0].get('totals', {}).get('allocated_bytes'), 240000, 'report size_min=50000: allocated bytes')
t.eq(sorted(leaves(procs[0])), ['site_a', 'site_b', 'site_c'], 'report size_min=50000: the sites')
doc = report('/data/0/report?lifetime=only_leaked') or {}
procs = doc.get('processes') or [{}]
t.eq(procs[0].get('totals', {}).get('allocated_bytes'), 54000, 'report only_leaked: allocated bytes')
doc = report('/data/1/report?weight=leaked') or {}
t.eq(doc.get('weight'), 'leaked', 'report of gt-temporary: weight')
t.eq(os.path.basename((doc.get('processes') or [{}])[0].get('exe') or ''), 'gt-temporary',
     'report of recording 1: gt-temporary')
for path in ('/data/0/report?function_regex=(', '/data/0/report?size_min=x', '/data/0/report?bogus=1'):
    get(path, 400)
get('/data/7/report', 404)

# ---- in Chromium -----------------------------------------------------------

os.makedirs(ARTIFACTS, exist_ok=True)
f = exportlib.browser(t, 'gui.js', BASE, 'gt-peak', ARTIFACTS)
if f:
    t.eq(f.get('listState'), 'ready', '/: drawn')
    t.eq([(e['name'], e['href']) for e in f.get('list', [])], [('gt-peak', '/ui/0'), ('gt-temporary', '/ui/1')],
         '/: the recordings and their links')
    t.eq((f.get('list') or [{}])[0].get('leaked'), '50,000 bytes definitely or indirectly lost (the leak scan); '
         '54,000 bytes not freed in all', '/: gt-peak\'s leaked column is its lost block')
    t.eq(f.get('url'), BASE + '/ui/0', 'a click on gt-peak opens /ui/0')
    t.eq(f.get('state'), 'ready', '/ui/0: drawn')
    t.eq(f.get('heading'), 'gt-peak', '/ui/0: heading')
    fig = f.get('figures', {})
    t.eq(fig.get('peak', {}).get('value'), '156 KB', 'summary: peak')
    t.check(fig.get('peak', {}).get('sub', '').startswith('156,000 bytes in 8 blocks'),
            f'summary: peak 156,000 bytes in 8 blocks ({fig.get("peak")})')
    t.eq(fig.get('allocated', {}).get('sub'), '261,999 bytes', 'summary: allocated')
    # the leak scan: site_b's block is lost, many_blocks' four still held
    t.eq(fig.get('leaked', {}).get('sub'), '50,000 bytes in 1 block: definitely + indirectly lost', 'summary: leaked')
    t.eq(fig.get('held', {}).get('sub'), '4,000 bytes in 4 blocks a pointer still reached at exit: not leaks',
         'summary: still held')
    op = f.get('opened') or {}
    t.eq((op.get('rows'), op.get('sort'), op.get('weight')),
         (['site_b', 'site_a', 'site_c', 'site_e', 'many_blocks'], 'descending', 'leaked'),
         'the page opens on the leaks: the flamegraph and the call sites')
    t.eq(op.get('cards', [])[:3], ['summary', 'Memory over time', 'Filters'],
         'the summary and the chart come before the filters')
    t.eq(f.get('rows'), ['site_a', 'site_c', 'site_b', 'site_e', 'many_blocks'],
         'call sites by allocated bytes, site_a first')
    t.eq(f.get('sort'), 'descending', 'the table is sorted by allocated bytes, descending')
    t.check(f.get('chartDrawn', 0) > 10000, f'the chart is drawn ({f.get("chartDrawn")} pixels)')
    t.eq(f.get('sparkHead'), True, 'the table has a column of sparklines')
    t.check(len(f.get('sparks') or []) == 5 and all((n or 0) > 100 for n in f.get('sparks')),
            f'each site\'s sparkline is drawn ({f.get("sparks")} pixels)')
    for k in ('from', 'to', 'lifetime', 'size_min', 'size_max', 'function_regex', 'source_regex',
              'negative_function_regex', 'group_allocations_min', 'group_leaked_allocations_min'):
        t.check(k in f.get('fields', []), f'the filter form has {k}')
    t.eq(f.get('links'), ['/data/0/export/' + e for e in EXPORTS], 'the export links: every format')
    t.check(f.get('flameDrawn', 0) > 10000, f'the flamegraph is drawn ({f.get("flameDrawn")} pixels)')
    b, a = f.get('before', {}), f.get('after', {})
    full = (b.get('all') or {}).get('w', 0)
    t.check(full > 0 and 0.3 < (b.get('site_a') or {}).get('w', 0) / full < 0.45,
            f'site_a is 100000/261999 of the flamegraph before the click ({b})')
    t.check(abs((a.get('site_a') or {}).get('w', 0) - full) < 1, f'a click on site_a zooms into it ({a})')
    t.eq(f.get('resetEnabled'), True, 'the zoom can be reset')
    t.eq((f.get('stack') or [None])[:2], ['site_a', 'main'], 'a click on site_a\'s row unfolds its stack')
    t.check('_start' in (f.get('stack') or []) or len(f.get('stack') or []) >= 3,
            f'the stack is whole ({f.get("stack")})')
    fl = f.get('filtered', {})
    t.eq(f.get('filteredState'), 'ready', 'size_min=50000: drawn')
    t.eq(fl.get('url'), BASE + '/ui/0?size_min=50000', 'size_min=50000: in the page\'s query')
    t.eq(fl.get('rows'), ['site_a', 'site_c', 'site_b'], 'size_min=50000: exactly site_a, site_c, site_b')
    t.eq(fl.get('figures', {}).get('allocated', {}).get('sub'), '240,000 bytes', 'size_min=50000: allocated')
    t.eq(fl.get('figures', {}).get('allocations', {}).get('value'), '3', 'size_min=50000: allocations')
    t.eq(fl.get('links'), ['/data/0/export/' + e + '?size_min=50000' for e in EXPORTS],
         'size_min=50000: the export links')
    t.check(fl.get('flameDrawn', 0) > 10000, 'size_min=50000: the flamegraph is drawn')
    t.eq(fl.get('sparks'), 3, 'size_min=50000: three sparklines')
    t.eq(fl.get('many_blocks'), None, 'size_min=50000: many_blocks is gone from the flamegraph')
    sa = fl.get('site_a') or {}
    t.check(abs(sa.get('w', 0) - full * 100000 / 240000) < 2, f'size_min=50000: site_a is 100000/240000 ({sa})')
    t.eq(f.get('reloaded'), {'rows': ['site_b', 'site_a', 'site_c'], 'sizeMin': '50000'},
         'a reload keeps the filters (and opens on the leaks again: site_b\'s block is lost)')
    t.eq(f.get('errors'), [], 'no console error')
    t.eq(f.get('badState'), 'error', 'a bad regex: an error')
    t.check('function_regex' in f.get('bad', {}).get('status', ''), f'a bad regex is reported ({f.get("bad")})')
    t.eq(f.get('bad', {}).get('rows'), ['site_a', 'site_c', 'site_b'], 'a bad regex leaves the page as it was')
    t.eq(f.get('bad', {}).get('url'), BASE + '/ui/0?size_min=50000',
         'a bad regex: the page\'s URL keeps the filter shown')
    t.eq(f.get('bad', {}).get('links'), ['/data/0/export/' + e + '?size_min=50000' for e in EXPORTS],
         'a bad regex: the downloads keep the filter shown')
    t.check('not applied' in f.get('bad', {}).get('status', ''), f'a bad regex: not applied ({f.get("bad")})')
    t.eq(f.get('mState'), 'error', 'from=200m: refused')
    st = (f.get('m') or {}).get('status', '')
    t.check("'200m' is not a duration" in st and '200ms, 1.5s, 2min, 1h' in st and '10%' in st,
            f'from=200m: the message names the accepted forms ({st!r})')
    t.eq(f.get('msState'), 'ready', 'from=200ms to=90%: drawn')
    ms = f.get('ms') or {}
    t.eq(ms.get('url'), BASE + '/ui/0?from=200ms&to=90%25', 'from=200ms to=90%: in the page\'s query')
    t.eq(ms.get('links'), ['/data/0/export/' + e + '?from=200ms&to=90%25' for e in EXPORTS],
         'from=200ms to=90%: in the downloads')
    rj = t.report(peak, ['--from', '200ms', '--to', '90%'])
    if rj:
        pj = t.processes(rj, 1)[0]
        n, span = pj['totals']['allocations'], pj['span_s']
        t.eq(ms.get('figures', {}).get('allocations', {}).get('value'), f'{n:,}',
             'from=200ms to=90%: allocations as report --json --from 200ms --to 90%')
        sub = ms.get('figures', {}).get('allocations', {}).get('sub', '')
        t.check(sub.startswith(f'{round(n / span):,} per second on average over the '),
                f'from=200ms to=90%: the rate divides by the {span} s kept ({sub!r}, {n} allocations)')
    t.check('from=200ms' in ms.get('note', '') and 'to=90%' in ms.get('note', ''),
            f'from=200ms to=90%: the page says how it is filtered ({ms.get("note")!r})')
    t.check('does not answer' in (f.get('down') or {}).get('status', ''),
            f'a server that does not answer is said so ({f.get("down")})')
    mi = f.get('missing') or {}
    t.eq((mi.get('status'), mi.get('type'), mi.get('state')), (404, 'text/html; charset=utf-8', 'error'),
         '/ui/9: an error page')
    t.check("no recording '9'" in mi.get('text', '') and mi.get('back', 0) >= 1,
            f'/ui/9: says there is no such recording, links back ({mi})')
    # single allocations, paged from the server, as /data/0/allocations says
    al = f.get('allocs') or {}
    t.eq(al.get('state'), 'ready', 'the allocations list: loaded')
    t.eq(len(al.get('rows') or []), 14, 'the allocations list: gt-peak\'s 14 allocations')
    t.check('1\u201314 of 14 allocations' in (al.get('status') or ''), f'the allocations list: 1-14 of 14 ({al.get("status")!r})')
    t.eq(sorted(s for s, _ in al.get('rows') or []), sorted([1000] * 10 + [100000, 50000, 90000, 11999]),
         'the allocations list: their sizes (peak.c)')
    t.eq([r for r in (al.get('bySize') or [])[:4]],
         [[100000, 'site_a'], [90000, 'site_c'], [50000, 'site_b'], [11999, 'site_e']],
         'the allocations list by size, descending: site_a, site_c, site_b, site_e')
    t.eq((al.get('stack') or [])[:2], ['site_a', 'main'], 'a click on an allocation shows its stack')
    t.eq(sorted(s for s, _ in f.get('allocsFiltered') or []), [50000, 90000, 100000],
         'the allocations list follows the filter (size_min=50000)')
    # the chart: its labels distinct and inside the canvas, its resolution said
    lab = f.get('chartLabels') or {}
    for kind in ('left', 'right', 'time'):
        texts = [x['text'] for x in lab.get(kind, [])]
        t.check(len(texts) >= 2 and len(set(texts)) == len(texts), f'chart {kind} axis: distinct labels ({texts})')
        t.check(all(x['x0'] >= 0 and x['x1'] <= lab.get('width', 0) for x in lab.get(kind, [])),
                f'chart {kind} axis: no label is cut ({lab.get(kind)}, width {lab.get("width")})')
    data0 = report('/data/0/report') or {}
    tl = (data0.get('processes') or [{}])[0].get('timeline', {})
    bs = tl.get('bucket_s', 0)
    t.check(f'one interval is {bs * 1000:.2f} ms' in (f.get('resolution') or ''),
            f'the chart says its resolution, {bs} s ({f.get("resolution")!r})')
    pt = (data0.get('processes') or [{}])[0].get('totals', {}).get('peak_time_s', -1)
    heap = tl.get('heap_bytes') or []
    t.check(bs > 0 and 0 <= int(pt / bs) < len(heap) and heap[int(pt / bs)] == 156000,
            f'the chart\'s interval of the peak time ({pt} s) holds the peak, 156000 bytes')
    # a drag from 0.25 s to 0.55 s: every view shows what was allocated then
    t.eq(f.get('brushState'), 'ready', 'a drag across the chart: drawn again')
    br = f.get('brush') or {}
    t.check(br.get('from', '').endswith('s') and br.get('to', '').endswith('s'),
            f'the drag sets from and to ({br.get("from")!r}, {br.get("to")!r})')
    try:
        lo, hi = float(br['from'][:-1]), float(br['to'][:-1])
    except (KeyError, ValueError):
        lo = hi = -1
    t.check(abs(lo - 0.25) < 3 * bs + 0.002 and abs(hi - 0.55) < 3 * bs + 0.002,
            f'the range dragged is about 0.25 s to 0.55 s ({lo}, {hi})')
    t.check(f'from={br.get("from")}' in br.get('url', '') and f'to={br.get("to")}' in br.get('url', ''),
            f'the drag is in the page\'s URL ({br.get("url")})')
    rj = t.report(peak, ['--from', br.get('from', '0'), '--to', br.get('to', '0')])
    if rj:
        n = t.processes(rj, 1)[0]['totals']['allocations']
        t.eq(br.get('figures', {}).get('allocations', {}).get('value'), f'{n:,}',
             'after the drag: allocations as report --json --from --to')
    t.eq(sorted(br.get('rows') or []), ['many_blocks', 'site_a', 'site_b'],
         'after the drag: the call sites of 0.25 s to 0.55 s (many_blocks, site_a, site_b)')
    t.check(br.get('reset') and br.get('range') and br['range'][1] - br['range'][0] < 300 * 0.6,
            f'the chart stays zoomed on the range, with a way back ({br.get("range")})')
    t.eq(f.get('outside'), [], 'no request goes anywhere but the server')
    # the temporal view: at 0.45 s, many_blocks' six, site_a and site_b were live
    lv = f.get('live') or {}
    t.eq(f.get('liveLabel'), '450 ms', 'the slider says the moment')
    t.eq(lv.get('state'), 'ready', 'live at 0.45 s: drawn')
    t.check('to=0.45s' in lv.get('url', '') and 'lifetime=only_not_deallocated_in_current_range' in lv.get('url', ''),
            f'live at 0.45 s: the filter in the URL ({lv.get("url")})')
    t.eq(sorted(lv.get('rows') or []), ['many_blocks', 'site_a', 'site_b'], 'live at 0.45 s: the sites (peak.c)')
    rj = t.report(peak, ['--to', '0.45s', '--lifetime', 'only_not_deallocated_in_current_range'])
    if rj:
        tot = t.processes(rj, 1)[0]['totals']
        t.eq(tot['allocations'], 8, 'report --to 0.45s only_not_deallocated: 6 + 1 + 1 blocks')
        t.eq(lv.get('figures', {}).get('allocations', {}).get('value'), f'{tot["allocations"]:,}',
             'live at 0.45 s: allocations as report --json')
        t.eq(lv.get('figures', {}).get('allocated', {}).get('sub'), f'{tot["allocated_bytes"]:,} bytes',
             'live at 0.45 s: bytes as report --json (156,000)')
    # memtrace-server(1) lists the downloads the page offers
    with open(os.path.join(SRC, 'man', 'memtrace-server.1')) as mf:
        man = mf.read()
    dl = man[man.find('The download links are'):man.find('An unknown recording')]
    for e in EXPORTS:
        t.check(e in dl, f'memtrace-server(1) lists the download {e}')
    t.check(BASE + '/data/0/report?size_min=50000' in f.get('requests', []), 'the form fetches the report again')
    # the links the page made, followed: the filters reach the exports
    for link in fl.get('links', [])[2:3]:  # flamegraph.pl
        _, body = get(link)
        lines = [ln.rsplit(' ', 1) for ln in body.decode().splitlines() if ln]
        t.eq(sum(int(n) for _, n in lines), 240000, f'{link}: bytes')
        t.eq(sorted(s.split(';')[-1] for s, _ in lines), ['site_a', 'site_b', 'site_c'], f'{link}: leaves')
    for shot in ('gui-list.png', 'gui-recording.png', 'gui-filtered.png', 'gui-from-200ms.png', 'gui-brushed.png',
                 'gui-allocations.png', 'gui-live-at.png'):
        t.check(os.path.getsize(os.path.join(ARTIFACTS, shot)) > 10000, f'screenshot {shot}')

# ---- the leak kinds of gt-leakkinds (leakkinds.c), at 1024 pixels --------

lk_rec, lk_out = t.record([sys.argv[3], 'exit'], out=t.path('leakkinds.mtrace'))
noscan, _ = t.record([sys.argv[3], 'exit'], opts=['--no-scan'], out=t.path('noscan.mtrace'))
lk_proc, lk_port = serverlib.start(t, [lk_rec, noscan])
if lk_proc:
    with OPENER.open(f'http://127.0.0.1:{lk_port}/list', timeout=60) as r:
        listed = json.loads(r.read())
    t.eq([e.get('lost_bytes') for e in listed], [580, None],
         '/list: lost_bytes, 580 B lost in gt-leakkinds; null for a recording without a scan')
    want = {k: [0, 0] for k in ('definite', 'indirect', 'possible', 'reachable')}
    for m in re.finditer(r'^block [0-9a-f]+ (\d+) (\w+)$', lk_out, re.M):
        want[m.group(2)][0] += 1
        want[m.group(2)][1] += int(m.group(1))
    lk = (t.only_process(t.report(lk_rec)) or {}).get('leak_kinds') or {}
    # possibly lost: leakkinds.c's block and pthread_create's thread
    # storage (its size the C library's), as the report says
    possible = [lk.get('possible_allocations'), lk.get('possible_bytes')]
    t.check(possible[1] > want['possible'][1], f'gt-leakkinds: possibly lost, its block and more ({possible})')
    # over 400 bytes nothing is lost: a fresh page would open on the peak
    lk400 = (t.only_process(t.report(lk_rec, ['--size-min', '400'])) or {}).get('leak_kinds') or {}
    t.eq(lk400.get('definite_bytes', -1) + lk400.get('indirect_bytes', -1), 0, 'gt-leakkinds: nothing lost over 400 B')
    lost = [want['definite'][0] + want['indirect'][0], want['definite'][1] + want['indirect'][1]]

    def blocks(n, b):
        return f'{b:,} byte{"s" * (b != 1)} in {n:,} block{"s" * (n != 1)}'

    g = exportlib.browser(t, 'pages.js', f'http://127.0.0.1:{lk_port}/ui/0', '1024', '',
                          'definite,indirect,reachable,possible', 'size_min=400',
                          os.path.join(ARTIFACTS, 'gui-leak-kinds.png'))
    if g:
        first = g['first']
        t.eq(g['errors'], [], 'gt-leakkinds GUI: no console error')
        t.eq([(s['shown'], s['value']) for s in first['selectors']], [(True, 'lost')] * 2,
             'gt-leakkinds GUI: a leak-kind selector over the flamegraph and the call sites, on definitely + '
             'indirectly lost')
        t.eq(first['figures'].get('leaked', {}).get('sub'), blocks(*lost) + ': definitely + indirectly lost',
             'gt-leakkinds GUI: leaked is the lost blocks')
        t.eq(first['figures'].get('held', {}).get('sub'), blocks(*want['reachable']) +
             ' a pointer still reached at exit: not leaks', 'gt-leakkinds GUI: still held is the reachable blocks')
        t.eq(first['total'], f'Leaked bytes: {lost[1]:,} bytes in total', 'gt-leakkinds GUI: the flamegraph opens on them')
        for k, label, n_b in (('definite', 'definitely lost', want['definite']),
                              ('indirect', 'indirectly lost', want['indirect']),
                              ('reachable', 'still held (reachable)', want['reachable']),
                              ('possible', 'possibly lost', possible)):
            st = g['kinds'].get(k, {})
            t.eq(st.get('figures', {}).get('leaked', {}).get('sub'), blocks(*n_b) + ': ' + label,
                 f'gt-leakkinds GUI: kind {k}: the summary')
            t.eq(st.get('total'), f'Leaked bytes: {n_b[1]:,} bytes in total', f'gt-leakkinds GUI: kind {k}: the flamegraph')
        fl = g.get('filtered') or {}
        t.eq([s['value'] for s in fl.get('selectors', [])], ['possible'] * 2,
             'gt-leakkinds GUI: the kind picked stays picked under a new filter')
        t.eq(fl.get('figures', {}).get('leaked', {}).get('sub'),
             blocks(lk400.get('possible_allocations', -1), lk400.get('possible_bytes', -1)) + ': possibly lost',
             'gt-leakkinds GUI size_min=400: possibly lost, as report --size-min 400')
        t.eq((fl.get('weight'), fl.get('sorted')), ('leaked', ['leaked_bytes']),
             'gt-leakkinds GUI size_min=400: picking a kind picked the leaks, kept under the filter')
        t.check(g['chartButtons'] and all(b['lines'] == 1 for b in g['chartButtons']),
                f'GUI at 1024 px: the chart\'s buttons each on one line ({g["chartButtons"]})')
        t.eq(g['cards'][:4], ['summary', 'Memory over time', 'Filters', 'Query'],
             'GUI: the summary and the chart come before the filters and the query')
    serverlib.stop(t, lk_proc)

# SIGTERM: a clean stop, and (in the ASan build) no leak or error reported
serverlib.stop(t, proc)

t.finish()
