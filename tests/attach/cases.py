#!/usr/bin/env python3
"""cases.py NAME ARGS... - the commands that watch running processes
through the BPF backend: attach (memtrace -p), sweep, their errors, and the
choice of the BPF backend for a static program.

Like the ground-truth cases (whose gtlib.Case they use), each NAME is a
function below.  They need root and a kernel with BPF, BTF and uprobes:
where those are missing the test prints why and exits 77, which meson
reports as a skip and CI counts as a failure.  (The ground-truth programs
recorded through the BPF backend are the groundtruth runner's bpf axis.)
"""
import fcntl
import json
import re
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import bpflib
import gtlib


def case_static(t, prog):
    """A static program: --backend=auto must choose BPF (the shim cannot be
    preloaded) and count exactly (see static.c)."""
    rec, _ = t.record([prog], out=t.path('static.mtrace'))
    p = t.only_process(t.report(rec))
    if p is None:
        return
    t.eq(p.get('backend'), 'bpf', 'backend chosen for a static program by --backend=auto')
    t.check_site(t.site(p, 'static_leak'), 'static_leak', allocations=7, allocated_bytes=7 * 777,
                 leaked_allocations=7, frees=0, allocator_object=os.path.realpath(prog))
    t.check_site(t.site(p, 'churn'), 'churn', allocations=100, allocated_bytes=6400, frees=100,
                 leaked_allocations=0, temporary_allocations=100)
    # static glibc allocates for itself too (stdio, TLS): at least the program's
    t.check(p['totals'].get('allocations', 0) >= 107, f'totals.allocations >= 107 ({p["totals"]})')
    t.eq(p.get('lost_events'), 0, 'lost_events')
    # its malloc is the executable's own (a static program's C library is
    # in it): the report says so (it said "allocator unknown")
    t.eq((p.get('allocator'), p.get('allocator_object')), ('executable', os.path.realpath(prog)),
         'allocator of a static program')
    rc, so, se = t.run([t.memtrace, 'report', rec])
    want = f"  allocator the executable's own malloc ({os.path.realpath(prog)})"
    t.check(rc == 0 and want in so.splitlines(), f'report: {want!r} ({so[:400]!r})')


def start(t, argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    t.check('ready' in line, f'{os.path.basename(argv[0])} started ({line!r})')
    return p


def rounds_of(p, timeout=3.0):
    """The last 'round N ok' line the program printed within TIMEOUT."""
    last = None
    end = time.monotonic() + timeout
    os.set_blocking(p.stdout.fileno(), False)
    while time.monotonic() < end:
        line = p.stdout.readline()
        if not line:
            time.sleep(0.05)
            continue
        last = line.strip()
    return last


def case_attach(t, prog):
    """Attach to a running leaker for 3 s, then 20 times in a row; it must
    go on unharmed (it checks its own memory) and its leaks must be found."""
    p = start(t, [prog])
    try:
        rc, so, se = t.run([t.memtrace, '-p', str(p.pid), '--duration', '3', '--interval', '1', '-n', '5'],
                           timeout=60)
        t.eq(rc, 0, f'memtrace -p PID --duration 3 (stderr {se.strip()[-400:]!r})')
        t.check(so.count('OUTSTANDING') >= 2, f'at least two interval tables in 3 s: {so[:600]!r}')
        t.check('leaky_alloc' in so and 'leaky_round' in so,
                f'the leaking call site is named (leaky_alloc < leaky_round): {so[-800:]!r}')
        t.check('leaked:' in so, f'the leak report ends the output: {so[-400:]!r}')
        for i in range(20):
            rc, so, se = t.run([t.memtrace, 'attach', '-p', str(p.pid), '--duration', '0.3',
                                '--interval', '0'], timeout=30)
            if not t.eq(rc, 0, f'attach/detach #{i + 1} (stderr {se.strip()[-300:]!r})'):
                break
        last = rounds_of(p)
        t.check(p.poll() is None, 'the program is still running after 21 attachments')
        t.check(last is not None and last.endswith('ok'), f'the program still checks out: {last!r}')
        # two processes attached to: the leak report shows both (none is a
        # wrapper's image to leave to one line, as record's report does)
        q = start(t, [prog])
        try:
            rc, so, se = t.run([t.memtrace, 'attach', '-p', str(p.pid), '-p', str(q.pid), '--duration', '1',
                                '--interval', '0'], timeout=30)
            t.eq(rc, 0, f'attach -p A -p B (stderr {se.strip()[-300:]!r})')
            t.check(f'process {p.pid} (' in so and f'process {q.pid} (' in so and 'also recorded' not in so,
                    f'attach -p A -p B: both processes in full ({so[-600:]!r})')
        finally:
            q.kill()
            q.wait()
    finally:
        p.kill()
        p.wait()


def attached_process(t, p):
    """`memtrace -p PID -o FILE` of the running P for 2 s: the one process
    of FILE's report (None after a failure)."""
    out = t.path('attach.mtrace')
    rc, so, se = t.run([t.memtrace, '-p', str(p.pid), '--duration', '2', '--interval', '0', '-o', out],
                       timeout=60)
    t.eq(rc, 0, f'memtrace -p PID -o FILE (stderr {se.strip()[-400:]!r})')
    return t.only_process(t.report(out))


def case_attach_json_record(t, prog):
    """attach -o writes a recording whose leaks match what the program says
    it leaked while traced."""
    p = start(t, [prog])
    try:
        pr = attached_process(t, p)
        if pr is None:
            return
        t.eq(pr.get('pid'), p.pid, 'pid in the recording')
        site = t.site(pr, 'leaky_alloc')
        n = site.get('leaked_allocations', 0) if site else 0
        # each round leaks 10 blocks of 100 bytes; rounds every 50 ms: 2 s is
        # ~40 rounds (the first and last may be cut by the attachment)
        t.check(site is not None and 100 <= n <= 800,
                f'leaked blocks of leaky_alloc: ~400 ({n})')
        if site:
            t.eq(site.get('allocations', 0) - site.get('frees', 0), n, 'allocations - frees = leaked')
        if site:
            t.eq(site.get('leaked_bytes'), 100 * n, 'leaked bytes of leaky_round')
    finally:
        p.kill()
        p.wait()


def case_attach_shim(t, prog):
    """Attaching to a process that the standalone shim records: the BPF side
    must not probe the shim's own malloc (it would count twice, and its
    return probe would hand the shim's unwinder the kernel's trampoline
    instead of the caller), so both see the leaker's stacks."""
    out = t.path('shim.mtrace')
    env = dict(os.environ, LD_PRELOAD=t.shim, MEMTRACE_OUTPUT=out)
    p = subprocess.Popen([prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        t.check('ready' in p.stdout.readline(), 'the leaker started under the shim')
        rc, so, se = t.run([t.memtrace, '-p', str(p.pid), '--duration', '1.5', '--interval', '0', '-n', '3'],
                           timeout=60)
        t.eq(rc, 0, f'memtrace -p on a shim-traced process (stderr {se.strip()[-300:]!r})')
        t.check('leaky_alloc' in so, f'BPF names the leaking caller: {so[-600:]!r}')
        # each round: 100 allocations (10 leaked); BPF must count each once
        # (the leak scan splits them: lost, possibly lost, still reachable)
        m = [l for l in so.splitlines() if l.startswith('leaked:')]
        n = sum(int(l.split(' in ')[1].split()[0].replace(',', '')) for l in m) if m else -1
        held = re.search(r'STILL REACHABLE: .* in ([\d,]+) blocks?', so)
        n += int(held.group(1).replace(',', '')) if held else 0
        t.check(n > 0 and n % 10 == 0, f'leaked allocations while attached: a multiple of 10 ({n})')
        time.sleep(0.3)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait()
    rep = t.report(out)
    pr = t.only_process(rep)
    if pr is not None:
        s = t.site(pr, 'leaky_alloc')
        t.check(s is not None, 'the shim recording names leaky_alloc (its stacks were not broken)')
        bad = [x for x in pr.get('sites', []) if not (x.get('frames') or [{}])[0].get('function')]
        t.eq(len(bad), 0, 'sites of the shim recording with an unnamed leaf')


def case_sweep(t, prog_a, prog_b):
    """Two leaking processes are found by a system-wide sweep, each with its
    own leaking call site."""
    a = start(t, [prog_a])
    b = start(t, [prog_b, 'b'])
    try:
        rc, so, se = t.run([t.memtrace, 'sweep', '--duration', '3', '--min-age', '0.2', '--json'], timeout=120)
        t.eq(rc, 0, f'memtrace sweep (stderr {se.strip()[-400:]!r})')
        try:
            rep = json.loads(so)
        except ValueError:
            t.fail(f'sweep --json is not JSON: {so[:300]!r}')
            return
        for proc, fn in ((a, 'leaky_alloc'), (b, 'other_alloc')):
            pr = t.process_with_pid(rep, proc.pid)
            if pr is None:
                continue
            # stacks taken before the sweep's first scan read the
            # process's unwind tables are cut (and counted): the same leak
            # may then stand in two sites, a cut one and a whole one
            sites = t.sites_of(pr, fn)
            n = sum(x.get('leaked_allocations', 0) for x in sites)
            t.check(n >= 10, f'pid {proc.pid}: {fn} leaks at least 10 blocks ({n}, in {len(sites)} sites)')
            lost = pr.get('lost_by_kind', {})
            t.check(len(sites) <= 1 or lost.get('stack_no_table', 0) + lost.get('stack_fault', 0) > 0,
                    f'pid {proc.pid}: {fn} in {len(sites)} sites: the cut stacks are counted ({lost})')
    finally:
        for p in (a, b):
            p.kill()
            p.wait()


def case_sweep_scan(t, prog):
    """sweep's leak scan: the server (server.c) serves one batch while the
    sweep watches; at the end its forgotten buffers rank first as lost,
    its cache and sessions are still held, not leaks."""
    p = start(t, [prog])
    # (every site: other processes of a busy machine, ranked above its held
    # blocks by their lost ones, would push them out of a shorter list)
    m = subprocess.Popen([t.memtrace, 'sweep', '--duration', '6', '--min-age', '0', '-n', '1000000'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = m.stderr.readline()
        if not t.check('every process probed' in line, f'sweep says when it watches ({line!r})'):
            return
        p.send_signal(signal.SIGUSR1)
        t.eq(p.stdout.readline().strip(), 'served 200', 'the server served a batch while swept')
        so, se = m.communicate(timeout=120)
        t.eq(m.returncode, 0, f'memtrace sweep (stderr {se[-400:]!r})')
        blocks = so.split('\n\n')
        mine = [b for b in blocks if f'pid {p.pid} ' in b]
        lost = [b for b in mine if 'serve' in b and ' lost in ' in b]
        t.check(len(lost) == 1 and lost[0].startswith('51.2 KB lost in 200 blocks,'),
                f'the forgotten buffers: 51.2 KB lost in 200 blocks ({mine[:3]!r})')
        held = [b.split(',')[0] for b in mine if 'still held' in b]
        t.eq(sorted(held), ['12.8 KB still held in 200 blocks', '25.6 KB still held in 200 blocks'],
             'the cache and the sessions: still held')
        first = next((b for b in blocks if b.startswith(('memtrace sweep', '  ')) is False), '')
        t.check('lost' in first.split('\n')[0], f'the sweep ranks lost blocks first ({first[:200]!r})')
        t.check(re.search(r'leak scan: [\d.]+ \w?B lost', so) is not None, f'the sweep sums the kinds up ({so[:300]!r})')
    finally:
        if m.poll() is None:
            m.kill()
            m.wait()
        p.kill()
        p.wait()


def one_error_line(t, argv, what, env=None, pre=()):
    rc, so, se = t.run([*pre, *argv], env=env, timeout=60)
    lines = [x for x in se.splitlines() if x.strip()]
    t.eq(rc, 1, f'{what}: exit status (stderr {se.strip()!r})')
    t.check(len(lines) == 1 and lines[0].startswith('memtrace: error:'),
            f'{what}: one line "memtrace: error: ..." on stderr: {lines!r}')
    return lines[0] if lines else ''


def case_errors(t, static_stripped):
    line = one_error_line(t, [t.memtrace, '-p', '999999999', '--duration', '1'], 'a pid that does not exist')
    t.check('999999999' in line, f'the error names the pid: {line!r}')
    p = subprocess.Popen([static_stripped, 'sleep'], stdout=subprocess.PIPE, text=True)
    try:
        p.stdout.readline()
        line = one_error_line(t, [t.memtrace, '-p', str(p.pid), '--duration', '1'],
                              'a process without an allocator')
        t.check(str(p.pid) in line, f'the error names the pid: {line!r}')
        t.check('symbol table' in line and 'unstripped' in line,
                f'the error says why and what can trace it: {line!r}')
    finally:
        p.kill()
        p.wait()
    sleeper = subprocess.Popen(['sleep', '30'])
    try:
        line = one_error_line(t, [t.memtrace, '-p', str(sleeper.pid), '--duration', '1'],
                              'without privileges',
                              pre=['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
                                   '--inh-caps=-all', '--bounding-set=-all'])
        t.check('privilege' in line or 'CAP_BPF' in line or 'root' in line or 'permission' in line.lower(),
                f'the error says privileges are missing: {line!r}')
    finally:
        sleeper.kill()
        sleeper.wait()


# ---- without frame pointers (bpf-leaker-nofp): the kernel's unwinder ----

# The leaking stack of leaker.c up to main, leaf first: the whole chain
# comes from the unwind tables (frame pointers would stop at leaky_alloc).
LEAK_CHAIN = ['leaky_alloc', 'round_of', 'leaky_round', 'main']


def to_main(site):
    """The function names of SITE's frames, leaf first, up to main."""
    names = [f.get('function') for f in site.get('frames') or []]
    return names[:names.index('main') + 1] if 'main' in names else names


def check_chain(t, site, want, label):
    if not t.check(site is not None, f'{label}: a site of {want[0]}'):
        return
    t.eq(to_main(site), want, f'{label}: the call chain of {want[0]} up to main')


def case_attach_nofp(t, prog):
    """memtrace -p -o FILE of a leaker built without frame pointers: the leak
    site has its whole chain, and its figures hold (10 of each 100 leaked)."""
    p = start(t, [prog])
    try:
        pr = attached_process(t, p)
        if pr is None:
            return
        sites = t.sites_of(pr, 'leaky_alloc')
        t.eq(len(sites), 1, 'sites of leaky_alloc (one stack)')
        if sites:
            s = sites[0]
            check_chain(t, s, LEAK_CHAIN, 'attach -o')
            n = s.get('leaked_allocations', 0)
            t.check(n >= 100, f'leaked blocks of leaky_alloc: ~400 ({n})')
            t.eq(s.get('allocations', 0) - s.get('frees', 0), n, 'allocations - frees = leaked')
            t.eq(s.get('allocations', 0) % 100, 0, 'allocations: whole rounds of 100')
        t.eq(pr.get('lost_events'), 0, 'lost_events (no stack cut, no table missing)')
        last = rounds_of(p, 0.5)
        t.check(last is not None and last.endswith('ok'), f'the program still checks out: {last!r}')
    finally:
        p.kill()
        p.wait()


def case_top_nofp(t, prog):
    """top --json -p: the leak site's frames go up to main."""
    p = start(t, [prog])
    try:
        rc, so, se = t.run([t.memtrace, 'top', '-p', str(p.pid), '--count', '2', '--interval', '1',
                            '--json'], timeout=60)
        t.eq(rc, 0, f'memtrace top --json (stderr {se.strip()[-400:]!r})')
        snaps = [json.loads(line) for line in so.splitlines() if line.strip().startswith('{')]
        if not t.check(len(snaps) == 2, f'two snapshots ({len(snaps)})'):
            return
        pr = t.process_with_pid(snaps[-1], p.pid)
        if pr is None:
            return
        site = t.site(pr, 'leaky_alloc')
        check_chain(t, site, LEAK_CHAIN, 'top --json')
        t.check(site is not None and site.get('outstanding_allocations', 0) >= 10,
                f'outstanding blocks of leaky_alloc: at least 10 ({site and site.get("outstanding_allocations")})')
    finally:
        p.kill()
        p.wait()


# top's screen (see twins.c): the two sites share their first four frames
TWINS_SHARED = ['node_alloc', 'pool_get', 'pool_fill', 'pool_grow']
HOME, CLEAR_LINE, CLEAR_BELOW = b'\x1b[H', b'\x1b[K', b'\x1b[J'


class Screen:
    """`memtrace top ARGS` on a pseudo-terminal of COLS x ROWS."""

    def __init__(self, t, args, cols=100, rows=20):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
        self.cols, self.rows = cols, rows
        self.p = subprocess.Popen([t.memtrace, 'top', *args], stdin=slave, stdout=slave,
                                  stderr=subprocess.PIPE, close_fds=True)
        os.close(slave)
        self.out = b''

    def read(self, until, timeout=20):
        """Reads until UNTIL(bytes so far) holds or TIMEOUT; returns it."""
        end = time.monotonic() + timeout
        while not until(self.out) and time.monotonic() < end:
            r, _, _ = select.select([self.master], [], [], 0.2)
            if r:
                try:
                    self.out += os.read(self.master, 65536)
                except OSError:
                    break
        return until(self.out)

    def frames(self):
        """The screens drawn whole so far: each from HOME to CLEAR_BELOW."""
        return [f.split(CLEAR_BELOW)[0] for f in self.out.split(HOME)[1:] if CLEAR_BELOW in f]

    def send(self, key):
        os.write(self.master, key)

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        os.close(self.master)


def screen_lines(frame):
    """A screen's lines, without their erase sequences and attributes."""
    text = frame.replace(CLEAR_LINE, b'').decode(errors='replace')
    text = re.sub(r'\x1b\[[0-9;]*m', '', text)
    return text.replace('\r', '').split('\n')


def site_rows(lines):
    return [x for x in lines if 'node_alloc' in x]


def case_top_screen(t, prog):
    """top on a terminal: a screen redrawn in place (home, each line erased
    after it, what is below erased), totals and keys in its header, the two
    sites told apart by the first frame they do not share, sorted again by
    a key, and q ends it with status 0 and the terminal given back."""
    p = start(t, [prog])
    s = Screen(t, ['-p', str(p.pid), '--interval', '0.5'])
    try:
        got = s.read(lambda o: len([f for f in Screen.frames(s) if len(site_rows(screen_lines(f))) == 2]) >= 2)
        t.check(got, f'two screens with both sites within 20 s ({s.out[-600:]!r})')
        t.check(s.out.startswith(b'\x1b[?1049h'), 'top enters the terminal\'s other screen first')
        frames = s.frames()
        t.check(len(frames) >= 2, f'screens drawn over each other ({len(frames)})')
        if not frames:
            return
        lines = screen_lines(frames[-1])
        t.check(f'pid {p.pid} (bpf-twins)' in lines[0] and 'outstanding' in lines[0],
                f'header: the process and its totals ({lines[0]!r})')
        t.check('sorted by outstanding bytes' in lines[1] and 'q quit' in lines[1], f'keys line ({lines[1]!r})')
        t.check(all(len(x) <= s.cols for x in lines), 'no line longer than the terminal')
        rows = site_rows(lines)
        if t.eq(len(rows), 2, f'rows of node_alloc ({lines})'):
            # load_config leaks more bytes, build_index more blocks
            t.check('load_config' in rows[0] and 'build_index' in rows[1],
                    f'sorted by outstanding bytes: load_config first ({rows})')
            for r in rows:
                t.check('node_alloc < (+3) < ' in r and 'pool_get' not in r,
                        f'a row names its first frame, then the first it does not share ({r!r})')
        n = len(s.frames())
        s.send(b'b')
        got = s.read(lambda o: len(Screen.frames(s)) > n
                     and 'sorted by outstanding blocks' in '\n'.join(screen_lines(Screen.frames(s)[-1])))
        t.check(got, 'the b key sorts by blocks at once')
        rows = site_rows(screen_lines(s.frames()[-1]))
        t.check(len(rows) == 2 and 'build_index' in rows[0], f'sorted by blocks: build_index first ({rows})')
        s.send(b'q')
        try:
            rc = s.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            rc = None
        s.read(lambda o: False, timeout=0.5)
        t.eq(rc, 0, f'exit status of top after q (stderr {s.p.stderr.read()[-400:]!r})')
        t.check(s.out.endswith(b'\x1b[?25h\x1b[?1049l'), f'top gives the screen back ({s.out[-40:]!r})')
    finally:
        s.close()
        p.kill()
        p.wait()


def case_top_log(t, prog):
    """top into a pipe: the log of tables as before, no screen sequences."""
    p = start(t, [prog])
    try:
        rc, so, se = t.run([t.memtrace, 'top', '-p', str(p.pid), '--count', '2', '--interval', '0.5'],
                           timeout=60)
        t.eq(rc, 0, f'memtrace top into a pipe (stderr {se.strip()[-400:]!r})')
        t.check('\x1b' not in so, 'no terminal sequences in a pipe')
        head = '{:>12} {:>10} {:>10} {:>8}  {:<16} {}'.format('OUTSTANDING', 'BLOCKS', 'ALLOC/S', 'PID',
                                                            'PROCESS', 'CALL SITE')
        t.eq(so.count(head + '\n'), 2, f'two tables with their column heads ({so[:300]!r})')
        t.eq(len(re.findall(r'^memtrace: [0-9.]+ s, 1 process, ', so, re.M)), 2, 'two table headers')
        rows = [x for x in so.splitlines() if 'node_alloc' in x]
        t.check(rows and all(f' < {" < ".join(TWINS_SHARED[1:])}' in x for x in rows),
                f'the rows of the log: four frames each, as before ({rows})')
        # --sort in a pipe too: build_index leaks more blocks, fewer bytes
        rc, so, se = t.run([t.memtrace, 'top', '-p', str(p.pid), '--count', '1', '--interval', '0.5',
                            '--sort', 'blocks'], timeout=60)
        rows = [x for x in so.splitlines() if 'node_alloc' in x]
        blocks = [int(x.split()[2].replace(',', '')) for x in rows]
        t.check(rc == 0 and len(rows) == 2 and blocks[0] > blocks[1],
                f'top --sort blocks: the site of more blocks first ({rows}, stderr {se.strip()[-200:]!r})')
    finally:
        p.kill()
        p.wait()


def case_top_name(t, prog):
    """top names a process by the name it was run under (argv[0], as ps
    does), not by its executable's: the leaker run through a link named
    otherwise (as redis-server is a link to redis-check-rdb)."""
    link = t.path('renamed-leaker')
    os.symlink(os.path.realpath(prog), link)
    p = start(t, [link])
    try:
        rc, so, se = t.run([t.memtrace, 'top', '-p', str(p.pid), '--count', '2', '--interval', '1'],
                           timeout=60)
        t.eq(rc, 0, f'memtrace top (stderr {se.strip()[-400:]!r})')
        # OUTSTANDING (a number and a unit), BLOCKS, ALLOC/S, PID, PROCESS
        rows = [ln.split() for ln in so.splitlines() if ln.split()[4:5] == [str(p.pid)]]
        if not t.check(rows, f'rows of process {p.pid} in top\'s table: {so[-600:]!r}'):
            return
        t.eq(sorted({r[5] for r in rows}), ['renamed-leaker'], 'the PROCESS column of its rows')
    finally:
        p.kill()
        p.wait()


def case_sweep_nofp(t, prog):
    """sweep --json (every process): the leak site's chain up to main.  The
    sweep reads every process's objects as its first scan reaches them, and
    traces them from the first: stacks taken before the leaker's own table
    was read stop at its first frame, counted as stack_no_table; none may
    be wrong."""
    p = start(t, [prog])
    try:
        rc, so, se = t.run([t.memtrace, 'sweep', '--duration', '3', '--min-age', '0.2', '--json'], timeout=120)
        t.eq(rc, 0, f'memtrace sweep (stderr {se.strip()[-400:]!r})')
        try:
            rep = json.loads(so)
        except ValueError:
            t.fail(f'sweep --json is not JSON: {so[:300]!r}')
            return
        pr = t.process_with_pid(rep, p.pid)
        if pr is None:
            return
        sites = t.sites_of(pr, 'leaky_alloc')
        whole = [s for s in sites if to_main(s) == LEAK_CHAIN]
        t.eq(len(whole), 1, 'sweep --json: sites of leaky_alloc with the whole chain up to main')
        n = sum(s.get('leaked_allocations', 0) for s in whole)
        t.check(n >= 10, f'leaked blocks of leaky_alloc with the whole chain: at least 10 ({n})')
        cut = [s for s in sites if to_main(s) != LEAK_CHAIN]
        t.eq([to_main(s) for s in cut if to_main(s) != LEAK_CHAIN[:len(to_main(s))]], [],
             'sweep --json: the other stacks of leaky_alloc are cut, not wrong')
        if cut:
            t.check(pr.get('lost_by_kind', {}).get('stack_no_table', 0) > 0,
                    'cut stacks are counted as stack_no_table')
    finally:
        p.kill()
        p.wait()


def case_attach_dlopen(t, prog, lib):
    """A library dlopened after the attachment (leaker.c "dlopen LIB", on
    SIGUSR1): once the tracer has read its table (its next look at the
    process's maps, within about a second), its frames have whole chains;
    stacks taken before stop at its frame and are counted as
    stack_no_table, one per allocation."""
    p = start(t, [prog, 'dlopen', lib])
    try:
        out = t.path('attach.mtrace')
        tracer = subprocess.Popen([t.memtrace, '-p', str(p.pid), '--duration', '4', '--interval', '0',
                                   '-o', out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        p.send_signal(signal.SIGUSR1)
        so, se = tracer.communicate(timeout=120)
        t.eq(tracer.returncode, 0, f'memtrace -p PID -o FILE (stderr {se.strip()[-400:]!r})')
        pr = t.only_process(t.report(out))
        if pr is None:
            return
        sites = t.sites_of(pr, 'lib_leak')
        whole = [s for s in sites if to_main(s) == ['lib_leak', 'main']]
        cut = [s for s in sites if to_main(s) != ['lib_leak', 'main']]
        n_whole = sum(s.get('allocations', 0) for s in whole)
        t.check(n_whole >= 100, f'allocations of lib_leak with the whole chain lib_leak < main: {n_whole}')
        for s in whole:
            t.eq(os.path.realpath(s['frames'][0].get('module') or ''), os.path.realpath(lib),
                 'module of the lib_leak frame')
        t.eq([to_main(s) for s in cut if to_main(s) != ['lib_leak']], [],
             'other stacks of lib_leak are cut right after it (its table not loaded yet)')
        n_cut = sum(s.get('allocations', 0) for s in cut)
        t.eq(pr.get('lost_by_kind', {}).get('stack_no_table'), n_cut,
             'stack_no_table: one per allocation of lib_leak taken before its table was loaded')
        check_chain(t, t.site(pr, 'leaky_alloc'), LEAK_CHAIN, 'the program\'s own leak')
    finally:
        p.kill()
        p.wait()


def case_attach_exits(t, prog):
    """A process that leaks and exits within a second of the attachment
    (leaker.c "once", on SIGUSR1), before memtrace's first look at /proc:
    the leak report printed at the end, and the recording (-o), still name
    it and its frames (both were "process N (?)" with every frame a bare
    address), with the figures leaker.c says: 10 blocks of 100 bytes from
    one leaky_round, and stdout's buffer, allocated while traced, held by
    the C library, not leaked (the printed report called it a leak)."""
    p = subprocess.Popen([prog, 'once'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        t.check('ready' in line, f'leaker started ({line!r})')
        out = t.path('exits.mtrace')
        tracer = subprocess.Popen([t.memtrace, '-p', str(p.pid), '--interval', '0', '-o', out],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = tracer.stderr.readline()
        t.check('attached to 1 process' in first, f'memtrace -p says it attached ({first!r})')
        p.send_signal(signal.SIGUSR1)
        so, se = tracer.communicate(timeout=60)
        t.eq(tracer.returncode, 0, f'memtrace -p PID (stderr {se.strip()[-400:]!r})')
        t.eq(p.wait(timeout=30), 0, 'the leaker exits by itself')
        name = os.path.basename(prog)[:15]
        t.check(f'process {p.pid} ({name}): {prog} once' in so,
                f'the report names the process and its command line: {so[:300]!r}')
        t.check('leaked: 1.00 KB in 10 allocations' in so.splitlines(), f'leaked figures: {so[:600]!r}')
        tree = [ln.split('): ', 1)[1] for ln in so.splitlines() if '-> ' in ln and '): ' in ln]
        funcs = [fr.split(' ')[0] for fr in tree]
        t.eq(funcs[:5], ['malloc'] + LEAK_CHAIN, 'the leak tree: malloc < leaky_alloc < ... < main')
        t.eq([fr for fr in tree if fr.startswith('0x')], [], 'frames that are bare addresses')
        pr = t.only_process(t.report(out))
        if pr is None:
            return
        t.eq((pr.get('name'), pr.get('argv')), (name, [prog, 'once']), 'the recording: name and argv')
        tot = pr.get('totals', {})
        t.eq((tot.get('leaked_allocations'), tot.get('leaked_bytes')), (10, 1000),
             'the recording: leaked blocks and bytes')
        t.eq(tot.get('runtime_held_allocations'), 1, 'the recording: stdout\'s buffer, held by the runtime')
        site = t.site(pr, 'leaky_alloc')
        if t.check(site is not None, 'the recording: a site of leaky_alloc'):
            t.eq(to_main(site), LEAK_CHAIN, 'the recording: the call chain of leaky_alloc up to main')
    finally:
        p.kill()
        p.wait()


def case_attach_exit_status(t, prog):
    """A process attached to (-p) that exits while traced: the kernel's
    record of its exit gives its real status, in the recording (-o) and in
    the leak report printed at the end, with -o (events mode) and without
    (aggregation).  Both said "still running when tracing stopped" right
    after memtrace said every traced process had exited.  leaker.c "exit
    3" exits with status 3 on SIGUSR1; the plain leaker is killed by
    SIGTERM (it has no handler)."""
    for args, sig, status, words, with_o in (
            (['exit', '3'], signal.SIGUSR1, 3, 'exit status 3', True),
            ([], signal.SIGTERM, -15, 'killed by SIGTERM', True),
            (['exit', '3'], signal.SIGUSR1, 3, 'exit status 3', False),
            ([], signal.SIGTERM, -15, 'killed by SIGTERM', False)):
        label = f'{words}{" (-o)" if with_o else ""}'
        p = start(t, [prog, *args])
        out = t.path(f'exit{status}{"o" if with_o else ""}.mtrace')
        try:
            tracer = subprocess.Popen([t.memtrace, '-p', str(p.pid), '--interval', '0', '--duration', '30',
                                       *(['-o', out] if with_o else [])],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            first = tracer.stderr.readline()
            t.check('attached to 1 process' in first, f'{label}: memtrace -p says it attached ({first!r})')
            time.sleep(0.3)  # a few rounds traced
            p.send_signal(sig)
            so, se = tracer.communicate(timeout=60)
            t.eq(tracer.returncode, 0, f'{label}: memtrace -p PID (stderr {se.strip()[-400:]!r})')
            t.check('every traced process has exited' in se, f'{label}: memtrace saw the exit ({se[-300:]!r})')
            want = -signal.SIGTERM if status < 0 else status
            t.eq(p.wait(timeout=30), want, f'{label}: the leaker\'s status as its parent sees it')
        finally:
            p.kill()
            p.wait()
        heads = [ln for ln in so.splitlines() if ln.startswith('  backend bpf')]
        t.check(len(heads) == 1 and heads[0].endswith(', ' + words),
                f'{label}: the printed leak report\'s header ends in "{words}": {heads!r}')
        if not with_o:
            continue
        pr = t.only_process(t.report(out))
        if pr is None:
            continue
        t.eq(pr.get('exit_status'), status, f'{label}: the recording\'s exit_status')
        t.eq(pr.get('signal'), 'SIGTERM' if status < 0 else None, f'{label}: the recording\'s signal')
        fn = 'other_alloc' if args else 'leaky_alloc'
        site = t.site(pr, fn)
        n = site.get('leaked_allocations', 0) if site else 0
        t.check(n >= 10, f'{label}: the recording\'s leaks of {fn}: at least one round\'s 10 ({n})')
        rc, text, _ = t.run([t.memtrace, 'report', out])
        head = [ln for ln in text.splitlines() if ln.startswith('  backend bpf')]
        t.check(rc == 0 and len(head) == 1 and head[0].endswith(', ' + words),
                f'{label}: memtrace report of the recording says "{words}": {head!r}')


def case_attach_title(t, prog):
    """A process that set its title as redis-server does (leaker.c "title":
    its argument area zeroed past the title): the recording's command line
    is the title alone, as ps shows it, not the title and a run of empty
    arguments (the report's header ended in spaces)."""
    p = start(t, [prog, 'title'])
    try:
        pr = attached_process(t, p)
        if pr is None:
            return
        t.eq(pr.get('argv'), ['leaker title'], 'argv of a process that set its title')
        rc, so, se = t.run([t.memtrace, 'report', t.path('attach.mtrace')])
        head = so.splitlines()[0] if so else ''
        t.eq(head, f'process {p.pid} (leaker title): leaker title (running {os.path.realpath(prog)})',
             'the report\'s first line')
    finally:
        p.kill()
        p.wait()


def scan_session(t, p, opts=(), label='memtrace -p'):
    """memtrace -p P (OPTS) while P serves one batch (server.c): its
    output once stopped with SIGINT, or None."""
    m = subprocess.Popen([t.memtrace, '-p', str(p.pid), '--interval', '0', *opts],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = m.stderr.readline()
        if not t.check('attached' in line, f'{label}: attached ({line!r})'):
            return None
        p.send_signal(signal.SIGUSR1)
        served = p.stdout.readline().strip()
        t.check(served.startswith('served'), f'{label}: the server served a batch ({served!r})')
        m.send_signal(signal.SIGINT)
        so, se = m.communicate(timeout=60)
        t.eq(m.returncode, 0, f'{label}: exit status (stderr {se[-400:]!r})')
        return so, line + se
    finally:
        if m.poll() is None:
            m.kill()
            m.wait()


def case_attach_scan(t, prog):
    """The leak scan at the end of an attach: a server that forgets one
    buffer per request and keeps a cache (server.c).  The forgotten
    buffers are definitely lost; the cache, and the sessions held only by a
    block allocated before the attach, are still reachable; the pause is
    printed; the server serves on."""
    p = start(t, [prog])
    try:
        out = scan_session(t, p)
        if out is None:
            return
        so, se = out
        m = re.search(r'leak scan of process \d+: (\d+) bytes definitely lost, (\d+) indirectly, (\d+) possibly, '
                      r'(\d+) still reachable \(([\d.]+) MB scanned; the process was held ([\d.]+) ms\)', se)
        t.check(m is not None, f'the scan says what it found and how long the process was held ({se[-400:]!r})')
        if m:
            t.eq([int(m.group(k)) for k in (1, 2, 3, 4)], [51200, 0, 0, 38400],
                 'bytes definitely, indirectly, possibly lost, still reachable (server.c\'s batch)')
        t.check('DEFINITELY AND INDIRECTLY LOST' in so and 'leaked: 51.2 KB in 200 allocations' in so,
                f'the report: the forgotten buffers first ({so[:600]!r})')
        t.check('STILL REACHABLE: 38.4 KB in 400 blocks at 2 sites' in so,
                f'the report: the cache and the sessions still held, in one line ({so[-300:]!r})')
        lost = so[so.find('DEFINITELY'):so.find('POSSIBLY')]
        t.check('serve' in lost, f'the lost buffers\' site is named ({lost[:400]!r})')
        # detached, the server serves on; without a scan every block leaks
        out = scan_session(t, p, ['--no-scan'], 'memtrace -p --no-scan')
        if out:
            so, se = out
            t.check('leak scan' not in se and 'DEFINITELY' not in so, '--no-scan: no scan')
            t.check('leaked: 89.6 KB in 600 allocations' in so, f'--no-scan: every block leaked ({so[-600:]!r})')
        # on demand: SIGUSR2 scans and reports while attached
        m = subprocess.Popen([t.memtrace, '-p', str(p.pid), '--interval', '0'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            t.check('attached' in m.stderr.readline(), 'memtrace -p: attached again')
            p.send_signal(signal.SIGUSR1)
            t.eq(p.stdout.readline().strip(), 'served 600', 'the server still serves after two scans')
            m.send_signal(signal.SIGUSR2)
            first = m.stderr.readline()
            t.check('leak scan of process' in first and ': 51200 bytes definitely lost' in first,
                    f'SIGUSR2: a scan while attached ({first!r})')
            p.send_signal(signal.SIGUSR1)
            t.eq(p.stdout.readline().strip(), 'served 800', 'the server serves on after a scan')
            m.send_signal(signal.SIGINT)
            so, se = m.communicate(timeout=60)
            t.check(': 102400 bytes definitely lost' in se, f'the scan at the end counts both batches ({se[-300:]!r})')
            t.eq(so.count('DEFINITELY AND INDIRECTLY LOST'), 2, 'two leak reports: on SIGUSR2 and at the end')
        finally:
            if m.poll() is None:
                m.kill()
                m.wait()
    finally:
        p.kill()
        p.wait()


def made_line(t, p, label):
    """forker.c's "made N LOST HELD FORKS" after a SIGUSR1, as integers."""
    p.send_signal(signal.SIGUSR1)
    line = p.stdout.readline().split()
    if not t.check(len(line) == 5 and line[0] == 'made', f'{label}: the forker made a batch ({line!r})'):
        return None
    return [int(x) for x in line[1:]]


SCAN_LINE = (r'leak scan of process {}: (\d+) bytes definitely lost, (\d+) indirectly, (\d+) possibly, '
             r'(\d+) still reachable \([\d.]+ MB scanned; the process was held ([\d.]+) ms\)')


def case_attach_scan_forks(t, prog):
    """The leak scan of a process that forks every half millisecond
    (forker.c): its forks come as its threads are being stopped and while
    it is held.  Each scan, on SIGUSR2 and at the end, finds exactly its
    batch's kinds; nothing hangs; it forks on after each.  With a thread
    inside vfork whose child waits on the main thread (held), the process
    cannot be held whole: the scan gives up within a second or so, says
    why, and lets the process go on."""
    p = start(t, [prog])
    m = None
    try:
        m = subprocess.Popen([t.memtrace, '-p', str(p.pid), '--interval', '0'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not t.check('attached' in m.stderr.readline(), 'memtrace -p: attached'):
            return
        made = made_line(t, p, 'fork')
        if made is None:
            return
        _, lost, held, forks = made
        held_ms = []
        for i in range(3):
            m.send_signal(signal.SIGUSR2)
            line = m.stderr.readline()
            r = re.search(SCAN_LINE.format(p.pid), line)
            if t.check(r is not None, f'scan {i} while forking: done and said ({line!r})'):
                t.eq([int(r[k]) for k in (1, 2, 3, 4)], [lost, 0, 0, held],
                     f'scan {i}: bytes definitely, indirectly, possibly lost, still reachable')
                held_ms.append(float(r[5]))
            # (the leak report the scan prints on stdout is read at the end)
        m.send_signal(signal.SIGINT)
        so, se = m.communicate(timeout=60)
        t.eq(m.returncode, 0, f'memtrace -p: exit status (stderr {se[-400:]!r})')
        r = re.search(SCAN_LINE.format(p.pid), se)
        t.check(r and [int(r[1]), int(r[4])] == [lost, held], f'the scan at the end ({se[-400:]!r})')
        again = made_line(t, p, 'fork, detached')
        t.check(again and again[3] > forks, f'the forker forks on after the scans ({forks} then {again})')
        t.note(f'held {held_ms} ms while forking every half millisecond')
    finally:
        if m and m.poll() is None:
            m.kill()
            m.wait()
        p.kill()
        p.wait()

    p = start(t, [prog, 'vfork'])
    m = None
    try:
        m = subprocess.Popen([t.memtrace, '-p', str(p.pid), '--interval', '0'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not t.check('attached' in m.stderr.readline(), 'memtrace -p (vfork): attached'):
            return
        made = made_line(t, p, 'vfork')
        t0 = time.monotonic()
        m.send_signal(signal.SIGINT)
        so, se = m.communicate(timeout=60)
        took = time.monotonic() - t0
        t.eq(m.returncode, 0, f'vfork: memtrace -p exit status (stderr {se[-400:]!r})')
        t.check(re.search(rf'process {p.pid}: no leak scan: thread \d+ of process {p.pid} did not stop within '
                          r'1000 ms \(inside vfork', se),
                f'vfork: the scan gave up and says why ({se[-400:]!r})')
        t.check(took < 10, f'vfork: memtrace -p ended in {took:.1f} s, not hung')
        again = made_line(t, p, 'vfork, detached')
        t.check(made and again and again[3] > made[3], f'vfork: the forker goes on ({made} then {again})')
    finally:
        if m and m.poll() is None:
            m.kill()
            m.wait()
        p.kill()
        p.wait()


def case_top_scan(t, prog):
    """top -p scans each process at its end, as memtrace -p does: the
    server (server.c) serves a batch while watched; its forgotten buffers
    are definitely lost, its cache and sessions still reachable."""
    p = start(t, [prog])
    try:
        for opts, scan in (([], True), (['--no-scan'], False)):
            label = ' '.join(['top', *opts])
            m = subprocess.Popen([t.memtrace, 'top', '-p', str(p.pid), '--interval', '0.5', '--count', '4', *opts],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                first = m.stdout.readline()
                first = first if first.strip() else m.stdout.readline()  # (a table's blank line first)
                t.check(first.startswith('memtrace: '), f'{label}: a first table ({first!r})')
                p.send_signal(signal.SIGUSR1)
                served = p.stdout.readline().strip()
                t.check(served.startswith('served'), f'{label}: the server served a batch ({served!r})')
                so, se = m.communicate(timeout=60)
                t.eq(m.returncode, 0, f'{label}: exit status (stderr {se[-400:]!r})')
            finally:
                if m.poll() is None:
                    m.kill()
                    m.wait()
            r = re.search(SCAN_LINE.format(p.pid), se)
            if not scan:
                t.check('leak scan' not in se, f'{label}: no scan ({se!r})')
            elif t.check(r is not None, f'{label}: the scan at the end says what it found ({se!r})'):
                t.eq([int(r[k]) for k in (1, 2, 3, 4)], [51200, 0, 0, 38400],
                     f'{label}: bytes definitely, indirectly, possibly lost, still reachable (the batch)')
        p.send_signal(signal.SIGUSR1)
        t.eq(p.stdout.readline().strip(), 'served 600', 'the server serves on after top\'s scans')
    finally:
        p.kill()
        p.wait()


def main():
    name = sys.argv[1]
    why = bpflib.bpf_unavailable()
    if why:
        print(f'bpf-{name}: skipped: {why}')
        sys.exit(77)
    t = gtlib.Case('bpf-' + name)
    try:
        globals()['case_' + name.replace('-', '_')](t, *sys.argv[2:])
    except Exception:
        import traceback
        traceback.print_exc()
        t.fail('the case raised an exception')
    t.finish()


if __name__ == '__main__':
    main()
