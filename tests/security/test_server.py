#!/usr/bin/env python3
"""test_server.py - attacks on `memtrace server` (issue 12), each of which
worked before the server was hardened:
  - regex bombs (?function_regex=.{1,32000} grew the server by gigabytes):
    the server's RSS stays within 200 MB of its start and every one is
    answered, 400 or within the time budget;
  - a page of another site (a foreign Origin, Sec-Fetch-Site: cross-site as
    an <img> sends it) or a rebound DNS name (a foreign Host): 403;
  - a server on a non-loopback address without the access token: 401; with
    it (Bearer header, token parameter, then the cookie it sets): 200;
  - 400 idle connections (they locked every client out for 300 s): a new
    client is still served within a few seconds;
  - a large export streams: the server's RSS grows by far less than the
    answer's size (it was built whole in memory);
  - one bad file among good ones is skipped and listed with its error
    (the server refused to start); only bad files: exit 1;
  - SIGTERM while requests run: the server is gone within about a second.
The recordings: a ground-truth program (argv[1]) and sqlite3 running
tools/sqlite-workload.sh, in a private temporary directory.  The server
listens on 127.0.0.1, and once, with its token, on 0.0.0.0.
"""
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import gtlib
import serverlib

t = gtlib.Case('security-server')
ROOT = os.environ.get('MEMTRACE_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..'))
RSS_BOUND = 200 << 20  # what a request may add to the server's RSS
RSS_KILL = 1536 << 20  # the watchdog ends a server that runs away anyway


def rss(pid):
    try:
        with open(f'/proc/{pid}/status') as f:
            m = re.search(r'VmRSS:\s+(\d+) kB', f.read())
        return int(m.group(1)) << 10 if m else 0
    except OSError:
        return 0


class Watch:
    """Samples the RSS of process P every 20 ms; kills it past RSS_KILL."""

    def __init__(self, p):
        self.p, self.peak, self.base, self.stop = p, 0, rss(p.pid), False
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def run(self):
        while not self.stop and self.p.poll() is None:
            r = rss(self.p.pid)
            self.peak = max(self.peak, r)
            if r > RSS_KILL:
                self.p.kill()
                return
            time.sleep(0.02)

    def grown(self):
        self.stop = True
        self.th.join()
        return self.peak - self.base


def start(files, listen='127.0.0.1', extra=(), env=None):
    """`memtrace server` on a free port; returns (process, port, first line
    of its stdout) once it answers HTTP, or (None, None, stderr) when it
    exits first."""
    for _ in range(20):
        port = random.randint(20000, 60999)
        # a sanitizer build keeps up to 256 MB of freed memory aside by
        # default: what the server holds is measured, not that
        e = dict(os.environ, **(env or {}))
        e['ASAN_OPTIONS'] = ':'.join(filter(None, [e.get('ASAN_OPTIONS'), 'quarantine_size_mb=16']))
        p = subprocess.Popen([t.memtrace, 'server', '--listen', f'{listen}:{port}', *extra, *files],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
        serverlib.SERVERS.append(p)
        deadline = time.time() + 60
        while time.time() < deadline and p.poll() is None:
            try:
                c = http.client.HTTPConnection('127.0.0.1', port, timeout=5)
                c.request('GET', '/static/none')
                c.getresponse().read()
                c.close()
                # the files load after the server starts: wait for them
                line = p.stdout.readline()
                m = re.search(r'\?token=(\S+)', line)
                serverlib.wait_loaded(port, timeout=30, headers={
                    'Authorization': 'Bearer ' + m.group(1)} if m else None)
                return p, port, line
            except OSError:
                time.sleep(0.05)
        if p.poll() is None:
            p.kill()
        _, se = p.communicate()
        if p.returncode == 1 and 'in use' in se:
            continue
        return None, None, se
    return None, None, 'no free port'


def get(port, path, headers=None, timeout=60):
    """(status, headers, body) of GET PATH; the status is the exception's
    text when there is no answer."""
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    try:
        c.request('GET', path, headers=headers or {})
        r = c.getresponse()
        out = r.status, dict(r.getheaders()), r.read()
    except OSError as x:
        out = repr(x), {}, b''
    c.close()
    return out


def error_of(body):
    try:
        doc = json.loads(body)
    except ValueError:
        return ''
    return doc.get('error', '') if isinstance(doc, dict) else ''


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


# ---- the recordings --------------------------------------------------------

small, _ = t.record([sys.argv[1]], out=t.path('small.mtrace'))
sql = t.path('work.sql')
subprocess.run(['sh', os.path.join(ROOT, 'tools', 'sqlite-workload.sh'), '-n', '200000', '-o', sql],
               check=True)
large, _ = t.record(['sqlite3', ':memory:', f'.read {sql}'], out=t.path('large.mtrace'), timeout=120)
bad = t.path('bad.mtrace')
with open(bad, 'w') as f:
    f.write('not a recording\n')
if t.failures:
    t.finish()

# ---- regex bombs -----------------------------------------------------------

proc, port, _ = start([small, large])
if proc is None:
    t.fail(f'the server did not start: {_!r}')
    t.finish()
w = Watch(proc)
bombs = ['.{1,32000}', '(.{1,32000}){1,32000}', '(a|aa|.)*(a|aa|.)*(a|aa|.)*$', '((.*)*)*x$',
         '(x+x+)+y', 'a' * 5000, '(' * 200 + 'a' + ')' * 200]
answers = {}


def ask(i, pattern):
    path = f'/data/{i % 2}/allocation_groups?' + urllib.parse.urlencode({'function_regex': pattern})
    t0 = time.time()
    st, _, body = get(port, path, timeout=120)
    answers[(i, pattern)] = (st, time.time() - t0, error_of(body))


threads = [threading.Thread(target=ask, args=(i, b)) for i in range(4) for b in bombs]
for th in threads:
    th.start()
for th in threads:
    th.join()
grown = w.grown()
t.check(proc.poll() is None, 'the server survives the regex bombs')
t.note(f'regex bombs: the server grew by {grown >> 20} MB')
t.check(grown < RSS_BOUND, f'regex bombs: the server grew by {grown >> 20} MB (at most {RSS_BOUND >> 20})')
for (i, b), (st, secs, err) in sorted(answers.items()):
    label = f'regex bomb {b[:24]!r} on recording {i % 2}'
    t.check(st in (200, 400), f'{label}: answered 200 or 400 (got {st})')
    t.check(secs < 30, f'{label}: answered in {secs:.1f} s (under 30)')
    if st == 400:
        t.check('function_regex' in err, f'{label}: the 400 names the parameter ({err!r})')
st, _, body = get(port, '/data/0/allocation_groups?function_regex=' + 'a' * 5000)
t.eq(st, 400, 'a 5000-byte regex: 400')
t.check('longer than' in error_of(body), f'a 5000-byte regex: the error says why ({error_of(body)!r})')
# A pattern that is short but runs into PCRE2's match limits on real frames:
# refused as too costly (400), not taken as matching nothing.
st, _, body = get(port, '/data/0/allocation_groups?' + urllib.parse.urlencode({'function_regex': r'^(\w*)*\d'}))
t.eq(st, 400, 'a catastrophic regex: 400')
t.check('too costly' in error_of(body) and 'function_regex' in error_of(body),
        f'a catastrophic regex: the error names the parameter and says why ({error_of(body)!r})')
stop(proc)
proc, port, _ = start([small, large])
if proc is None:
    t.fail(f'the server did not start: {_!r}')
    t.finish()

# ---- requests from other sites ---------------------------------------------

host = f'127.0.0.1:{port}'
st, hdr, _ = get(port, '/list', {'Origin': 'http://evil.example'})
t.eq(st, 403, 'a foreign Origin is refused')
t.check(not any(k.lower().startswith('access-control-') for k in hdr), f'no CORS headers ({hdr})')
st, _, _ = get(port, '/list', {'Origin': 'null'})
t.eq(st, 403, 'Origin: null (a sandboxed or file: page) is refused')
st, _, _ = get(port, '/data/0/export/json', {'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Mode': 'no-cors',
                                             'Sec-Fetch-Dest': 'image'})
t.eq(st, 403, 'an <img> of another site (Sec-Fetch-Site: cross-site) is refused')
st, _, _ = get(port, '/data/0/summary', {'Sec-Fetch-Site': 'same-site', 'Sec-Fetch-Mode': 'cors'})
t.eq(st, 403, 'a script of another port of this machine (same-site) is refused')
st, _, _ = get(port, '/list', {'Host': f'rebound.example:{port}'})
t.eq(st, 403, 'a foreign Host (DNS rebinding) is refused')
st, _, _ = get(port, '/list', {'Origin': f'http://{host}', 'Sec-Fetch-Site': 'same-origin'})
t.eq(st, 200, "the server's own pages are served")
st, _, _ = get(port, '/', {'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Mode': 'navigate',
                           'Sec-Fetch-Dest': 'document'})
t.eq(st, 200, 'a link from elsewhere may open the GUI page')

# ---- a large export streams --------------------------------------------------

w = Watch(proc)
c = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
size, status = 0, None
try:
    c.request('GET', '/data/1/export/json')
    r = c.getresponse()
    status = r.status
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        size += len(chunk)
except OSError as x:
    status = repr(x)
c.close()
grown = w.grown()
t.eq(status, 200, 'export/json of the large recording: status')
t.check(size > 50 << 20, f'export/json is large ({size >> 20} MB)')
t.note(f'export/json: {size >> 20} MB streamed, the server grew by {grown >> 20} MB')
t.check(grown < size // 2, f'export/json streams: the server grew by {grown >> 20} MB for {size >> 20} MB')

# ---- idle connections ----------------------------------------------------------

idle = []
try:  # an exception here is a failure of the test as a whole
    for _ in range(400):
        idle.append(socket.create_connection(('127.0.0.1', port), timeout=5))
    time.sleep(0.5)
    t0 = time.time()
    st, _, _ = get(port, '/list', timeout=10)
    secs = time.time() - t0
    t.eq(st, 200, 'a client is served while 400 idle connections are open')
    t.check(secs < 3, f'... within 3 s ({secs:.1f} s)')
finally:
    for s in idle:
        s.close()

# ---- SIGTERM while busy --------------------------------------------------------

# Requests that run for a while: exports nobody reads, and listings of a
# million allocations through a filter.
busy = []
for path in ['/data/1/export/json'] * 3 + ['/data/1/allocations?count=1000000&function_regex=.'] * 3:
    try:
        s = socket.create_connection(('127.0.0.1', port))
        s.sendall(f'GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n'.encode())
        busy.append(s)
    except OSError as x:
        t.fail(f'a busy request: {x!r}')
time.sleep(1)
t0 = time.time()
proc.send_signal(signal.SIGTERM)
try:
    proc.wait(timeout=10)
except subprocess.TimeoutExpired:
    pass
secs = time.time() - t0
t.check(proc.poll() is not None and secs < 1.5, f'SIGTERM while busy: gone in {secs:.2f} s (at most 1.5)')
t.eq(proc.returncode, 0, 'SIGTERM while busy: exit status')
for s in busy:
    s.close()
if proc.poll() is None:
    proc.kill()

# ---- a bad file among good ones ------------------------------------------------

proc, port, _ = start([small, bad, t.path('missing.mtrace'), large])
t.check(proc is not None, f'a server given a bad file and good ones starts ({_!r})')
if proc is not None:
    st, _, body = get(port, '/list')
    doc = json.loads(body) if st == 200 else []
    t.eq([d.get('id') for d in doc], [0, 1, 2, 3], '/list: every file, by the order given')
    t.check(len(doc) == 4 and 'not a memtrace recording' in doc[1].get('error', ''),
            f'/list: the bad file with its error ({doc[1] if len(doc) > 1 else None})')
    t.check(len(doc) == 4 and 'No such file' in doc[2].get('error', ''),
            f'/list: the missing file with its error ({doc[2] if len(doc) > 2 else None})')
    t.check(len(doc) == 4 and doc[3].get('allocations', 0) > 500000, '/list: the large recording is served')
    st, _, body = get(port, '/data/1/summary')
    t.eq(st, 404, 'the bad file: 404')
    t.check('did not load' in error_of(body), f'the bad file: the error says so ({error_of(body)!r})')
    st, _, _ = get(port, '/data/3/summary')
    t.eq(st, 200, 'the good file after the bad one is served')
    stop(proc)
rc, _, se = t.run([t.memtrace, 'server', '--listen', '127.0.0.1:1', bad, t.path('missing.mtrace')],
                  timeout=30)
t.eq(rc, 1, f'only bad files: exit 1 ({se.strip()[-200:]!r})')
t.check('no recording loaded' in se, f'only bad files: the error says so ({se.strip()[-200:]!r})')

# ---- a server off loopback needs its token ------------------------------------

proc, port, line = start([small], listen='0.0.0.0')
t.check(proc is not None, f'a server on 0.0.0.0 starts ({line!r})')
if proc is not None:
    m = re.search(r'\?token=([0-9a-f]{32})', line or '')
    t.check(m is not None, f'it prints its URL with a generated token ({line!r})')
    token = m.group(1) if m else 'x' * 32
    st, hdr, body = get(port, '/list')
    t.eq(st, 401, 'off loopback, a request without the token: 401')
    t.check('token' in error_of(body), f'the 401 says why ({error_of(body)!r})')
    st, _, _ = get(port, '/data/0/summary', {'Authorization': 'Bearer ' + 'f' * 32})
    t.eq(st, 401, 'a wrong token: 401')
    st, _, _ = get(port, '/data/0/summary', {'Authorization': 'Bearer ' + token})
    t.eq(st, 200, 'Authorization: Bearer TOKEN: 200')
    st, hdr, _ = get(port, '/?token=' + token)
    cookie = hdr.get('Set-Cookie', '')
    t.eq(st, 200, 'the URL printed at start: 200')
    t.check(cookie.startswith(f'memtrace_token={token}') and 'HttpOnly' in cookie and 'SameSite=Strict' in cookie,
            f'... and it sets the token as a cookie ({cookie!r})')
    st, _, _ = get(port, '/data/0/summary', {'Cookie': f'memtrace_token={token}'})
    t.eq(st, 200, "the cookie (the GUI's own requests): 200")
    st, _, _ = get(port, '/list', {'Authorization': 'Bearer ' + token, 'Host': f'rebound.example:{port}'})
    t.eq(st, 403, 'off loopback, a foreign Host is refused even with the token')
    stop(proc)
proc, port, line = start([small], listen='0.0.0.0', env={'MEMTRACE_TOKEN': 'a-token-from-the-environment'})
if t.check(proc is not None, 'a server on 0.0.0.0 with MEMTRACE_TOKEN starts'):
    st, _, _ = get(port, '/list', {'Authorization': 'Bearer a-token-from-the-environment'})
    t.eq(st, 200, 'MEMTRACE_TOKEN is the token')
    st, _, _ = get(port, '/list')
    t.eq(st, 401, 'MEMTRACE_TOKEN: a request without it: 401')
    stop(proc)

# ---- a request's memory budget, and requests nobody waits for anymore ------------

def cpu_s(pid):
    """User + system CPU seconds of process PID so far."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


# 400,000 live Python strings, each a malloc block (PYTHONMALLOC=malloc):
# the tables of a filtered reading of it outgrow 16 MiB; the small
# recording's do not.
py = os.path.realpath(sys.executable)
many, _ = t.record([py, '-c', 'x = [str(i) * 3 for i in range(400000)]'], out=t.path('many.mtrace'),
                   env=dict(os.environ, PYTHONMALLOC='malloc'), timeout=120)
proc, port, _ = start([many, small], extra=['--request-memory', '16'])
if t.check(proc is not None, f'a server with --request-memory 16 starts ({_!r})'):
    st, _, body = get(port, '/data/0/allocation_groups?function_regex=.')
    t.eq(st, 503, 'a filtered request whose tables outgrow --request-memory 16: 503')
    t.check('--request-memory' in error_of(body), f'... naming the option ({error_of(body)!r})')
    st, _, _ = get(port, '/data/1/allocation_groups?function_regex=.')
    t.eq(st, 200, 'the same request on a small recording fits the budget: 200')
    st, _, _ = get(port, '/data/0/summary')
    t.eq(st, 200, 'the server goes on serving after a refusal')
    stop(proc)
proc, port, _ = start([many], extra=['--request-memory', '1024'])
if t.check(proc is not None, f'a server with --request-memory 1024 starts ({_!r})'):
    st, _, _ = get(port, '/data/0/allocation_groups?function_regex=.')
    t.eq(st, 200, 'the same request within a larger budget: 200')
    # An export of about 700 MB (10 s) whose client leaves after its
    # first bytes: the server stops working on it at its next chunk.
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'GET /data/0/export/json?function_regex=. HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
    got = s.recv(65536)
    s.close()
    t.check(got.startswith(b'HTTP/1.1 200'), f'the export starts ({got[:40]!r})')
    time.sleep(0.5)
    c0 = cpu_s(proc.pid)
    time.sleep(2)
    used = cpu_s(proc.pid) - c0
    t.check(used < 0.3, f'an abandoned request stops: the server used {used:.2f} s of CPU in the 2 s after')
    stop(proc)

t.finish()
