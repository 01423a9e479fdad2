"""Calls that tune the allocator (mallopt, malloc_trim); see mallopts.c."""
import json
import sys
import urllib.request

from gtlib import marker_line

SRC = 'mallopts.c'

# (function, param, raw_param, value, result, the function that called it)
WANT = [
    ('mallopt', 'M_TRIM_THRESHOLD', -1, 64 << 20, 1, 'tune', 'tune_trim'),
    ('mallopt', 'M_MMAP_THRESHOLD', -3, 1 << 20, 1, 'tune', 'tune_mmap'),
    ('malloc_trim', None, 0, 0, 1, 'trim', 'trim'),
    ('mallopt', 'M_MXFAST', 1, 1000000, 0, 'bad', 'bad'),
]


def check_process(t, p, label):
    if p is None:
        return
    m = p.get('mallopts')
    if not t.check(isinstance(m, list), f'{label}: a mallopts array ({m!r})'):
        return
    got = [(x.get('function'), x.get('param'), x.get('raw_param'), x.get('value'), x.get('result'))
           for x in m]
    t.eq(got, [w[:5] for w in WANT], f'{label}: the calls, in order')
    for x, w in zip(m, WANT):
        what = f'{label} {w[0]}({w[1] or w[3]})'
        t.check_frames(x, what, [(w[5], SRC, marker_line(SRC, 'site:' + w[6])), ('main', SRC, None)])
        t.check((x.get('site') or '').startswith(w[5]), f'{what}: site names {w[5]} ({x.get("site")!r})')
    times = [x.get('time_s', -1) for x in m]
    t.check(times == sorted(times) and all(0 <= s <= p.get('duration_s', -1) + 1e-6 for s in times),
            f'{label}: call times in order, within the run ({times}, {p.get("duration_s")})')
    t.check_site(t.site(p, 'big'), f'{label} big', allocations=1, allocated_bytes=524288, frees=1)
    # the calls' stacks are theirs alone: no site without allocations
    t.eq([s for s in p.get('sites', []) if not s.get('allocations')], [],
         f'{label}: sites without allocations')
    t.check_no_loss(p, label)


def check_text(t, rec, label):
    rc, out, err = t.run([t.memtrace, 'report', rec])
    t.eq(rc, 0, f'{label}: text report exit status ({err.strip()[-200:]!r})')
    for line in ('MALLOPT CALLS', 'mallopt(M_TRIM_THRESHOLD, 67108864) = 1 from:',
                 'mallopt(M_MMAP_THRESHOLD, 1048576) = 1 from:', 'malloc_trim(0) = 1 from:',
                 'mallopt(M_MXFAST, 1000000) = 0 from:'):
        t.check(line in out, f'{label}: the text report says {line!r}')


def check_server(t, rec):
    sys.path.insert(0, __file__.rsplit('/', 3)[0] + '/lib')
    import serverlib
    proc, port = serverlib.start(t, [rec])
    if proc is None:
        return
    with serverlib.OPENER.open(f'http://127.0.0.1:{port}/data/0/mallopts', timeout=30) as r:
        t.eq(r.status, 200, '/mallopts status')
        d = json.loads(r.read())
    got = [(x.get('function'), x.get('param'), x.get('raw_param'), x.get('value'), x.get('result'))
           for x in d]
    t.eq(got, [w[:5] for w in WANT], 'server /mallopts: the calls, in order')
    for x, w in zip(d, WANT):
        ts = x.get('timestamp') or {}
        t.check(isinstance(ts.get('secs'), int) and isinstance(ts.get('fract_nsecs'), int),
                f'/mallopts: bytehound\'s timestamp {{secs, fract_nsecs}} ({ts})')
        t.eq(((x.get('backtrace') or [{}])[0]).get('function'), w[5], '/mallopts: backtrace[0]')
        t.check(isinstance(x.get('thread'), int) and x['thread'] > 0, f'/mallopts: thread ({x.get("thread")})')
    # the GUI's page data: the calls among the timeline's markers
    with serverlib.OPENER.open(f'http://127.0.0.1:{port}/data/0/report', timeout=30) as r:
        page = json.loads(r.read())
    marks = [m.get('text') for pr in page.get('processes', []) for m in pr.get('markers', [])
             if m.get('value') == 0]
    t.eq(marks, ['mallopt(M_TRIM_THRESHOLD, 67108864) = 1', 'mallopt(M_MMAP_THRESHOLD, 1048576) = 1',
                 'malloc_trim(0) = 1', 'mallopt(M_MXFAST, 1000000) = 0'], 'GUI report: the calls as markers')
    proc.kill()
    proc.wait()


def check_html(t, rec):
    """The static report's (and the GUI's) timeline draws the calls as markers."""
    out = t.path('report.html')
    rc, _, err = t.run([t.memtrace, 'export', '--format', 'html', '-o', out, rec])
    if not t.eq(rc, 0, f'export --format html ({err.strip()[-200:]!r})'):
        return
    page = open(out, encoding='utf-8').read()
    for text in ('mallopt(M_TRIM_THRESHOLD, 67108864) = 1', 'mallopt(M_MMAP_THRESHOLD, 1048576) = 1',
                 'malloc_trim(0) = 1', 'mallopt(M_MXFAST, 1000000) = 0'):
        t.check(f'"value": 0, "text": "{text}"' in page, f'html: a timeline marker {text!r}')


def run(t, prog):
    rec, _ = t.record([prog])
    check_process(t, t.only_process(t.report(rec)), 'record')
    check_text(t, rec, 'record')
    check_html(t, rec)
    check_server(t, rec)
    # the standalone shim writes the same calls to its own file
    own = t.path('shim.mtrace')
    rc, _, se = t.run([prog], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': own})
    if t.eq(rc, 0, f'standalone run (stderr {se.strip()[-300:]!r})'):
        check_process(t, t.only_process(t.report(own)), 'shim')


def run_bpf(t, prog):
    """The BPF backend probes libc's mallopt and malloc_trim: the same calls,
    results and stacks."""
    rec, _ = t.record([prog], opts=['--backend=bpf'], out=t.path('bpf.mtrace'))
    p = t.only_process(t.report(rec))
    if p is not None:
        t.eq(p.get('backend'), 'bpf', 'backend')
    check_process(t, p, 'bpf')
