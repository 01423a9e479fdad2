"""server-api: `memtrace server` on recordings of gt-peak and gt-temporary,
asked over HTTP.  The figures of every endpoint are checked against the
JSON report and the exports of the same recordings and against what peak.c
derives (peak 156000 bytes; 14 allocations, 261999 bytes; leaked 5 blocks,
54000 bytes: site_b's 50000 and 4 of many_blocks' 1000), with bytehound's
filters, sorting and paging; then bad parameters (400), unknown ids and
paths (404), path traversal (404), other methods (405), a foreign Host
(403), 32 clients at once, and SIGTERM (exit 0).

Run as `python3 test_api.py GT_PEAK GT_TEMPORARY`."""

import http.client
import json
import os
import random
import signal
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request

import serverlib

t, peak, temp, proc, PORT = serverlib.setup('server-api')
M = t.memtrace
OPENER = serverlib.OPENER


def start(files):
    return serverlib.start(t, files)


BASE = f'http://127.0.0.1:{PORT}'


def get(path, want=200):
    """(status, headers, body bytes) of GET PATH; checks the status."""
    try:
        with OPENER.open(BASE + path, timeout=120) as r:
            st, hdr, body = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        st, hdr, body = e.code, e.headers, e.read()
    t.eq(st, want, f'GET {path}: status')
    return st, hdr, body


def get_json(path, want=200):
    st, hdr, body = get(path, want)
    try:
        doc = json.loads(body)
    except ValueError as x:
        t.fail(f'GET {path}: not JSON ({x}): {body[:200]!r}')
        return None
    t.check(hdr.get('Content-Type', '').startswith('application/json'), f'GET {path}: a JSON content type')
    return doc


def raw(method, path, host=None):
    """A request sent as it is (no client-side path normalization)."""
    c = http.client.HTTPConnection('127.0.0.1', PORT, timeout=60)
    c.putrequest(method, path, skip_host=host is not None, skip_accept_encoding=True)
    if host is not None:
        c.putheader('Host', host)
    c.endheaders()
    r = c.getresponse()
    out = r.status, dict(r.getheaders()), r.read()
    c.close()
    return out


def q(**kw):
    return '?' + urllib.parse.urlencode(kw)


def leaf(frames):
    return frames[0]['function'] if frames else None


# ---- /list -----------------------------------------------------------------

rep_p = t.report(peak)
rep_t = t.report(temp)
pp = t.processes(rep_p, 1)[0] if rep_p else {'totals': {}, 'pid': None}
pt = t.processes(rep_t, 1)[0] if rep_t else {'totals': {}, 'pid': None}

lst = get_json('/list') or []
t.eq(len(lst), 2, '/list: two recordings')
if len(lst) == 2:
    t.eq([e.get('id') for e in lst], [0, 1], '/list: ids')
    t.eq(lst[0].get('file'), peak, '/list: file of 0')
    t.eq(lst[1].get('file'), temp, '/list: file of 1')
    t.eq(lst[0].get('pid'), pp.get('pid'), '/list: pid of 0')
    t.eq(lst[1].get('pids'), [pt.get('pid')], '/list: pids of 1')
    t.eq(os.path.basename(lst[0].get('exe') or ''), 'gt-peak', '/list: exe of 0')
    t.eq(lst[0].get('allocations'), 14, '/list: allocations of gt-peak')
    t.eq(lst[0].get('allocated_bytes'), 261999, '/list: allocated bytes of gt-peak')
    t.eq(lst[0].get('leaked_bytes'), 54000, '/list: leaked bytes of gt-peak')
    # the leak scan: site_b's block lost (many_blocks' still held)
    lk = pp.get('leak_kinds') or {}
    t.eq(lst[0].get('lost_bytes'), 50000, '/list: lost bytes of gt-peak (site_b)')
    t.eq(lst[0].get('lost_bytes'), lk.get('definite_bytes', 0) + lk.get('indirect_bytes', 0),
         '/list: lost bytes, the report\'s definite and indirect')
    t.eq(lst[1].get('allocations'), pt['totals'].get('allocations'), '/list: allocations of gt-temporary')
    t.eq(lst[0].get('sites'), len(pp.get('sites', [])), '/list: call sites of gt-peak')
    t.check((lst[0].get('duration_s') or 0) >= 0.55, f'/list: gt-peak runs 600 ms ({lst[0].get("duration_s")})')
    t.check(isinstance(lst[0].get('start_time'), float) and lst[0]['start_time'] > 1.5e9,
            '/list: start_time is a Unix time')
    t.check((lst[0].get('maximum_backtrace_depth') or 0) >= 2, '/list: maximum_backtrace_depth')
    t.eq(lst[0]['processes'][0].get('peak_bytes'), 156000, '/list: peak of gt-peak')

# ---- /summary --------------------------------------------------------------


def summary_totals(path):
    s = get_json(path)
    procs = (s or {}).get('processes', [])
    t.eq(len(procs), 1, f'{path}: one process')
    return procs[0].get('totals') if procs else None


t.eq(summary_totals('/data/last/summary'), pt['totals'], '/data/last/summary totals = report --json of gt-temporary')
tot0 = summary_totals('/data/0/summary')
t.eq(tot0, pp['totals'], '/data/0/summary totals = report --json of gt-peak')
for k, v in (('allocations', 14), ('allocated_bytes', 261999), ('frees', 9), ('peak_bytes', 156000),
             ('peak_allocations', 8), ('leaked_allocations', 5), ('leaked_bytes', 54000)):
    t.eq((tot0 or {}).get(k), v, f'/data/0/summary: totals {k} of gt-peak')
rl = t.report(peak, ['--lifetime', 'only_leaked'])
if rl:
    t.eq(summary_totals('/data/0/summary?lifetime=only_leaked'), t.processes(rl, 1)[0]['totals'],
         'summary?lifetime=only_leaked = report --lifetime only_leaked')
s = get_json(f'/data/0/summary?pid={pp.get("pid")}')
t.eq(len((s or {}).get('processes', [])), 1, 'summary?pid=PID: that process')

# ---- /allocations ----------------------------------------------------------


def allocations(**kw):
    d = get_json('/data/0/allocations' + q(**kw)) or {}
    return d, d.get('allocations', [])


d, a = allocations(size_min=50000, sort_by='size', order='dsc')
t.eq([x['size'] for x in a], [100000, 90000, 50000], 'allocations size_min=50000 by size dsc: sizes')
t.eq(d.get('total_count'), 3, 'allocations size_min=50000: total_count')
t.eq([leaf(x['backtrace']) for x in a], ['site_a', 'site_c', 'site_b'], 'allocations size_min=50000: leaf functions')
if len(a) == 3:
    t.eq([x['deallocation'] is None for x in a], [False, False, True], 'site_b is never freed, a and c are')
    # Sleeps only get longer under load: lower bounds from peak.c's 300 ms
    # sleeps, upper bounds from the run's own recorded duration.
    run_s = pp.get('duration_s') or 0
    t.check(0.25 <= a[0]['timestamp_s'] <= run_s, f'site_a allocates after 300 ms, within the run ({a[0]["timestamp_s"]})')
    t.check(0.25 <= a[0]['deallocation']['lifetime_s'] <= run_s,
            f'site_a lives at least 300 ms, within the run ({a[0]["deallocation"]})')
    t.eq(a[0]['pid'], pp.get('pid'), 'allocations: pid')
    t.eq(a[0]['thread'], pp.get('pid'), 'allocations: thread (the main thread)')
    t.eq(a[0]['backtrace'][1]['function'], 'main', 'allocations: site_a is called by main')
    t.eq(os.path.basename(a[0]['backtrace'][0]['file'] or ''), 'peak.c', 'allocations: frame file')

# paging: sizes of every allocation by size, descending, are known
ALL = [100000, 90000, 50000, 11999] + [1000] * 10
d, a = allocations(sort_by='size', order='dsc', count=100)
t.eq([x['size'] for x in a], ALL, 'allocations by size dsc: all 14')
t.eq(d.get('total_count'), 14, 'allocations: total_count 14')
_, a = allocations(sort_by='size', order='dsc', count=2)
t.eq([x['size'] for x in a], ALL[:2], 'count=2')
_, a = allocations(sort_by='size', order='dsc', skip=2, count=2)
t.eq([x['size'] for x in a], ALL[2:4], 'skip=2 count=2')
_, a = allocations(sort_by='size', order='dsc', skip=12, count=5)
t.eq([x['size'] for x in a], ALL[12:], 'skip=12 count=5: the last 2')
_, a = allocations(sort_by='size', order='asc', count=3)
t.eq([x['size'] for x in a], [1000, 1000, 1000], 'by size asc: the smallest first')
_, a = allocations(sort_by='size', count=0)
t.eq(a, [], 'count=0: none')
d, a = allocations()
t.eq(len(a), 14, 'default sort and count: every one of 14')
t.eq([x['index'] for x in a], list(range(14)), 'default: by timestamp, ascending')
ts = [x['timestamp_s'] for x in a]
t.eq(ts, sorted(ts), 'default: timestamps ascending')
_, a = allocations(sort_by='timestamp', order='dsc', count=1)
t.eq([leaf(x['backtrace']) for x in a], ['site_e'], 'by timestamp dsc: site_e was last')
_, a = allocations(sort_by='address', order='asc')
addrs = [int(x['address'], 16) for x in a]
t.check(len(addrs) == 14 and addrs == sorted(addrs), 'by address asc: addresses ascending')

d, a = allocations(lifetime='only_leaked', source_regex=r'peak\.c$', count=50)
t.eq(sum(x['size'] for x in a), 54000, 'only_leaked, source_regex=peak.c$: 54000 bytes')
t.eq(sorted(x['size'] for x in a), [1000] * 4 + [50000], 'only_leaked: b and 4 of many')
t.check(all(x['deallocation'] is None for x in a), 'only_leaked: none freed')
d, a = allocations(function_regex='^many_blocks$', size_max=1000, lifetime='only_temporary')
t.eq(d.get('total_count'), 0, 'many_blocks has no temporary')

# ---- /allocation_groups ----------------------------------------------------


def groups(**kw):
    d = get_json('/data/0/allocation_groups' + q(**kw)) or {}
    return d.get('groups', [])


g = groups(sort_by='all.size', order='dsc')
t.check(g and leaf(g[0]['backtrace']) == 'site_a', 'groups by all.size dsc: site_a first')
if g:
    t.eq(g[0]['all']['size'], 100000, 'groups: site_a all.size')
    t.eq(g[0]['all']['allocated_count'], 1, 'groups: site_a all.allocated_count')
t.eq([leaf(x['backtrace']) for x in g][:5], ['site_a', 'site_c', 'site_b', 'site_e', 'many_blocks'],
     'groups by all.size dsc: order of the own sites')
g = groups(group_leaked_allocations_min='100%', source_regex=r'peak\.c$')
t.eq([leaf(x['backtrace']) for x in g], ['site_b'], 'group_leaked_allocations_min=100%: site_b alone')
g = groups(group_leaked_allocations_min='100%')
t.check('site_b' in [leaf(x['backtrace']) for x in g]
        and not {'site_a', 'site_c', 'site_e', 'many_blocks'} & {leaf(x['backtrace']) for x in g},
        'group_leaked_allocations_min=100%: site_b and no other own site')
g = groups(lifetime='only_leaked', function_regex='^many_blocks$')
if t.eq(len(g), 1, 'only_leaked many_blocks: one group'):
    om, al = g[0]['only_matched'], g[0]['all']
    t.eq((om['allocated_count'], om['leaked_count'], om['size']), (4, 4, 4000), 'many_blocks only_matched')
    t.eq((al['allocated_count'], al['leaked_count'], al['size']), (10, 4, 10000), 'many_blocks all')
g = groups(group_allocations_min=2)
t.eq([leaf(x['backtrace']) for x in g], ['many_blocks'], 'group_allocations_min=2: many_blocks')
for key in ('min_timestamp', 'max_timestamp', 'interval', 'allocated_count', 'leaked_count', 'size'):
    for part in ('only_matched', 'all'):
        for order in ('asc', 'dsc'):
            g = groups(sort_by=f'{part}.{key}', order=order)
            v = [x[part][key] or 0 for x in g]
            t.check(len(g) == len(pp.get('sites', [])) and v == sorted(v, reverse=order == 'dsc'),
                    f'groups sort_by={part}.{key} order={order}: sorted ({v})')
g2 = groups(sort_by='all.size', order='dsc', skip=1, count=2)
t.eq([leaf(x['backtrace']) for x in g2], ['site_c', 'site_b'], 'groups skip=1 count=2')

# ---- tree, exports, timeline, mmaps ----------------------------------------

_, hdr, body = get('/data/0/allocation_ascii_tree' + q(view='leaks'))
tree = body.decode()
rc, so, _ = t.run([M, 'report', '--leaks=all', peak])
t.check(tree.strip() and tree.strip() in so, f'ascii tree view=leaks is the tree of report --leaks=all (every block not freed):\n{tree}')
t.check(hdr.get('Content-Type', '').startswith('text/plain'), 'ascii tree: text/plain')
_, _, body = get('/data/0/allocation_ascii_tree' + q(lifetime='only_leaked'))
tree = body.decode()
t.check(tree.startswith('calls: 5 allocations (54.0 KB)'), f'ascii tree only_leaked: 5 allocations\n{tree}')
t.check('site_b' in tree and 'many_blocks' in tree and 'site_a' not in tree, 'ascii tree only_leaked: b, many')


def cli_export(fmt, *args):
    p = subprocess.run([M, 'export', '--format', fmt, *args, peak], capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode(errors='replace')


st, _, body = get('/data/0/export/flamegraph.pl')
stacks = [ln.rpartition(' ') for ln in body.decode().splitlines()]
t.eq(sum(int(w) for _, _, w in stacks), 261999, 'flamegraph.pl sums to the allocated bytes')
t.eq(body, cli_export('folded')[1], 'flamegraph.pl = memtrace export --format folded')
_, _, body = get('/data/0/export/flamegraph.pl' + q(weight='leaked', source_regex=r'peak\.c$'))
t.eq(sum(int(ln.rpartition(' ')[2]) for ln in body.decode().splitlines()), 54000,
     'flamegraph.pl weight=leaked, own sites: 54000')
_, hdr, _ = get('/data/0/export/flamegraph.pl/stacks.txt')
t.eq(hdr.get('Content-Disposition'), 'attachment; filename="stacks.txt"', 'a download name')
for path, fmt in (('flamegraph', 'svg'), ('heaptrack', 'heaptrack'), ('pprof', 'pprof'), ('massif', 'massif'),
                  ('speedscope', 'speedscope'), ('gprof2dot', 'gprof2dot'), ('json', 'json'), ('html', 'html')):
    rc, out, err = cli_export(fmt)
    # until an exporter exists it fails: the server says why, as 500
    st, hdr, body = get('/data/0/export/' + path, 200 if rc == 0 else 500)
    if rc == 0:
        t.eq(body, out, f'export/{path} = memtrace export --format {fmt}')
    else:
        msg = json.loads(body).get('error', '')
        t.check(msg and msg in err, f'export/{path}: the exporter\'s error {msg!r} ({err.strip()!r})')

tl = get_json('/data/0/timeline') or {}
tp = (tl.get('processes') or [{}])[0]
t.eq(len(tp.get('time_s', [])), 200, 'timeline: 200 buckets by default')
t.eq(max(tp.get('max_heap_bytes') or [0]), 156000, 'timeline: maximum heap = the peak, 156000')
t.eq(max(tp.get('heap_bytes') or [0]), 156000, 'timeline: heap at a bucket end reaches 156000 (held 300 ms)')
t.eq((tp.get('heap_bytes') or [0])[-1], 54000, 'timeline: heap at the end = leaked 54000')
t.eq((tp.get('leaked_bytes') or [0])[-1], 54000, 'timeline: leaked by the end 54000')
t.eq(sum(tp.get('allocations') or []), 14, 'timeline: 14 allocations')
t.eq(sum(tp.get('frees') or []), 9, 'timeline: 9 frees')
first = next((i for i, v in enumerate(tp.get('max_heap_bytes') or []) if v == 156000), None)
t.check(first is not None and abs(tp['time_s'][first] - pp['totals'].get('peak_time_s', -1)) < 0.01,
        f'timeline: the peak is reached in the bucket of peak_time_s {pp["totals"].get("peak_time_s")}')
tl = get_json('/data/0/timeline' + q(buckets=10, lifetime='only_leaked')) or {}
tp = (tl.get('processes') or [{}])[0]
t.eq(len(tp.get('heap_bytes', [])), 10, 'timeline buckets=10')
t.eq((tp.get('heap_bytes') or [0])[-1], 54000, 'timeline only_leaked: 54000 at the end')
t.eq(sum(tp.get('frees') or [1]), 0, 'timeline only_leaked: no frees')

# gt-peak maps nothing itself, and its blocks are below glibc's mmap
# threshold: no mapping calls but malloc's moves of the program break
# (gt-mmaps checks the answer of a program that makes them)
ops = get_json('/data/0/mmaps').get('operations', [])
t.check(ops and all(list(o) == ['brk'] and o['brk']['by_allocator'] for o in ops),
        f'/mmaps of gt-peak: only malloc\'s moves of the break ({ops[:1]})')
# gt-peak calls no mallopt: an empty list (gt-mallopts checks one with calls)
t.eq(get_json('/data/0/mallopts'), [], '/mallopts of a recording without calls')

_, hdr, body = get('/')
# "/" is the web GUI (tests/present/server/test_gui.py): its script reads /list
t.check(b'/static/gui.js' in body and hdr.get('Content-Type', '').startswith('text/html'),
        'the index page is the web GUI')

# ---- errors ----------------------------------------------------------------


def error(path, want, needle):
    d = get_json(path, want) or {}
    t.check(needle in d.get('error', ''), f'GET {path}: error names {needle!r} ({d.get("error")!r})')


error('/data/0/allocations?bogus=1', 400, 'bogus')
error('/data/0/allocations?size_min=abc', 400, 'size_min')
error('/data/0/allocations?sort_by=weight', 400, 'sort_by')
error('/data/0/allocations?order=up', 400, 'order')
error('/data/0/allocations?count=-1', 400, 'count')
error('/data/0/allocations?skip=2000000', 400, 'skip')
error('/data/0/allocation_groups?sort_by=all.bogus', 400, 'sort_by')
error('/data/0/allocation_groups?sort_by=size', 400, 'sort_by')
error('/data/0/summary?lifetime=sometimes', 400, 'lifetime')
error('/data/0/summary?function_regex=(', 400, 'function_regex')
error('/data/0/summary?group_leaked_allocations_min=120%25', 400, 'group_leaked_allocations_min')
error('/data/0/timeline?buckets=0', 400, 'buckets')
error('/data/0/allocation_ascii_tree?view=tall', 400, 'view')
error('/data/0/export/flamegraph.pl?weight=heavy', 400, 'weight')
error('/data/0/summary?sort_by=size', 400, 'sort_by')
error('/list?x=1', 400, "'x'")
error('/data/2/summary', 404, "'2'")
error('/data/-1/summary', 404, "'-1'")
error('/data/lastt/summary', 404, 'lastt')
error('/data/0/nothing', 404, 'endpoint')
error('/data/0/summary/extra', 404, 'endpoint')
error('/data/0/summary?pid=1', 404, 'process 1')
error('/favicon.ico', 404, 'no such')

for path in ('/data/0/../../etc/passwd', '/data/0/%2e%2e/%2e%2e/etc/passwd', '/%2e%2e/%2e%2e/etc/passwd',
             '/..%2f..%2fetc%2fpasswd', '/data/0/%2E%2E/summary', '//etc/passwd', '/etc/passwd',
             '/data/0/export/flamegraph.pl/..%2f..%2fetc%2fpasswd', '/data/0/export/flamegraph.pl/%2e%2e',
             '/data/./0/summary', '/./list', '/list/..', '/data/0/export/flamegraph.pl/.hidden'):
    st, _, body = raw('GET', path)
    t.eq(st, 404, f'GET {path} (as sent): status')
    t.check(b'root:' not in body, f'GET {path}: no file content')
for m in ('POST', 'PUT', 'DELETE', 'PATCH'):
    st, hdr, body = raw(m, '/list')
    t.eq(st, 405, f'{m} /list: status')
    t.eq(hdr.get('Allow'), 'GET, HEAD', f'{m} /list: Allow header')
st, hdr, body = raw('HEAD', '/data/0/summary')
t.eq((st, body), (200, b''), 'HEAD: status 200, no body')
st, _, body = raw('GET', '/list', host='evil.example')
t.eq(st, 403, 'a foreign Host (DNS rebinding) is refused')
st, _, _ = raw('GET', '/list', host=f'localhost:{PORT}')
t.eq(st, 200, 'Host localhost:PORT is served')

# ---- 32 clients at once ----------------------------------------------------

JOBS = [
    ('/list', lambda d: len(d) == 2),
    ('/data/0/summary', lambda d: d['processes'][0]['totals']['peak_bytes'] == 156000),
    ('/data/last/summary', lambda d: d['processes'][0]['totals'] == pt['totals']),
    ('/data/0/allocations?size_min=50000&sort_by=size&order=dsc',
     lambda d: [x['size'] for x in d['allocations']] == [100000, 90000, 50000]),
    ('/data/0/allocation_groups?sort_by=all.size&order=dsc',
     lambda d: d['groups'][0]['all']['size'] == 100000),
    ('/data/0/summary?lifetime=only_leaked&source_regex=peak%5C.c%24',
     lambda d: d['processes'][0]['totals']['allocated_bytes'] == 54000),
    ('/data/0/timeline?buckets=50', lambda d: max(d['processes'][0]['max_heap_bytes']) == 156000),
    ('/data/0/export/flamegraph.pl', lambda b: sum(int(ln.rpartition(' ')[2]) for ln in b.splitlines()) == 261999),
]
results = [None] * 32
barrier = threading.Barrier(32)


def client(i):
    path, ok = JOBS[i % len(JOBS)]
    try:
        barrier.wait(timeout=30)
        with OPENER.open(BASE + path, timeout=120) as r:
            body = r.read().decode()
        doc = body if 'flamegraph.pl' in path else json.loads(body)
        results[i] = (path, bool(ok(doc)))
    except Exception as x:  # noqa: BLE001 - reported as a failure below
        results[i] = (path, f'{type(x).__name__}: {x}')


threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
for th in threads:
    th.start()
for th in threads:
    th.join(timeout=300)
for i, r in enumerate(results):
    t.check(r is not None and r[1] is True, f'parallel client {i}: {r}')

# ---- stopping, and the command line ----------------------------------------

proc.send_signal(signal.SIGTERM)
try:
    so, se = proc.communicate(timeout=30)
    t.eq(proc.returncode, 0, f'SIGTERM: exit status (stderr {se.strip()[-300:]!r})')
    t.check(f'http://127.0.0.1:{PORT}/' in so, f'the URL to open is printed ({so.strip()!r})')
except subprocess.TimeoutExpired:
    proc.kill()
    t.fail('SIGTERM did not stop the server within 30 s')

rc, so, _ = t.run([M, 'server', '--help'])
t.check(rc == 0 and '--listen' in so, 'server --help')
rc, so, _ = t.run([M, '--help'])
t.check('server' in so, 'memtrace --help lists server')


def one_error(argv, rc_want, needle, what):
    rc, so, se = t.run(argv, timeout=60)
    t.eq(rc, rc_want, f'{what}: exit status')
    lines = [ln for ln in se.splitlines() if ln.startswith('memtrace: error:')]
    t.check(len(lines) == 1 and needle in lines[0], f'{what}: one error line naming {needle!r}, got {se!r}')


bad = t.path('bad.mtrace')
with open(bad, 'wb') as f:
    f.write(b'not a recording at all')
port = random.randint(20000, 60999)
# a bad file among good ones is skipped (tests/security/test_server.py); alone,
# nothing loads
one_error([M, 'server', '--listen', f'127.0.0.1:{port}', bad], 1, 'bad.mtrace', 'a bad file')
one_error([M, 'server', '--listen', f'127.0.0.1:{port}', t.path('missing.mtrace')], 1, 'missing.mtrace',
          'a missing file')
one_error([M, 'server'], 2, 'recording', 'no file')
one_error([M, 'server', '--listen', 'here', peak], 1, 'here', 'an unknown host')
one_error([M, 'server', '--listen', '127.0.0.1:99999', peak], 2, '--listen', 'a bad port')
one_error([M, 'server', '--frobnicate', peak], 2, '--frobnicate', 'an unknown option')
# a port in use: ours, while a second server holds it
p2, port2 = start([peak])
if p2:
    one_error([M, 'server', '--listen', f'127.0.0.1:{port2}', peak], 1, 'in use', 'a port in use')
    p2.send_signal(signal.SIGINT)
    p2.communicate(timeout=30)
    t.eq(p2.returncode, 0, 'SIGINT: exit status')

t.finish()
