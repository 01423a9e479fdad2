"""gtlib - the Case object every Python test builds on (tests/lib).

Each ground-truth scenario is a program tests/groundtruth/NAME.c (or .cpp)
whose figures are known by construction, and NAME.py next to it holding the
expectations.  run_case.py loads NAME.py and calls its run(t, *args) with a
Case object `t`; the attach, export and server tests use the same Case.

Checks are collected, not raised: a case reports every mismatch it finds (so a
single run says everything that is wrong), and fails at the end if any check
failed.  Nothing is skipped silently: a site that cannot be found is itself a
failure, and the checks that depend on it are reported as not run.
"""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

# where the ground-truth sources are, for marker_line
GT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth')


class Case:
    def __init__(self, name):
        self.name = name
        self.memtrace = os.environ.get('MEMTRACE')
        self.shim = os.environ.get('MEMTRACE_SHIM')
        if not self.memtrace or not os.access(self.memtrace, os.X_OK):
            print(f'gt-{name}: MEMTRACE is not set to the memtrace binary ({self.memtrace!r})')
            sys.exit(1)
        self.tmp = tempfile.mkdtemp(prefix=f'gt-{name}-')
        self.failures = []
        self.checks = 0

    # ---- bookkeeping ------------------------------------------------------

    def fail(self, msg):
        self.failures.append(msg)
        print(f'FAIL: {msg}', flush=True)

    def check(self, cond, msg):
        self.checks += 1
        if not cond:
            self.fail(msg)
        return bool(cond)

    def eq(self, got, want, what):
        self.checks += 1
        if got != want:
            self.fail(f'{what}: expected {want!r}, got {got!r}')
            return False
        return True

    def note(self, msg):
        print(f'note: {msg}', flush=True)

    def finish(self):
        if self.failures:
            print(f'\ngt-{self.name}: {len(self.failures)} of {self.checks} checks failed '
                  f'(files kept in {self.tmp}):')
            for f in self.failures:
                print(f'  - {f}')
            sys.exit(1)
        if self.checks == 0:
            print(f'gt-{self.name}: no checks ran')
            sys.exit(1)
        print(f'gt-{self.name}: all {self.checks} checks passed')
        shutil.rmtree(self.tmp, ignore_errors=True)
        sys.exit(0)

    def path(self, name):
        return os.path.join(self.tmp, name)

    # ---- running ----------------------------------------------------------

    def run(self, argv, env=None, timeout=90, what=None):
        """Runs ARGV; returns (rc, stdout, stderr) as text.  rc < 0 never
        happens for memtrace itself unless it died of a signal."""
        e = dict(os.environ)
        if env:
            e.update(env)
        try:
            p = subprocess.run(argv, env=e, capture_output=True, timeout=timeout,
                               text=True, errors='replace')
        except subprocess.TimeoutExpired as x:
            self.fail(f'{what or argv[0]}: timed out after {timeout} s')
            return None, x.stdout or '', x.stderr or ''
        return p.returncode, p.stdout, p.stderr

    def record(self, cmd, opts=(), out=None, expect_rc=0, env=None, timeout=90):
        """`memtrace record -o OUT OPTS -- CMD`; checks the exit status and
        returns (path of the recording, stdout of the command)."""
        out = out or self.path('rec.mtrace')
        argv = [self.memtrace, 'record', '-o', out, *opts, '--', *cmd]
        rc, so, se = self.run(argv, env=env, timeout=timeout, what='memtrace record')
        if expect_rc is not None:
            self.eq(rc, expect_rc, f'exit status of memtrace record {" ".join(opts)} -- '
                    f'{os.path.basename(cmd[0])} {" ".join(cmd[1:])}'
                    + (f' (stderr: {se.strip()[-400:]!r})' if rc != expect_rc else ''))
        return out, so

    def report(self, path, args=(), expect_rc=0):
        """`memtrace report --json PATH`: returns the parsed JSON, or None
        (after recording a failure)."""
        rc, so, se = self.run([self.memtrace, 'report', '--json', *args, path], what='memtrace report')
        if rc != expect_rc:
            self.fail(f'memtrace report --json {path}: exit status {rc}, expected {expect_rc}; '
                      f'stderr: {se.strip()[-400:]!r}')
            if rc != 0:
                return None
        try:
            rep = json.loads(so)
        except ValueError as x:
            self.fail(f'memtrace report --json {path}: output is not JSON ({x}); '
                      f'first bytes: {so[:200]!r}')
            return None
        with open(path + '.json', 'w') as f:
            f.write(so)
        self.check(rep.get('memtrace_report') == 1, 'report lacks "memtrace_report": 1')
        self.same_report_by(os.environ.get('MEMTRACE_NATIVE'), path, args, rep)
        return rep

    @property
    def emulated(self):
        """A cross build's tests under qemu-user (tools/cross.sh ARCH --test
        names the build machine's memtrace in MEMTRACE_NATIVE): no ptrace
        there, so record holds no process at its exit and runs no leak scan
        (a recording's leak_kinds are null, every leaked block counts)."""
        return bool(os.environ.get('MEMTRACE_NATIVE'))

    def same_report_by(self, other, path, args, rep):
        """In a cross build's tests (tools/cross.sh ARCH --test), the
        recording made under qemu is also reported by the build machine's own
        memtrace (MEMTRACE_NATIVE): a recording travels between word sizes
        and byte orders, so its report must be the same, figure for figure
        and frame for frame."""
        if not other:
            return
        rc, so, se = self.run([other, 'report', '--json', *args, path], what='native memtrace report')
        if not self.eq(rc, 0, f'exit status of the native memtrace report --json {path} '
                       f'(stderr: {se.strip()[-300:]!r})'):
            return
        try:
            native = json.loads(so)
        except ValueError as x:
            self.fail(f'native memtrace report --json {path}: output is not JSON ({x})')
            return
        self.eq(first_difference(native, rep), None,
                f'first difference between the native report of {path} and this memtrace\'s')

    def record_forking(self, prog, follow, names=('parent', 'child')):
        """`memtrace record` of PROG, which prints the pids of its processes
        as NAME=PID for each of NAMES, with --follow-forks when FOLLOW:
        (the report, the pids), or (None, None) after a failure."""
        rec, out = self.record([prog], opts=['--follow-forks'] if follow else [])
        pids = parse_kv(out)
        if not self.check(all(k in pids for k in names), f'the program printed its pids ({out!r})'):
            return None, None
        rep = self.report(rec)
        return (rep, pids) if rep is not None else (None, None)

    def record_process(self, cmd, opts=(), out=None):
        """`memtrace record` of CMD, then its JSON report: (path of the
        recording, its one process), the process None after a failure."""
        rec, _ = self.record(cmd, opts=opts, out=out)
        return rec, self.only_process(self.report(rec))

    # ---- report navigation ------------------------------------------------

    def processes(self, rep, count=None):
        procs = rep.get('processes', []) if rep else []
        if count is not None:
            self.eq(len(procs), count, 'number of processes in the report')
        return procs

    def only_process(self, rep):
        procs = self.processes(rep, 1)
        return procs[0] if len(procs) == 1 else None

    def process_with_pid(self, rep, pid):
        m = [p for p in self.processes(rep) if p.get('pid') == pid]
        if not self.check(len(m) == 1, f'exactly one process with pid {pid} '
                          f'(pids: {[p.get("pid") for p in self.processes(rep)]})'):
            return None
        return m[0]

    @staticmethod
    def fn(site, i=0):
        fr = site.get('frames') or []
        return fr[i].get('function') if i < len(fr) else None

    def sites_of(self, proc, function, pred=None):
        """Sites of PROC whose leaf frame is FUNCTION (a string, or a
        predicate on the function name)."""
        match = function if callable(function) else (lambda f: f == function)
        out = []
        for s in proc.get('sites', []):
            f = self.fn(s)
            if f is not None and match(f) and (pred is None or pred(s)):
                out.append(s)
        return out

    def site(self, proc, function, pred=None, desc=None):
        """The one site whose frames[0].function is FUNCTION."""
        if proc is None:
            self.fail(f'site {desc or function}: no process to look in')
            return None
        m = self.sites_of(proc, function, pred)
        if len(m) != 1:
            leaves = sorted({str(self.fn(s)) for s in proc.get('sites', [])})
            self.fail(f'expected exactly one site with frames[0].function == {desc or function!r}, '
                      f'found {len(m)}; leaf functions present: {leaves}')
            return None
        return m[0]

    def check_site(self, site, label, **want):
        """Compares the figures of SITE with WANT (keys of the JSON site)."""
        if site is None:
            self.fail(f'{label}: site missing, figures {sorted(want)} not checked')
            return
        for k, v in want.items():
            self.eq(site.get(k), v, f'{label}: site "{k}"')

    def check_totals(self, proc, label='totals', extra=None, **want):
        """Compares totals of PROC with WANT.  EXTRA is a list of sites
        whose figures are added to WANT (sites of library internals that the
        case does not control, see foreign_sites)."""
        if proc is None:
            self.fail(f'{label}: process missing')
            return
        t = proc.get('totals', {})
        for k, v in want.items():
            add = 0
            if extra:
                # a site's peak figures are what it held at the moment of the
                # global peak: start-up blocks still live then add to it
                sk = SITE_KEY_OF_TOTAL.get(k) or {'peak_bytes': 'peak_bytes',
                                                  'peak_allocations': 'peak_allocations'}.get(k)
                add = sum(s.get(sk, 0) for s in extra) if sk else 0
            self.eq(t.get(k), v + add, f'{label}: totals "{k}"' +
                    (f' ({v} by construction + {add} from library-internal sites)' if add else ''))

    def check_sites_sum_to_totals(self, proc, label='totals'):
        """The per-site figures must add up to the totals."""
        if proc is None:
            return
        t = proc.get('totals', {})
        for tk, sk in SITE_KEY_OF_TOTAL.items():
            s = sum(x.get(sk, 0) for x in proc.get('sites', []))
            self.eq(s, t.get(tk), f'{label}: sum over sites of "{sk}" vs totals "{tk}"')

    def check_no_loss(self, proc, label='process'):
        if proc is None:
            return
        self.eq(proc.get('lost_events'), 0, f'{label}: lost_events')
        self.eq(proc.get('totals', {}).get('unmatched_frees'), 0, f'{label}: totals "unmatched_frees"')

    def own_sites(self, proc, prog):
        """Sites whose leaf frame lies in the program PROG itself."""
        real = os.path.realpath(prog)
        return [s for s in proc.get('sites', [])
                if (s.get('frames') or [{}])[0].get('module') == real]

    def startup_sites(self, proc, prog, label):
        """The sites outside PROG (foreign_sites) when they may only be what
        libraries allocate for themselves as they start (libstdc++'s
        emergency pool in a library that links it, an allocator's own
        set-up): none may have a frame in PROG, or an event of the program
        was counted twice (an allocator's API and the malloc it calls)."""
        out = self.foreign_sites(proc, prog)
        real = os.path.realpath(prog)
        for s in out:
            fr = s.get('frames', [])
            self.check(real not in {f.get('module') for f in fr},
                       f'{label}: a site outside the program has none of its frames '
                       f'({[f.get("function") for f in fr][:6]})')
        return out

    def foreign_sites(self, proc, prog, exclude=()):
        """Sites whose leaf frame is not in PROG: allocations that the C
        library, the dynamic loader or libstdc++ make on their own (thread
        control blocks, dlopen bookkeeping).  Printed, so a reader can see them.
        Sites in EXCLUDE (ones the case accounts for itself) are left out."""
        real = os.path.realpath(prog)
        skip = {id(s) for s in exclude}
        out = [s for s in proc.get('sites', [])
               if (s.get('frames') or [{}])[0].get('module') != real and id(s) not in skip]
        for s in out:
            fr = s.get('frames') or []
            where = ' <- '.join(f'{f.get("function")}' for f in fr[:4])
            self.note(f'library-internal site: {s.get("allocations")} x {s.get("allocator")} '
                      f'({s.get("allocated_bytes")} B, {s.get("leaked_allocations")} leaked) at {where}')
        return out

    def check_frames(self, site, label, expect):
        """EXPECT: list, leaf first, of (function, file basename, line); None
        in a position means "not checked"."""
        if site is None:
            self.fail(f'{label}: site missing, frames not checked')
            return
        fr = site.get('frames') or []
        for i, (fn, file, line) in enumerate(expect):
            if not self.check(i < len(fr), f'{label}: only {len(fr)} frames, expected at least {i + 1}'):
                return
            f = fr[i]
            if fn is not None:
                self.eq(f.get('function'), fn, f'{label}: frames[{i}].function')
            if file is not None:
                self.eq(os.path.basename(f.get('file') or ''), file, f'{label}: frames[{i}].file (basename)')
            if line is not None:
                self.eq(f.get('line'), line, f'{label}: frames[{i}].line')

    # ---- embedded binaries (record --embed-binaries, the shim's
    # MEMTRACE_WRITE_BINARIES_TO_OUTPUT) -----------------------------------

    def check_embedded(self, plain, embed, files):
        """PLAIN was recorded without the binaries, EMBED with them, of the
        same run of a program: PLAIN has no chunk of the objects' stream,
        EMBED has chunks of it that hold FILES (compressed, more than a
        quarter of their bytes), and both report one process with the same
        totals (times aside: two runs).  Returns the two processes (None
        after a failure)."""
        self.eq(object_bytes(plain), 0, 'without the binaries no chunk of the objects\' stream')
        ob, want = object_bytes(embed), sum(os.path.getsize(f) for f in files) // 4
        self.check(ob > want, f'the recording holds the binaries in chunks of their own stream '
                   f'({ob} B of them, more than {want} B expected)')
        procs = []
        for rec in (plain, embed):
            procs.append(self.only_process(self.report(rec)))
        if None in procs:
            return None, None

        def counts(p):
            return {k: v for k, v in (p.get('totals') or {}).items() if not k.endswith('_s')}
        self.eq(counts(procs[1]), counts(procs[0]), 'totals with and without the binaries')
        return procs

    def check_not_warned(self, proc, prefix, label):
        """PROC's report has no warning about a file under PREFIX."""
        if proc is not None:
            self.eq([w for w in proc.get('warnings', []) if w.startswith(prefix)], [],
                    f'no warning about {label}')

    def check_unsymbolized(self, proc, exe, functions, why, label):
        """PROC, recorded without the binaries and reported once EXE was
        deleted or replaced, names none of FUNCTIONS and has a warning
        naming EXE that says WHY."""
        if proc is None:
            self.fail(f'{label}: process missing')
            return
        self.check(not function_names(proc) & set(functions),
                   f'{label}: without the binaries none of {sorted(functions)} is named')
        self.check(any(w.startswith(exe) and why in w for w in proc.get('warnings', [])),
                   f'{label}: without the binaries a warning names {exe}, saying '
                   f'{why!r} ({proc.get("warnings")!r})')


# totals key -> per-site key with the same meaning
SITE_KEY_OF_TOTAL = {
    'allocations': 'allocations',
    'frees': 'frees',
    'allocated_bytes': 'allocated_bytes',
    'leaked_allocations': 'leaked_allocations',
    'leaked_bytes': 'leaked_bytes',
    'runtime_held_allocations': 'runtime_held_allocations',
    'runtime_held_bytes': 'runtime_held_bytes',
    'temporary_allocations': 'temporary_allocations',
    'culled_allocations': 'culled_allocations',
}


def first_difference(a, b, where='report'):
    """Where two parsed JSON documents first differ ('report.processes[0]
    .sites[3].frames[1].function: 'x' != 'y''), or None when equal."""
    if type(a) is not type(b):
        return f'{where}: {a!r} != {b!r}'
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f'{where}.{k}: only in {"the native" if k in a else "this"} report'
            d = first_difference(a[k], b[k], f'{where}.{k}')
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f'{where}: {len(a)} items != {len(b)}'
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f'{where}[{i}]')
            if d:
                return d
        return None
    return None if a == b else f'{where}: {a!r} != {b!r}'


def marker_line(src, tag):
    """Line number (1-based) of the single line of SRC carrying the marker
    comment `@TAG` (e.g. `/* @site:do_malloc */`)."""
    pat = re.compile(r'@' + re.escape(tag) + r'\b')
    path = src if os.path.isabs(src) else os.path.join(GT_DIR, src)
    hits = [i + 1 for i, l in enumerate(open(path)) if pat.search(l)]
    if len(hits) != 1:
        raise RuntimeError(f'marker @{tag} found {len(hits)} times in {src}')
    return hits[0]


def parse_kv(text):
    """KEY=VALUE tokens printed by a test program on stdout -> dict of ints
    (or strings when not numeric)."""
    out = {}
    for tok in text.split():
        if '=' in tok:
            k, v = tok.split('=', 1)
            try:
                out[k] = int(v, 0)
            except ValueError:
                out[k] = v
    return out


def chunks(path):
    """The chunk layout of a recording (format.h, man/memtrace-format.5):
    a header whose bytes 10..11 give the offset of the first chunk, then
    chunks of a 24-byte header (magic "MTCK", stream, raw length,
    compressed length, crc32, flags) and the compressed bytes.  Returns
    [(offset, total length)]."""
    data = open(path, 'rb').read()
    off = data[10] | data[11] << 8
    out = []
    while off + 24 <= len(data):
        if data[off:off + 4] != b'MTCK':
            raise RuntimeError(f'{path}: no chunk magic at offset {off}')
        clen = int.from_bytes(data[off + 12:off + 16], 'little')
        out.append((off, 24 + clen))
        off += 24 + clen
    if off != len(data):
        raise RuntimeError(f'{path}: {len(data) - off} stray bytes after the last chunk')
    return out



OBJECTS_STREAM = 0xffffffff  # MT_STREAM_OBJECTS (codec.h): the embedded binaries


def object_bytes(path):
    """The bytes of a recording's chunks of the objects' stream, headers
    included (0: no binary embedded)."""
    data = open(path, 'rb').read()
    return sum(n for off, n in chunks(path)
               if int.from_bytes(data[off + 4:off + 8], 'little') == OBJECTS_STREAM)


def function_names(proc):
    """The function names of every frame of every site of PROC."""
    return {f.get('function') for s in proc.get('sites', []) for f in s.get('frames', [])}

# The fields of each record type (codec.h): v a varint (signed ones too),
# b a length-prefixed byte string; STACK (4) is a count and that many varints.
_FIELDS = {0: 'vb', 1: 'vvvv', 2: 'vv', 3: 'vvvvv', 5: 'v', 6: 'vvvbb', 7: 'vvvvbbb', 8: 'vvb',
           9: 'vv', 10: 'vvvv', 11: 'vv', 12: '', 13: 'vvv', 14: 'vv', 15: 'vvvv'}


def records(path):
    """The records of a recording's zlib or stored chunks (the standalone
    shim's; `memtrace record` writes zstd, which Python cannot read without
    a module of its own), in the order they were written: [(type, fields)]
    with the allocator function in the high bits of the type dropped."""
    import zlib
    data = open(path, 'rb').read()
    out = []
    for off, n in chunks(path):
        flags = int.from_bytes(data[off + 20:off + 24], 'little')
        body = data[off + 24:off + n]
        if flags & 2:
            raise RuntimeError(f'{path}: a zstd chunk at offset {off}')
        raw = zlib.decompress(body) if flags & 1 else body
        i = 0

        def uv():
            nonlocal i
            v, shift = 0, 0
            while True:
                b = raw[i]
                i += 1
                v |= (b & 0x7f) << shift
                shift += 7
                if not b & 0x80:
                    return v
        while i < len(raw):
            typ = raw[i] & 15
            i += 1
            if typ == 4:
                fields = [uv(), uv()]
                fields += [uv() for _ in range(fields[1])]
            else:
                fields = []
                for f in _FIELDS[typ]:
                    if f == 'v':
                        fields.append(uv())
                    else:
                        ln = uv()
                        fields.append(raw[i:i + ln])
                        i += ln
            out.append((typ, fields))
    return out


def stderr_lines(text):
    return [l for l in text.splitlines() if l.strip()]


def signal_exit(sig):
    return 128 + int(sig)


__all__ = ['Case', 'marker_line', 'parse_kv', 'chunks', 'object_bytes', 'function_names',
           'stderr_lines', 'signal_exit', 'signal', 'stat']
