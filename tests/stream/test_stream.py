"""Live streaming: `memtrace record --listen` and `memtrace gather`.

  test_stream.py loopback|netns SLOW

slow.c allocates for about 1.2 s: 60 allocations, 30 frees, 90,000 bytes
leaked.  In every case the gathered file must be byte for byte the
recorder's own (the recording file is what travels) and report those
figures.

loopback: gathering on 127.0.0.1 (no token needed there); a gatherer killed
with SIGKILL mid-run and started again with the same file resumes and loses
nothing; a second gatherer while one is connected is refused; a file that
exists and is not a gathering in progress is refused.

netns (root): the gatherer runs in a network namespace of its own, joined
to this one by a veth pair, so the recorder listens off loopback: without
the token, or with a wrong one, gather is refused (exit 1, saying why);
with it the copy is whole; with --broadcast, `gather` with no address finds
the recorder across the veth and takes the recording.
"""

import os
import re
import signal
import subprocess
import sys
import time

import gtlib

mode, slow = sys.argv[1], sys.argv[2]
t = gtlib.Case('stream-' + mode)


def start_record(listen, extra=(), out='local.mtrace'):
    """Starts `memtrace record --listen LISTEN EXTRA -- slow`; returns the
    process, the local file and the address and token it printed."""
    path = t.path(out)
    err = open(t.path(out + '.err'), 'w+')
    p = subprocess.Popen([t.memtrace, 'record', '--listen', listen, *extra, '-o', path, '--',
                          slow], stdout=subprocess.DEVNULL, stderr=err, text=True)
    where = token = None
    for _ in range(100):
        err.seek(0)
        m = re.search(r'gather with: memtrace gather (\S+)(?: --token (\S+))?', err.read())
        if m:
            where, token = m.group(1), m.group(2)
            break
        time.sleep(0.05)
    t.check(where is not None, f'record --listen {listen} says where it streams')
    return p, path, where, token, err


def finish(p, err, what):
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    err.seek(0)
    t.eq(rc, 0, f'{what}: exit status of record --listen (stderr {err.read()[-300:]!r})')


def same_file(a, b, what):
    da = open(a, 'rb').read() if os.path.exists(a) else b''
    db = open(b, 'rb').read() if os.path.exists(b) else None
    t.check(db == da and len(da) > 16, f'{what}: the gathered file is the recording, byte for byte '
            f'({len(db) if db is not None else "no file"} B against {len(da)} B)')


def figures(path, what):
    p = t.only_process(t.report(path))
    if p:
        t.check_totals(p, what, allocations=60, frees=30, leaked_allocations=30, leaked_bytes=90000)


def gather(args, ns=None, what='gather'):
    argv = [t.memtrace, 'gather', *args]
    if ns:
        argv = ['ip', 'netns', 'exec', ns, *argv]
    return t.run(argv, timeout=60, what=what)


def loopback():
    # 1. the whole recording, with the command still running when gather starts
    p, local, where, token, err = start_record('127.0.0.1:0')
    t.check(token is None, 'no token on loopback unless asked for')
    rc, _, se = gather([where, '-o', t.path('g1.mtrace')])
    t.eq(rc, 0, f'gather {where}: exit status (stderr {se[-300:]!r})')
    finish(p, err, 'loopback')
    same_file(local, t.path('g1.mtrace'), 'loopback')
    figures(t.path('g1.mtrace'), 'gathered on loopback')
    t.check(not os.path.exists(t.path('g1.mtrace') + '.gather'), 'the sidecar is gone once gathered')

    # 2. killed mid-run, restarted with the same file: nothing lost
    p, local, where, _, err = start_record('127.0.0.1:0', out='local2.mtrace')
    out = t.path('g2.mtrace')
    g = subprocess.Popen([t.memtrace, 'gather', where, '-o', out], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(out) and os.path.getsize(out) > 16:
            break
        time.sleep(0.01)
    partial = os.path.getsize(out) if os.path.exists(out) else 0
    g.send_signal(signal.SIGKILL)
    g.wait()
    t.check(p.poll() is None, 'the gatherer was killed while the command still ran')
    t.check(os.path.exists(out + '.gather'), 'a killed gathering leaves its sidecar')
    rc, _, se = gather([where, '-o', out])
    t.eq(rc, 0, f'the restarted gather: exit status (stderr {se[-300:]!r})')
    t.check('resuming' in se, f'the restarted gather resumes (stderr {se[-300:]!r})')
    t.note(f'killed with {partial} B gathered, resumed')
    finish(p, err, 'restart')
    same_file(local, out, 'killed and restarted')
    figures(out, 'gathered after a restart')

    # 3. a finished file is not overwritten; a second gatherer is refused
    p, local, where, _, err = start_record('127.0.0.1:0', out='local3.mtrace')
    rc, _, se = gather([where, '-o', out, '--retry', '0'])
    t.eq(rc, 1, 'gather into an existing (finished) recording: exit status')
    t.check('exists' in se and out in se, f'the refusal names the file (stderr {se.strip()!r})')
    first = subprocess.Popen([t.memtrace, 'gather', where, '-o', t.path('g3.mtrace')],
                             stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    rc, _, se = gather([where, '-o', t.path('g3b.mtrace'), '--retry', '0'])
    t.eq(rc, 1, 'a second gatherer while one is connected: exit status')
    t.check('refused' in se, f'the second gatherer is told why (stderr {se.strip()!r})')
    first.wait(timeout=60)
    finish(p, err, 'busy')
    same_file(local, t.path('g3.mtrace'), 'the first gatherer')

    # 4. bad addresses are usage errors
    rc, _, se = gather(['127.0.0.1:99999'])
    t.eq(rc, 2, 'gather 127.0.0.1:99999: exit status')
    rc, _, se = t.run([t.memtrace, 'record', '--token', 'x', '--', slow])
    t.eq(rc, 2, 'record --token without --listen: exit status')


def sh(*argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        t.fail(f'{" ".join(argv)}: {r.stderr.strip()}')
    return r.returncode == 0


def netns():
    if os.geteuid() != 0:
        print('stream-netns: SKIP: needs root (network namespaces)')
        sys.exit(77)
    n = os.getpid() % 200 + 20
    ns, va, vb = f'mtg{os.getpid()}', f'mtva{os.getpid()}', f'mtvb{os.getpid()}'
    here, there = f'10.251.{n}.1', f'10.251.{n}.2'
    try:
        ok = (sh('ip', 'netns', 'add', ns) and
              sh('ip', 'link', 'add', va, 'type', 'veth', 'peer', 'name', vb) and
              sh('ip', 'link', 'set', vb, 'netns', ns) and
              sh('ip', 'addr', 'add', f'{here}/24', 'brd', '+', 'dev', va) and
              sh('ip', 'link', 'set', va, 'up') and
              sh('ip', 'netns', 'exec', ns, 'ip', 'addr', 'add', f'{there}/24', 'brd', '+', 'dev', vb) and
              sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', vb, 'up') and
              sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up'))
        if not ok:
            return
        # the token: required off loopback, made up and printed
        p, local, where, token, err = start_record(f'{here}:0')
        t.check(token is not None and len(token) >= 16, f'a token is made up off loopback ({token!r})')
        rc, _, se = gather([where, '-o', t.path('n0.mtrace'), '--retry', '0'], ns=ns)
        t.eq(rc, 1, 'gather without the token: exit status')
        t.check('token' in se and 'required' in se, f'without the token: says so (stderr {se.strip()!r})')
        rc, _, se = gather([where, '--token', 'wrong', '-o', t.path('n1.mtrace'), '--retry', '0'], ns=ns)
        t.eq(rc, 1, 'gather with a wrong token: exit status')
        t.check('wrong token' in se, f'a wrong token: says so (stderr {se.strip()!r})')
        rc, _, se = gather([where, '--token', token or '-', '-o', t.path('n2.mtrace')], ns=ns)
        t.eq(rc, 0, f'gather with the token across the veth: exit status (stderr {se[-300:]!r})')
        finish(p, err, 'netns')
        same_file(local, t.path('n2.mtrace'), 'across the veth')
        figures(t.path('n2.mtrace'), 'gathered across the veth')

        # discovery: the recorder announces itself; gather with no address
        p, local, where, token, err = start_record(f'{here}:0', ['--broadcast', '--token', 'sesame'],
                                                   out='local-b.mtrace')
        os.makedirs(t.path('found'))
        rc, _, se = gather(['--token', 'sesame', '-d', t.path('found'), '--wait', '3'], ns=ns)
        t.eq(rc, 0, f'gather with no address: exit status (stderr {se[-400:]!r})')
        finish(p, err, 'broadcast')
        found = [f for f in os.listdir(t.path('found')) if f.endswith('.mtrace')]
        t.eq(len(found), 1, f'recordings found by broadcast ({found})')
        if found:
            t.check(found[0].startswith('memtrace.stream-slow.'), f'named after the command ({found[0]})')
            same_file(local, os.path.join(t.path('found'), found[0]), 'found by broadcast')
    finally:
        subprocess.run(['ip', 'link', 'del', va], capture_output=True)
        subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)


loopback() if mode == 'loopback' else netns()
t.finish()
