"""Live streaming: `memtrace record --listen` and `memtrace gather`, and
the standalone shim serving its own recording (MEMTRACE_ENABLE_SERVER).

  test_stream.py loopback|netns|shim-loopback|shim-netns SLOW

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
with it the copy is whole; with --broadcast, `gather --token` with no
address finds the recorder across the veth and names it without sending
the token (anyone can announce), and gathering the address named takes
the recording.

shim-loopback, shim-netns: the same with no `memtrace record`, SLOW run
under LD_PRELOAD with MEMTRACE_ENABLE_SERVER=1: the gathered file is the
shim's own output byte for byte, with SLOW's figures; the base port taken,
the shim serves on the next free one; a gatherer killed mid-run and started
again loses nothing; MEMTRACE_TOKEN is asked for on loopback when set; off
loopback (MEMTRACE_LISTEN) a token is made up and printed, and a gatherer
without it is refused; with MEMTRACE_ENABLE_BROADCAST, `gather` with no
address finds the program (and names it, as above).  MEMTRACE_SERVER_WAIT keeps the program at its
exit until a gatherer has come, so that no step races its end.  Forks
(shim-loopback, FORKS: forks.c): a child that is not followed does not keep
its parent's listening socket (the port is free once the parent has
exited, the child still running); a followed one serves its own recording
on the next free port, and both are gathered whole with their own figures.
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import gtlib

mode, slow = sys.argv[1], sys.argv[2]
forks = sys.argv[3] if len(sys.argv) > 3 else None
t = gtlib.Case('stream-' + mode)


def where_streamed(err, who):
    """The address and token that WHO printed on ERR (a file it writes), as
    soon as it has: (None, None) if it never does."""
    for _ in range(100):
        err.seek(0)
        m = re.search(r'gather with: memtrace gather (\S+)(?: --token (\S+))?', err.read())
        if m:
            return m.group(1), m.group(2)
        time.sleep(0.05)
    t.check(False, f'{who} says where it streams')
    return None, None


def start_record(listen, extra=(), out='local.mtrace'):
    """Starts `memtrace record --listen LISTEN EXTRA -- slow`; returns the
    process, the local file and the address and token it printed."""
    path = t.path(out)
    err = open(t.path(out + '.err'), 'w+')
    p = subprocess.Popen([t.memtrace, 'record', '--listen', listen, *extra, '-o', path, '--',
                          slow], stdout=subprocess.DEVNULL, stderr=err, text=True)
    where, token = where_streamed(err, f'record --listen {listen}')
    return p, path, where, token, err


def finish(p, err, what, whose='record --listen'):
    """Checks that P (WHOSE, its stderr in ERR) ends well."""
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    err.seek(0)
    t.eq(rc, 0, f'{what}: exit status of {whose} (stderr {err.read()[-300:]!r})')


def same_file(a, b, what):
    da = open(a, 'rb').read() if os.path.exists(a) else b''
    db = open(b, 'rb').read() if os.path.exists(b) else None
    t.check(db == da and len(da) > 16, f'{what}: the gathered file is the recording, byte for byte '
            f'({len(db) if db is not None else "no file"} B against {len(da)} B)')


def figures(path, what):
    p = t.only_process(t.report(path))
    if p:
        t.check_totals(p, what, allocations=60, frees=30, leaked_allocations=30, leaked_bytes=90000)


def whole_copy(local, copy, what):
    """COPY, gathered, is the recording LOCAL byte for byte, with SLOW's
    figures."""
    same_file(local, copy, what)
    figures(copy, what)


def gather(args, ns=None, what='gather'):
    argv = [t.memtrace, 'gather', *args]
    if ns:
        argv = ['ip', 'netns', 'exec', ns, *argv]
    return t.run(argv, timeout=60, what=what)


def kill_and_resume(p, where, out, whose):
    """Gathers from WHERE into OUT, kills the gatherer once something came
    while P (WHOSE) still runs, and gathers again into OUT: it resumes."""
    g = subprocess.Popen([t.memtrace, 'gather', where, '-o', out], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(out) and os.path.getsize(out) > 16:
            break
        time.sleep(0.01)
    partial = os.path.getsize(out) if os.path.exists(out) else 0
    g.send_signal(signal.SIGKILL)
    g.wait()
    t.check(p.poll() is None, f'the gatherer was killed while {whose} still ran')
    t.check(os.path.exists(out + '.gather'), 'a killed gathering leaves its sidecar')
    rc, _, se = gather([where, '-o', out])
    t.eq(rc, 0, f'the restarted gather: exit status (stderr {se[-300:]!r})')
    t.check('resuming' in se, f'the restarted gather resumes (stderr {se[-300:]!r})')
    t.note(f'killed with {partial} B gathered, resumed')


def loopback():
    # 1. the whole recording, with the command still running when gather
    # starts; with the binaries in it, its last chunk is several frames long
    p, local, where, token, err = start_record('127.0.0.1:0', ['--embed-binaries'])
    t.check(token is None, 'no token on loopback unless asked for')
    rc, _, se = gather([where, '-o', t.path('g1.mtrace')])
    t.eq(rc, 0, f'gather {where}: exit status (stderr {se[-300:]!r})')
    finish(p, err, 'loopback')
    whole_copy(local, t.path('g1.mtrace'), 'loopback')
    t.check(os.path.getsize(local) > 2 << 20, f'the recording with its binaries spans frames '
            f'of 1 MiB ({os.path.getsize(local)} B)')
    t.check(not os.path.exists(t.path('g1.mtrace') + '.gather'), 'the sidecar is gone once gathered')

    # 2. killed mid-run, restarted with the same file: nothing lost
    p, local, where, _, err = start_record('127.0.0.1:0', out='local2.mtrace')
    out = t.path('g2.mtrace')
    kill_and_resume(p, where, out, 'the command')
    finish(p, err, 'restart')
    whole_copy(local, out, 'killed and restarted')

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

    # 4. a gather refused before anything came leaves no file in the way of
    # the next try; a peer that never answers is given up on in time
    p, local, where, _, err = start_record('127.0.0.1:0', ['--token', 'sesame'], out='local4.mtrace')
    out4 = t.path('g4.mtrace')
    rc, _, se = gather([where, '-o', out4, '--retry', '0'])
    t.eq(rc, 1, 'gather without the token asked for on loopback: exit status')
    t.check('token is required' in se, f'says a token is required (stderr {se.strip()!r})')
    t.check(not os.path.exists(out4), 'a refused gather leaves no file behind')
    rc, _, se = gather([where, '-o', out4, '--token', 'sesame'])
    t.eq(rc, 0, f'then with the token: exit status (stderr {se[-300:]!r})')
    finish(p, err, 'token on loopback')
    same_file(local, out4, 'token on loopback')
    import socket
    mute = socket.socket()
    mute.bind(('127.0.0.1', 0))
    mute.listen()
    t0 = time.monotonic()
    rc, _, se = gather([f'127.0.0.1:{mute.getsockname()[1]}', '-o', t.path('g5.mtrace'), '--retry', '1'])
    took = time.monotonic() - t0
    mute.close()
    t.eq(rc, 1, 'gather from a peer that never answers: exit status')
    t.check('gave no answer' in se, f'says the peer gave no answer (stderr {se.strip()!r})')
    t.check(took < 20, f'gives up on a silent peer within seconds, not minutes ({took:.1f} s)')
    t.check(not os.path.exists(t.path('g5.mtrace')), 'and leaves no file')

    # 5. bad addresses are usage errors
    rc, _, se = gather(['127.0.0.1:99999'])
    t.eq(rc, 2, 'gather 127.0.0.1:99999: exit status')
    rc, _, se = t.run([t.memtrace, 'record', '--token', 'x', '--', slow])
    t.eq(rc, 2, 'record --token without --listen: exit status')
    for bad in (['--listen', '127.0.0.1:99999'], ['--listen', '9100', '--broadcast'],
                ['--listen', '9100', '--token', 'a b']):
        rc, _, se = t.run([t.memtrace, 'record', *bad, '--', slow])
        t.eq(rc, 2, f'record {" ".join(bad)}: a usage error (stderr {se.strip()!r})')


def sh(*argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        t.fail(f'{" ".join(argv)}: {r.stderr.strip()}')
    return r.returncode == 0


@contextlib.contextmanager
def veth_netns(test, tag, subnet):
    """A network namespace of its own joined to this one by a veth pair
    (root: else the test is skipped), named after TAG and this pid, on
    10.SUBNET.N.0/24: yields (namespace, this side's address), or None when
    it could not be made (said); it is taken down after."""
    if os.geteuid() != 0:
        print(f'{test}: SKIP: needs root (network namespaces)')
        sys.exit(77)
    n = os.getpid() % 200 + 20
    ns, va, vb = f'{tag}{os.getpid()}', f'{tag}a{os.getpid()}', f'{tag}b{os.getpid()}'
    here, there = f'10.{subnet}.{n}.1', f'10.{subnet}.{n}.2'
    try:
        ok = (sh('ip', 'netns', 'add', ns) and
              sh('ip', 'link', 'add', va, 'type', 'veth', 'peer', 'name', vb) and
              sh('ip', 'link', 'set', vb, 'netns', ns) and
              sh('ip', 'addr', 'add', f'{here}/24', 'brd', '+', 'dev', va) and
              sh('ip', 'link', 'set', va, 'up') and
              sh('ip', 'netns', 'exec', ns, 'ip', 'addr', 'add', f'{there}/24', 'brd', '+', 'dev', vb) and
              sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', vb, 'up') and
              sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up'))
        yield (ns, here) if ok else None
    finally:
        subprocess.run(['ip', 'link', 'del', va], capture_output=True)
        subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)


def token_required(where, token, ns, whose, out):
    """Off loopback WHOSE made up TOKEN and printed it: a gather from the
    namespace NS without it, or with a wrong one, is refused, saying why;
    one with it takes the recording into OUT."""
    t.check(token is not None and len(token) >= 16, f'a token is made up off loopback ({token!r})')
    rc, _, se = gather([where or '-', '-o', out + '.none', '--retry', '0'], ns=ns)
    t.eq(rc, 1, f'gather from {whose} without the token: exit status')
    t.check('token' in se and 'required' in se, f'without the token: says so (stderr {se.strip()!r})')
    rc, _, se = gather([where or '-', '--token', 'wrong', '-o', out + '.wrong', '--retry', '0'],
                       ns=ns)
    t.eq(rc, 1, f'gather from {whose} with a wrong token: exit status')
    t.check('wrong token' in se, f'a wrong token: says so (stderr {se.strip()!r})')
    rc, _, se = gather([where or '-', '--token', token or '-', '-o', out], ns=ns)
    t.eq(rc, 0, f'gather from {whose} with the token across the veth: exit status '
         f'(stderr {se[-300:]!r})')


def found_by_broadcast(ns, p, err, local, where, whose, what):
    """`gather --token sesame` with no address in the namespace NS finds P
    (WHOSE, which announces itself at WHERE with the token 'sesame') and
    says how to gather it, but does not: a token goes only to an address
    named on the command line.  Named, its recording is taken, LOCAL, byte
    for byte."""
    found_dir = t.path('found')
    os.makedirs(found_dir)
    rc, _, se = gather(['--token', 'sesame', '-d', found_dir, '--wait', '3'], ns=ns)
    t.eq(rc, 1, f'gather --token with no address: exit status (stderr {se[-400:]!r})')
    m = re.search(r'memtrace gather (\S+) --token TOKEN', se)
    t.check(m is not None and m.group(1) == where,
            f'... it names the recorder it found, {where} (stderr {se[-400:]!r})')
    t.eq(os.listdir(found_dir), [], '... and gathers nothing')
    out = os.path.join(found_dir, 'named.mtrace')
    rc, _, se = gather([m.group(1) if m else where, '--token', 'sesame', '-o', out], ns=ns)
    t.eq(rc, 0, f'then gather ADDR --token: exit status (stderr {se[-400:]!r})')
    finish(p, err, what, whose)
    whole_copy(local, out, what)


def netns():
    with veth_netns('stream-netns', 'mtg', 251) as net:
        if not net:
            return
        ns, here = net
        # the token: required off loopback, made up and printed
        p, local, where, token, err = start_record(f'{here}:0')
        token_required(where, token, ns, 'record --listen', t.path('n2.mtrace'))
        finish(p, err, 'netns')
        whole_copy(local, t.path('n2.mtrace'), 'across the veth')

        # discovery: the recorder announces itself; gather with no address
        p, local, where, token, err = start_record(f'{here}:0', ['--broadcast', '--token', 'sesame'],
                                                   out='local-b.mtrace')
        found_by_broadcast(ns, p, err, local, where, 'record --listen', 'found by broadcast')



def free_port():
    import socket
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def served(err, count=1):
    """The (pid, address) of the first COUNT 'streaming' lines of ERR."""
    for _ in range(200):
        err.seek(0)
        found = re.findall(r'memtrace\[(\d+)\]: streaming \S+ on (\S+);', err.read())
        if len(found) >= count:
            return found
        time.sleep(0.05)
    return found


def start_shim(env, out, argv=None, stdin=None):
    """Starts SLOW (or ARGV) under the shim alone with
    MEMTRACE_ENABLE_SERVER=1 and ENV; returns the process, its output file,
    and the address and token it printed."""
    path = t.path(out)
    err = open(t.path(out + '.err'), 'w+')
    e = dict(os.environ, LD_PRELOAD=t.shim, MEMTRACE_ENABLE_SERVER='1', MEMTRACE_OUTPUT=path,
             MEMTRACE_SERVER_WAIT='30')
    e.update(env)
    for k in ('MEMTRACE_TOKEN', 'MEMTRACE_LISTEN', 'MEMTRACE_ENABLE_BROADCAST'):
        if k not in env:
            e.pop(k, None)
    p = subprocess.Popen(argv or [slow], env=e, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err)
    where, token = where_streamed(err, 'the shim with MEMTRACE_ENABLE_SERVER')
    return p, path, where, token, err


def finish_shim(p, err, what):
    finish(p, err, what, 'the program')


def shim_loopback():
    import socket
    # 1. the base port taken: the next free one; the whole recording
    base = free_port()
    taken = socket.socket()
    taken.bind(('127.0.0.1', base))
    taken.listen()
    p, local, where, token, err = start_shim({'MEMTRACE_BASE_SERVER_PORT': str(base)}, 'local.mtrace')
    port = int(where.rsplit(':', 1)[1]) if where else None
    t.check(where is not None and where.startswith('127.0.0.1:') and port is not None and
            base < port < base + 100, f'loopback by default, on the next free port after the '
            f'taken {base} ({where})')
    t.check(token is None, 'no token on loopback unless asked for')
    rc, _, se = gather([where or '-', '-o', t.path('g1.mtrace')])
    t.eq(rc, 0, f'gather {where}: exit status (stderr {se[-300:]!r})')
    finish_shim(p, err, 'shim on loopback')
    taken.close()
    whole_copy(local, t.path('g1.mtrace'), 'shim on loopback')

    # 2. killed mid-run, restarted with the same file: nothing lost
    p, local, where, _, err = start_shim({'MEMTRACE_BASE_SERVER_PORT': str(free_port())},
                                         'local2.mtrace')
    out = t.path('g2.mtrace')
    kill_and_resume(p, where or '-', out, 'the program')
    finish_shim(p, err, 'shim, gather restarted')
    whole_copy(local, out, 'shim, gather killed and restarted')

    # 3. MEMTRACE_TOKEN is asked for on loopback too
    p, local, where, token, err = start_shim({'MEMTRACE_BASE_SERVER_PORT': str(free_port()),
                                              'MEMTRACE_TOKEN': 'sesame'}, 'local3.mtrace')
    t.eq(token, 'sesame', 'the shim prints the token it asks for')
    out3 = t.path('g3.mtrace')
    rc, _, se = gather([where or '-', '-o', out3, '--retry', '0'])
    t.eq(rc, 1, 'gather without MEMTRACE_TOKEN\'s token: exit status')
    t.check('token is required' in se, f'says a token is required (stderr {se.strip()!r})')
    rc, _, se = gather([where or '-', '-o', out3, '--token', 'sesame'])
    t.eq(rc, 0, f'then with it: exit status (stderr {se[-300:]!r})')
    finish_shim(p, err, 'shim with a token on loopback')
    same_file(local, out3, 'shim with a token on loopback')

    # 4. a fork child that is not followed leaves the parent's port alone
    p, local, where, _, err = start_shim({'MEMTRACE_BASE_SERVER_PORT': str(free_port()),
                                          'MEMTRACE_SERVER_WAIT': '0'},
                                         'fork.mtrace', [forks], subprocess.PIPE)
    p.stdin.write(b'g')
    p.stdin.flush()
    finish_shim(p, err, 'a forking parent')  # the child reads on
    port = int(where.rsplit(':', 1)[1]) if where else 0
    probe = socket.socket()
    try:
        probe.bind(('127.0.0.1', port))
        free = True
    except OSError:
        free = False
    probe.close()
    t.check(free, f'the parent ended, its child running: port {port} is free (the child does '
            f'not keep the listening socket)')
    p.stdin.close()

    # 5. followed: the child serves its own recording, on the next free port
    p, local, where, _, err = start_shim({'MEMTRACE_BASE_SERVER_PORT': str(free_port()),
                                          'MEMTRACE_FOLLOW_FORKS': '1',
                                          'MEMTRACE_OUTPUT': t.path('f.%p.mtrace')},
                                         'follow.mtrace', [forks, 'wait'], subprocess.PIPE)
    p.stdin.write(b'g')
    p.stdin.flush()
    both = served(err, 2)
    t.eq(len(both), 2, f'parent and followed child each serve ({both})')
    if len(both) == 2:
        (ppid, paddr), (cpid, caddr) = sorted(both, key=lambda x: x[0] != str(p.pid))
        t.eq(ppid, str(p.pid), 'the first server is the parent\'s')
        t.check(paddr != caddr, f'the child serves on a port of its own ({paddr}, {caddr})')
        gs = {who: subprocess.Popen([t.memtrace, 'gather', addr, '-o', t.path(f'g-{who}.mtrace')],
                                    stderr=subprocess.PIPE, text=True)
              for who, addr in (('parent', paddr), ('child', caddr))}
        p.stdin.close()
        finish_shim(p, err, 'a followed forking parent')
        for who, g in gs.items():
            try:
                _, se = g.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                g.kill()
                _, se = g.communicate()
            t.eq(g.returncode, 0, f'gather from the {who}: exit status (stderr {se[-300:]!r})')
        for who, pid, allocs in (('parent', ppid, 10), ('child', cpid, 5)):
            same_file(t.path(f'f.{pid}.mtrace'), t.path(f'g-{who}.mtrace'), f'the {who}\'s recording')
            q = t.only_process(t.report(t.path(f'g-{who}.mtrace')))
            if q:
                t.check_totals(q, f'gathered from the {who}', allocations=allocs, frees=0,
                               leaked_allocations=allocs, leaked_bytes=10000)
    else:
        p.stdin.close()
        p.wait(timeout=60)


def shim_netns():
    with veth_netns('stream-shim-netns', 'mts', 252) as net:
        if not net:
            return
        ns, here = net
        # off loopback: a token is made up, printed, and required
        p, local, where, token, err = start_shim({'MEMTRACE_LISTEN': here,
                                                  'MEMTRACE_BASE_SERVER_PORT': str(free_port())},
                                                 'local.mtrace')
        t.check(where is not None and where.startswith(here + ':'),
                f'MEMTRACE_LISTEN={here}: listens there ({where})')
        token_required(where, token, ns, 'the shim', t.path('n2.mtrace'))
        finish_shim(p, err, 'shim off loopback')
        whole_copy(local, t.path('n2.mtrace'), 'shim, across the veth')

        # discovery: MEMTRACE_ENABLE_BROADCAST; gather with no address
        p, local, where, token, err = start_shim({'MEMTRACE_LISTEN': here,
                                                  'MEMTRACE_BASE_SERVER_PORT': str(free_port()),
                                                  'MEMTRACE_ENABLE_BROADCAST': '1',
                                                  'MEMTRACE_TOKEN': 'sesame'}, 'local-b.mtrace')
        t.check(where is not None, 'the broadcasting shim says where it streams')
        err.seek(0)
        t.check('announced on the LAN' in err.read(), 'the shim says it announces itself')
        found_by_broadcast(ns, p, err, local, where, 'the program', 'shim, found by broadcast')



{'loopback': loopback, 'netns': netns, 'shim-loopback': shim_loopback,
 'shim-netns': shim_netns}[mode]()
t.finish()
