"""top's continuous profiles (--pprof-every): the pprof files of
--output-dir, and --push to a profile store, against a receiver in the test
that checks each request as the store documents it and decodes every
profile with the real pprof tool (and OTLP bodies with protoc).

  profiles.py CASE TIMED_PROGRAM

The traced program is timed.c: ROUNDS rounds of 100 allocations of 100
bytes in timed_alloc, 10 of them kept.  Summed over the profiles of a run,
alloc_objects of timed_alloc must be ROUNDS * 100 and alloc_space
ROUNDS * 10,000 (each profile holds what its interval allocated); the last
profile's inuse_objects ROUNDS * 10 and inuse_space ROUNDS * 1,000.
"""

import base64
import email.parser
import gzip
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import bpflib
import exportlib
import gtlib

ROUNDS = 3000
TYPES = ['alloc_objects/count', 'alloc_space/bytes', 'inuse_objects/count', 'inuse_space/bytes']
PPROF = shutil.which('pprof')
COUNTS = re.compile(r'push to \S+: (\d+) profile\(s\) made, (\d+) sent, (\d+) dropped \(queue full\), '
                    r'(\d+) failed, (\d+) unsent at exit')


def pprof_raw(t, path):
    """`pprof -raw PATH` parsed: (header {key: value}, sample types,
    [(values, leaf function)], [(file, build id)] of the mappings)."""
    env = {'HOME': t.path('.'), 'PPROF_TMPDIR': t.path('.'), 'PATH': os.environ.get('PATH', '')}
    rc, so, se = t.run([PPROF, '-raw', '-symbolize=none', path], env=env, timeout=60, what='pprof -raw')
    if not t.check(rc == 0, f'pprof -raw {os.path.basename(path)}: exit {rc}, {se.strip()[-300:]!r}'):
        return {}, [], [], []
    head, types, samples, locs, maps = {}, [], [], {}, []
    section, cur = 'head', None
    for line in so.splitlines():
        if line == 'Samples:':
            section = 'types'
        elif line == 'Locations':
            section = 'locations'
        elif line == 'Mappings':
            section = 'mappings'
        elif section == 'head' and ': ' in line:
            k, v = line.split(': ', 1)
            head[k] = v
        elif section == 'types':
            types = [x.replace('[dflt]', '') for x in line.split()]
            section = 'samples'
        elif section == 'samples' and ':' in line and not re.match(r'\s+\w+:\[', line):
            vals, ids = line.split(':', 1)
            samples.append(([int(v) for v in vals.split()], [int(i) for i in ids.split()]))
        elif section == 'locations':
            m = re.match(r'\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)', line)
            if m:
                cur = int(m.group(1))
                locs.setdefault(cur, m.group(2))
        elif section == 'mappings':
            m = re.match(r'\d+: \S+ (\S+) (\S*)', line)
            if m:
                maps.append((m.group(1), m.group(2)))
    return head, types, [(v, locs.get(ids[0]) if ids else None) for v, ids in samples], maps


def check_profiles(t, paths, prog, label):
    """Every profile decodes with Go's heap sample types, period 1 and the
    program's build id; their timed_alloc figures add up to timed.c's."""
    if not t.check(paths, f'{label}: profiles'):
        return
    alloc = [0, 0]
    last = None
    bid = exportlib.build_id(prog)
    for path in paths:
        head, types, samples, maps = pprof_raw(t, path)
        name = f'{label} {os.path.basename(path)}'
        t.eq(types, TYPES, f'{name}: sample types')
        t.eq(head.get('PeriodType'), 'space bytes', f'{name}: period type')
        t.eq(head.get('Period'), '1', f'{name}: period (every allocation counted)')
        t.check('Time' in head and 'Duration' in head, f'{name}: time and duration ({sorted(head)})')
        t.check((os.path.realpath(prog), bid) in maps, f'{name}: the program\'s mapping with build id {bid} ({maps})')
        mine = [v for v, leaf in samples if leaf == 'timed_alloc']
        for v in mine:
            alloc[0] += v[0]
            alloc[1] += v[1]
        if mine:
            last = [sum(v[i] for v in mine) for i in range(4)]
    t.eq(alloc, [ROUNDS * 100, ROUNDS * 10000], f'{label}: timed_alloc\'s alloc_objects and alloc_space, summed')
    t.eq(last and last[2:], [ROUNDS * 10, ROUNDS * 1000], f'{label}: timed_alloc\'s inuse in the last profile')


class Receiver:
    """An HTTP server on a random loopback port: it keeps every request and
    answers with the status ANSWER(request number, from 0) gives."""

    def __init__(self, answer=lambda n: 200):
        self.requests = []
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n)
                status = answer(len(rec.requests))
                rec.requests.append({'method': 'POST', 'path': self.path, 'headers': dict(self.headers),
                                     'body': body, 'status': status})
                self.send_response(status)
                self.send_header('Content-Length', '0')
                self.end_headers()

            do_GET = do_PUT = do_POST  # recorded, and wrong: the checks say so

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}'
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def accepted(self):
        return [r for r in self.requests if 200 <= r['status'] < 300]


def run_top(t, prog, opts, rounds=ROUNDS, argv0=None):
    """timed.c traced by top with OPTS: (top's status, stderr, the
    program's own elapsed seconds, its pid)."""
    p = subprocess.Popen([argv0 or prog, str(rounds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        t.check('ready' in line, f'timed started ({line!r})')
        top = subprocess.Popen([t.memtrace, 'top', '-p', str(p.pid), '--interval', '60', *opts],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = top.stderr.readline()
        t.check('a profile every' in first, f'top says it profiles, once tracing ({first!r})')
        p.send_signal(signal.SIGUSR1)
        out = p.stdout.read()
        p.wait(timeout=120)
        m = re.search(r'elapsed ([0-9.]+)', out)
        so, se = top.communicate(timeout=120)
        return top.returncode, first + se, float(m.group(1)) if m else None, p.pid
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def counts(t, se, label):
    m = COUNTS.search(se)
    if not t.check(m, f'{label}: top prints what became of the profiles ({se.strip()[-500:]!r})'):
        return None
    made, sent, dropped, failed, unsent = (int(x) for x in m.groups())
    t.note(f'{label}: {made} made, {sent} sent, {dropped} dropped, {failed} failed, {unsent} unsent')
    t.eq(made, sent + dropped + failed + unsent, f'{label}: every profile made is sent, dropped, failed or unsent')
    return made, sent, dropped, failed, unsent


def case_pprof(t, prog):
    """--pprof-every --output-dir: files named with the pid and a time."""
    d = t.path('profiles')
    rc, se, _, pid = run_top(t, prog, ['--pprof-every', '0.3', '--output-dir', d])
    t.eq(rc, 0, f'top --pprof-every --output-dir ({se.strip()[-400:]!r})')
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    bad = [n for n in names if not re.fullmatch(rf'memtrace-{pid}-\d{{8}}T\d{{6}}\.\d{{3}}Z\.pb\.gz', n)]
    t.eq(bad, [], 'profile file names: memtrace-PID-YYYYmmddTHHMMSS.mmmZ.pb.gz')
    t.check(f'{len(names)} profile(s) written' in se, f'top says how many profiles it wrote ({len(names)})')
    check_profiles(t, [os.path.join(d, n) for n in names], prog, 'output-dir')
    # the usage errors
    for opts, want in ((['--pprof-every', '1'], '--pprof-every needs --output-dir or --push'),
                       (['--output-dir', d], '--output-dir needs --pprof-every'),
                       (['--pprof-every', '1', '--push', 'ftp://x'], 'http:// or https://'),
                       (['--pprof-every', '1', '--push', 'http://x', '--push-header', 'NoColon'],
                        "--push-header needs 'Name: value'"),
                       (['--pprof-every', '1', '--push', 'http://x', '--push-format', 'zipkin'],
                        '--push-format needs one of pyroscope, parca, otlp')):
        rc, so, se = t.run([t.memtrace, 'top', '-p', str(os.getpid()), *opts])
        t.check(rc != 0 and want in se, f'top {" ".join(opts)}: refused with {want!r} ({rc}, {se.strip()!r})')


def case_pyroscope(t, prog):
    """Pyroscope's POST /ingest: the query its documentation gives, the
    profile as the multipart field "profile", the token and headers asked
    for; the first request refused with 503 is tried again."""
    r = Receiver(lambda n: 503 if n == 0 else 200)
    try:
        rc, se, _, pid = run_top(t, prog, ['--pprof-every', '0.4', '--push', r.url + '/',
                                           '--push-header', 'X-Scope-OrgID: tenant-1',
                                           '--push-token', 's3cret', '--push-timeout', '10'])
    finally:
        r.close()
    t.eq(rc, 0, f'top --push (pyroscope) ({se.strip()[-400:]!r})')
    c = counts(t, se, 'pyroscope')
    ok = r.accepted()
    if c:
        t.eq((c[1], c[2], c[3], c[4]), (len(ok), 0, 0, 0), 'pyroscope: sent = what the store took; none lost')
    t.check(len(r.requests) == len(ok) + 1, f'pyroscope: the one refused request was tried again '
            f'({len(r.requests)} requests, {len(ok)} taken)')
    paths = []
    for i, q in enumerate(r.requests):
        url = urllib.parse.urlsplit(q['path'])
        args = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        t.eq((q['method'], url.path), ('POST', '/ingest'), f'request {i}: method and path')
        t.eq(args.get('name'), [f'bpf-timed{{pid={pid}}}'], f'request {i}: name=APP{{labels}}')
        t.eq((args.get('format'), args.get('spyName')), (['pprof'], ['memtrace']), f'request {i}: format, spyName')
        fr, un = args.get('from', ['x'])[0], args.get('until', ['x'])[0]
        t.check(fr.isdigit() and un.isdigit() and 0 < int(un) - int(fr) <= 3 and abs(int(fr) - time.time()) < 600,
                f'request {i}: from and until in Unix seconds ({fr}, {un})')
        h = {k.lower(): v for k, v in q['headers'].items()}
        t.eq(h.get('authorization'), 'Bearer s3cret', f'request {i}: --push-token')
        t.eq(h.get('x-scope-orgid'), 'tenant-1', f'request {i}: --push-header')
        ctype = h.get('content-type', '')
        t.check(ctype.startswith('multipart/form-data; boundary='), f'request {i}: multipart ({ctype!r})')
        msg = email.parser.BytesParser().parsebytes(
            b'Content-Type: ' + ctype.encode() + b'\r\n\r\n' + q['body'])
        parts = {pt.get_param('name', header='content-disposition'): pt.get_payload(decode=True)
                 for pt in msg.get_payload()} if msg.is_multipart() else {}
        t.eq(sorted(parts), ['profile'], f'request {i}: the multipart fields')
        if q['status'] == 200 and parts.get('profile'):
            path = t.path(f'pyroscope-{i}.pb.gz')
            open(path, 'wb').write(parts['profile'])
            paths.append(path)
    check_profiles(t, paths, prog, 'pyroscope')


def case_parca(t, prog):
    """Parca's POST /profiles/writeraw: WriteRawRequest's JSON form, one
    series labelled __name__, pid and comm (--push-name), the raw pprof in
    base64."""
    r = Receiver()
    try:
        rc, se, _, pid = run_top(t, prog, ['--pprof-every', '0.4', '--push', r.url, '--push-format', 'parca',
                                           '--push-name', 'shop{x="1"}'])
    finally:
        r.close()
    t.eq(rc, 0, f'top --push --push-format parca ({se.strip()[-400:]!r})')
    c = counts(t, se, 'parca')
    if c:
        t.eq((c[1], c[2], c[3], c[4]), (len(r.requests), 0, 0, 0), 'parca: every profile sent')
    paths = []
    for i, q in enumerate(r.requests):
        t.eq((q['method'], q['path']), ('POST', '/profiles/writeraw'), f'request {i}: method and path')
        h = {k.lower(): v for k, v in q['headers'].items()}
        t.eq(h.get('content-type'), 'application/json', f'request {i}: Content-Type')
        try:
            doc = json.loads(q['body'])
            series = doc['series']
            labels = {lb['name']: lb['value'] for lb in series[0]['labels']['labels']}
            raw = base64.b64decode(series[0]['samples'][0]['rawProfile'], validate=True)
        except (ValueError, KeyError, IndexError, TypeError) as x:
            t.fail(f'request {i}: not a WriteRawRequest: {x!r} ({q["body"][:200]!r})')
            continue
        t.eq(len(series), 1, f'request {i}: one series')
        t.eq(labels, {'__name__': 'memory', 'pid': str(pid), 'comm': 'shop{x="1"}'}, f'request {i}: labels')
        path = t.path(f'parca-{i}.pb.gz')
        open(path, 'wb').write(raw)
        paths.append(path)
    check_profiles(t, paths, prog, 'parca')


def case_down(t, prog):
    """A store that never answers (a port that accepts no connection) and
    one that answers 500: the program runs as fast as with a store that
    takes every profile, and what top says it lost is what the store did
    not get."""
    good = Receiver()
    try:
        rc, se, base, _ = run_top(t, prog, ['--pprof-every', '0.1', '--push', good.url])
    finally:
        good.close()
    t.eq(rc, 0, f'top --push to a store that takes all ({se.strip()[-300:]!r})')
    c = counts(t, se, 'a store that takes all')
    if c:
        t.eq(c[1], len(good.accepted()), 'a store that takes all: sent')
    # the black hole: listening, never accepting: connections wait in the
    # backlog, requests time out
    hole = socket.socket()
    hole.bind(('127.0.0.1', 0))
    hole.listen(1)
    try:
        rc, se, slow, _ = run_top(t, prog, ['--pprof-every', '0.1', '--push',
                                            f'http://127.0.0.1:{hole.getsockname()[1]}',
                                            '--push-queue', '2', '--push-timeout', '1'])
    finally:
        hole.close()
    t.eq(rc, 0, f'top --push to a store that never answers ({se.strip()[-300:]!r})')
    t.note(f'the program\'s run time: {base} s with a live store, {slow} s with a dead one')
    t.check(base is not None and slow is not None and slow <= base * 1.5 + 0.5,
            f'the program\'s own run time: {slow} s with a dead store, {base} s with a live one')
    c = counts(t, se, 'a dead store')
    if c:
        t.eq(c[1], 0, 'a dead store: sent')
        t.check(c[2] > 0, f'a dead store: profiles dropped when the queue of 2 was full ({c})')
        t.eq(se.count('queue of 2 profiles is full'), c[2], 'a dead store: each drop said on stderr')
    # one attempt per profile: each failure is one request the store refused
    bad = Receiver(lambda n: 500)
    try:
        rc, se, _, _ = run_top(t, prog, ['--pprof-every', '0.3', '--push', bad.url, '--push-retries', '0'])
    finally:
        bad.close()
    t.eq(rc, 0, f'top --push to a store that answers 500 ({se.strip()[-300:]!r})')
    c = counts(t, se, 'a failing store')
    if c:
        t.eq(c[1], 0, 'a failing store: sent')
        t.check(c[3] > 0, f'a failing store: failed profiles ({c})')
        t.eq(len(bad.requests), c[3], 'a failing store: the requests it refused')
        t.eq(se.count('answered HTTP 500'), c[3], 'a failing store: each failure said on stderr')


# The messages of opentelemetry-proto's profiles/v1development that top
# sends, with their field numbers, for protoc --decode (written from the
# proto's text; only the fields memtrace writes and those around them).
OTLP_PROTO = """
syntax = "proto3";
message AnyValue { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
                   bytes bytes_value = 7; }
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message ValueType { int32 type_strindex = 1; int32 unit_strindex = 2; }
message Sample { int32 stack_index = 1; repeated int32 attribute_indices = 2; int32 link_index = 3;
                 repeated int64 values = 4; repeated fixed64 timestamps_unix_nano = 5; }
message Profile { ValueType sample_type = 1; repeated Sample samples = 2; fixed64 time_unix_nano = 3;
                  uint64 duration_nano = 4; ValueType period_type = 5; int64 period = 6; bytes profile_id = 7; }
message ScopeProfiles { InstrumentationScope scope = 1; repeated Profile profiles = 2; string schema_url = 3; }
message ResourceProfiles { Resource resource = 1; repeated ScopeProfiles scope_profiles = 2; string schema_url = 3; }
message Mapping { uint64 memory_start = 1; uint64 memory_limit = 2; uint64 file_offset = 3;
                  int32 filename_strindex = 4; repeated int32 attribute_indices = 5; }
message Line { int32 function_index = 1; int64 line = 2; int64 column = 3; }
message Location { int32 mapping_index = 1; uint64 address = 2; repeated Line lines = 3;
                   repeated int32 attribute_indices = 4; }
message Function { int32 name_strindex = 1; int32 system_name_strindex = 2; int32 filename_strindex = 3;
                   int64 start_line = 4; }
message Link { bytes trace_id = 1; bytes span_id = 2; }
message KeyValueAndUnit { int32 key_strindex = 1; AnyValue value = 2; int32 unit_strindex = 3; }
message Stack { repeated int32 location_indices = 1; }
message ProfilesDictionary { repeated Mapping mapping_table = 1; repeated Location location_table = 2;
                             repeated Function function_table = 3; repeated Link link_table = 4;
                             repeated string string_table = 5; repeated KeyValueAndUnit attribute_table = 6;
                             repeated Stack stack_table = 7; }
message ExportProfilesServiceRequest { repeated ResourceProfiles resource_profiles = 1;
                                       ProfilesDictionary dictionary = 2; }
"""


def parse_text(text):
    """protoc's text format as {field: [values]}, a message a dict."""
    import ast
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == '}':
            stack.pop()
        elif line.endswith('{'):
            m = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(m)
            stack.append(m)
        else:
            k, v = line.split(': ', 1)
            v = ast.literal_eval('b' + v).decode('utf-8') if v.startswith('"') else int(v)
            stack[-1].setdefault(k, []).append(v)
    return root


def one(m, k, default=None):
    return m.get(k, [default])[0]


def case_otlp(t, prog):
    """OTLP/HTTP profiles (experimental): POST /v1development/profiles, an
    ExportProfilesServiceRequest in protobuf that protoc decodes with the
    proto's field numbers: four profiles of Go's heap types sharing one
    dictionary, timed.c's figures, its build id."""
    protoc = shutil.which('protoc')
    if not t.check(protoc, 'protoc is installed (protobuf-compiler: tools/setup.sh installs it)'):
        return
    open(t.path('otlp.proto'), 'w').write(OTLP_PROTO)
    r = Receiver()
    try:
        rc, se, _, pid = run_top(t, prog, ['--pprof-every', '0.4', '--push', r.url, '--push-format', 'otlp'])
    finally:
        r.close()
    t.eq(rc, 0, f'top --push --push-format otlp ({se.strip()[-400:]!r})')
    c = counts(t, se, 'otlp')
    if c:
        t.eq((c[1], c[2], c[3], c[4]), (len(r.requests), 0, 0, 0), 'otlp: every profile sent')
    t.check(r.requests, 'otlp: requests')
    alloc, last, bid = [0, 0], None, exportlib.build_id(prog)
    for i, q in enumerate(r.requests):
        t.eq((q['method'], q['path']), ('POST', '/v1development/profiles'), f'request {i}: method and path')
        h = {k.lower(): v for k, v in q['headers'].items()}
        t.eq(h.get('content-type'), 'application/x-protobuf', f'request {i}: Content-Type')
        p = subprocess.run([protoc, '-I', t.tmp, '--decode=ExportProfilesServiceRequest', 'otlp.proto'],
                           input=q['body'], capture_output=True, timeout=60)
        if not t.check(p.returncode == 0, f'request {i}: protoc --decode: {p.stderr.decode()[-300:]!r}'):
            continue
        doc = parse_text(p.stdout.decode())
        d = one(doc, 'dictionary', {})
        strs = d.get('string_table', [])
        t.eq(strs[:1], [''], f'request {i}: string_table[0]')
        for table in ('mapping_table', 'location_table', 'function_table', 'link_table', 'attribute_table',
                      'stack_table'):
            t.check(d.get(table) and not any(k for k in d[table][0] if k not in ('trace_id', 'span_id')),
                    f'request {i}: {table}[0] is the zero value')
        rps = doc.get('resource_profiles', [])
        t.eq(len(rps), 1, f'request {i}: one ResourceProfiles')
        if not rps:
            continue
        attrs = {one(a, 'key'): one(a, 'value', {}) for a in one(rps[0], 'resource', {}).get('attributes', [])}
        t.eq((one(attrs.get('service.name', {}), 'string_value'), one(attrs.get('process.pid', {}), 'int_value')),
             ('bpf-timed', pid), f'request {i}: resource service.name and process.pid')
        sp = one(rps[0], 'scope_profiles', {})
        t.eq(one(one(sp, 'scope', {}), 'name'), 'memtrace', f'request {i}: scope name')
        profs = sp.get('profiles', [])

        def s(m, k):
            return strs[one(m, k, 0)] if one(m, k, 0) < len(strs) else None

        t.eq([f"{s(one(p_, 'sample_type', {}), 'type_strindex')}/{s(one(p_, 'sample_type', {}), 'unit_strindex')}"
              for p_ in profs], TYPES, f'request {i}: a profile per sample type, in Go\'s order')
        for p_ in profs:
            pt = one(p_, 'period_type', {})
            t.eq((s(pt, 'type_strindex'), s(pt, 'unit_strindex'), one(p_, 'period')), ('space', 'bytes', 1),
                 f'request {i}: period type and period')
            t.check(abs(one(p_, 'time_unix_nano', 0) / 1e9 - time.time()) < 600 and one(p_, 'duration_nano'),
                    f'request {i}: time_unix_nano and duration_nano')
        maps = {s(m, 'filename_strindex'): m for m in d.get('mapping_table', [])[1:]}
        m = maps.get(os.path.realpath(prog), {})
        battr = [d['attribute_table'][k] for k in m.get('attribute_indices', []) if k < len(d['attribute_table'])]
        t.eq([(s(a, 'key_strindex'), one(one(a, 'value', {}), 'string_value')) for a in battr],
             [('process.executable.build_id.gnu', bid)], f'request {i}: the program\'s mapping and build id')
        locs, funcs, stacks = d.get('location_table', []), d.get('function_table', []), d.get('stack_table', [])

        def leaf(stack_index):
            try:
                loc = locs[stacks[stack_index]['location_indices'][0]]
                return s(funcs[one(loc['lines'][0], 'function_index')], 'name_strindex')
            except (IndexError, KeyError):
                return None

        sums = [sum(one(x, 'values') for x in p_.get('samples', []) if leaf(one(x, 'stack_index', 0)) == 'timed_alloc')
                for p_ in profs]
        if len(sums) == 4:
            alloc[0] += sums[0]
            alloc[1] += sums[1]
            last = sums[2:]
    t.eq(alloc, [ROUNDS * 100, ROUNDS * 10000], 'otlp: timed_alloc\'s alloc_objects and alloc_space, summed')
    t.eq(last, [ROUNDS * 10, ROUNDS * 1000], 'otlp: timed_alloc\'s inuse in the last profile')


def case_names(t, prog):
    """A process names itself: the program run through a link named
    'evil{a=b},' and a byte that is no UTF-8.  Pyroscope's name keeps no
    brace, comma or '=' of it (no label of the process's making), Parca's
    JSON and OTLP's protobuf strings stay valid UTF-8 (U+FFFD for the
    byte), and every store still gets every profile."""
    link = os.path.join(os.fsencode(t.tmp), b'evil{a=b},\xff')
    os.symlink(os.path.realpath(prog), link)
    r = Receiver()
    try:
        rc, se, _, pid = run_top(t, prog, ['--pprof-every', '1', '--push', r.url], rounds=500, argv0=link)
        for q in r.requests:
            args = urllib.parse.parse_qs(urllib.parse.urlsplit(q['path']).query)
            t.eq(args.get('name'), [f'evil_a_b___{{pid={pid}}}'], 'pyroscope: the name of a hostile process')
        c = counts(t, se, 'pyroscope, hostile name')
        t.check(r.requests and c and c[1] == len(r.requests), 'pyroscope: profiles of a hostile process')
        n = len(r.requests)
        rc, se, _, pid = run_top(t, prog, ['--pprof-every', '1', '--push', r.url, '--push-format', 'parca'],
                                 rounds=500, argv0=link)
        for q in r.requests[n:]:
            try:
                doc = json.loads(q['body'].decode('utf-8'))
                labels = {lb['name']: lb['value'] for lb in doc['series'][0]['labels']['labels']}
            except (ValueError, KeyError, IndexError) as x:
                t.fail(f'parca: not UTF-8 JSON for a hostile name: {x!r}')
                continue
            t.eq(labels.get('comm'), 'evil{a=b},\ufffd', 'parca: comm of a hostile process, as JSON')
        t.check(len(r.requests) > n, 'parca: profiles of a hostile process')
        n = len(r.requests)
        rc, se, _, pid = run_top(t, prog, ['--pprof-every', '1', '--push', r.url, '--push-format', 'otlp'],
                                 rounds=500, argv0=link)
        open(t.path('otlp.proto'), 'w').write(OTLP_PROTO)
        for q in r.requests[n:]:
            p = subprocess.run([shutil.which('protoc') or 'protoc', '-I', t.tmp,
                                '--decode=ExportProfilesServiceRequest', 'otlp.proto'],
                               input=q['body'], capture_output=True, timeout=60)
            if not t.check(p.returncode == 0 and not p.stderr, f'otlp: protoc --decode: {p.stderr[-300:]!r}'):
                continue
            res = one(one(parse_text(p.stdout.decode()), 'resource_profiles', {}), 'resource', {})
            attrs = {one(a, 'key'): one(one(a, 'value', {}), 'string_value') for a in res.get('attributes', [])}
            t.eq(attrs.get('service.name'), 'evil{a=b},\ufffd', 'otlp: service.name of a hostile process')
        t.check(len(r.requests) > n, 'otlp: profiles of a hostile process')
    finally:
        r.close()


def main():
    name = sys.argv[1]
    why = bpflib.bpf_unavailable()
    if why:
        print(f'bpf-top-{name}: skipped: {why}')
        sys.exit(77)
    t = gtlib.Case('bpf-top-' + name)
    if not PPROF:
        t.fail('pprof is not installed: tools/setup.sh builds it from Debian\'s golang-github-google-pprof-dev')
        t.finish()
    try:
        globals()['case_' + name](t, *sys.argv[2:])
    except Exception:
        import traceback
        traceback.print_exc()
        t.fail('the case raised an exception')
    t.finish()


if __name__ == '__main__':
    main()
