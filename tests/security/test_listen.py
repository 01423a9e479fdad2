#!/usr/bin/env python3
"""test_listen.py - attacks on live streaming (issue 33, point 10), each of
which worked before:
  - 30 half-open connections and one hello sent a byte every 2 s, made
    before the real gatherer: it waited 5 s per connection (and forever
    for the slow one), and the recorder with it after its command ended.
    Now the real `gather` takes the whole recording within 10 s and
    `record --listen` ends;
  - on loopback no token is asked, and user nobody took root's recording
    (record --listen, and the standalone shim's server): now refused,
    saying why, while root's own gather still needs no token;
  - a spoofed MTANNOUNCE datagram made `gather --token T` (no address)
    send T to the announcer: now the token goes only to an address named
    on the command line; gather names what it heard and exits 1.
The traced program: a ground-truth one (argv[1]); the recorders wait for
a gatherer once it has ended.
"""
import os
import re
import socket
import subprocess
import sys
import threading
import time

import gtlib

NOBODY = 65534
# root's Python may live where nobody cannot read it (pyenv under /root)
SYSTEM_PYTHON = '/usr/bin/python3'

# Run as nobody: the answer of a recorder on 127.0.0.1:argv[1] to a hello
# without a token.
STEAL = r'''
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
s.sendall(b'MTGATHER 1 - - 0\n')
print(s.recv(300).split(b'\n')[0].decode(errors='replace'), flush=True)
'''


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def streamed(t, err, who):
    """The address WHO printed on its stderr file ERR."""
    for _ in range(200):
        err.seek(0)
        m = re.search(r'gather with: memtrace gather (\S+)', err.read())
        if m:
            return m.group(1)
        time.sleep(0.05)
    t.fail(f'{who} says where it streams')
    return None


def start_record(t, slow, out):
    err = open(t.path(out + '.err'), 'w+')
    p = subprocess.Popen([t.memtrace, 'record', '--listen', '127.0.0.1:0', '-o', t.path(out), '--',
                          slow], stdout=subprocess.DEVNULL, stderr=err)
    return p, err, streamed(t, err, 'record --listen')


def start_shim(t, slow, out):
    err = open(t.path(out + '.err'), 'w+')
    e = dict(os.environ, LD_PRELOAD=t.shim, MEMTRACE_ENABLE_SERVER='1',
             MEMTRACE_OUTPUT=t.path(out), MEMTRACE_SERVER_WAIT='30', MEMTRACE_BASE_SERVER_PORT='0')
    for k in ('MEMTRACE_TOKEN', 'MEMTRACE_LISTEN', 'MEMTRACE_ENABLE_BROADCAST'):
        e.pop(k, None)
    p = subprocess.Popen([slow], env=e, stdout=subprocess.DEVNULL, stderr=err)
    return p, err, streamed(t, err, 'the shim')


def ended(t, p, err, what, within):
    try:
        rc = p.wait(timeout=within)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = 'still running'
    err.seek(0)
    t.eq(rc, 0, f'{what}: ends within {within} s (stderr {err.read()[-300:]!r})')


def same(t, a, b, what):
    da = open(a, 'rb').read() if os.path.exists(a) else b''
    db = open(b, 'rb').read() if os.path.exists(b) else None
    t.check(db == da and len(da) > 16, f'{what}: the gathered file is the recording, byte for byte')


def port_of(where):
    return int(where.rsplit(':', 1)[1])


def slow_gatherers(t, slow):
    p, err, where = start_record(t, slow, 'a.mtrace')
    if not where:
        p.kill()
        return
    port = port_of(where)
    half = [socket.create_connection(('127.0.0.1', port)) for _ in range(30)]
    stop = threading.Event()

    def trickle():
        s = socket.create_connection(('127.0.0.1', port))
        for c in b'MTGATHER 1 - - 0\n':
            if stop.wait(2):
                break
            try:
                s.send(bytes([c]))
            except OSError:
                break
        s.close()

    th = threading.Thread(target=trickle, daemon=True)
    th.start()
    time.sleep(0.5)
    t0 = time.time()
    rc, _, se = t.run([t.memtrace, 'gather', where, '-o', t.path('a-copy.mtrace'), '--retry', '60'],
                      timeout=120)
    secs = time.time() - t0
    t.eq(rc, 0, f'gather behind 30 half-open connections and a slow hello: exit status ({se[-300:]!r})')
    t.note(f'gather behind slow connections: {secs:.2f} s')
    t.check(secs < 10, f'... within 10 s ({secs:.1f} s)')
    ended(t, p, err, 'record --listen, once gathered', 10)
    same(t, t.path('a.mtrace'), t.path('a-copy.mtrace'), 'behind slow connections')
    stop.set()
    for s in half:
        s.close()


def another_user(t, slow, start, who, out):
    p, err, where = start(t, slow, out)
    if not where:
        p.kill()
        return
    r = subprocess.run([SYSTEM_PYTHON, '-c', STEAL, str(port_of(where))], capture_output=True,
                       text=True, timeout=30, preexec_fn=as_nobody)
    answer = r.stdout.strip()
    t.check(answer.startswith('ERR') and "another user's" in answer,
            f"{who} on loopback, no token: nobody's gatherer is refused, saying why ({answer!r}, "
            f'{r.stderr.strip()[-200:]!r})')
    rc, _, se = t.run([t.memtrace, 'gather', where, '-o', t.path(out + '.copy'), '--retry', '10'],
                      timeout=60)
    t.eq(rc, 0, f"{who}: root's own gather needs no token: exit status ({se[-300:]!r})")
    ended(t, p, err, who, 30)
    same(t, t.path(out), t.path(out + '.copy'), f'{who}, gathered by root')


def spoofed_announce(t):
    """A fake recorder: a TCP listener, announced by a datagram to the
    gatherer's UDP port; what gather --token sends it."""
    srv = socket.socket()
    srv.bind(('127.0.0.1', 0))
    srv.listen(8)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(('127.0.0.1', 0))
    aport = u.getsockname()[1]
    u.close()  # a free UDP port for the announcements
    heard, stop = [], threading.Event()

    def fake():
        d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        while not stop.is_set():
            d.sendto(f'MTANNOUNCE 1 {port} 0123456789abcdef 4242 evil'.encode(), ('127.0.0.1', aport))
            try:
                c, _ = srv.accept()
                c.settimeout(2)
                heard.append(c.recv(300))
                c.close()
            except OSError:
                pass
        d.close()

    th = threading.Thread(target=fake, daemon=True)
    th.start()
    d = t.path('spoof')
    os.makedirs(d)
    rc, _, se = t.run([t.memtrace, 'gather', '--token', 'the-secret-token', '--wait', '1',
                       '--announce-port', str(aport), '--retry', '0', '-d', d], timeout=60)
    stop.set()
    th.join()
    srv.close()
    t.check(not any(b'the-secret-token' in h for h in heard),
            f'a spoofed announcement is never sent the token (it got {heard!r})')
    t.eq(rc, 1, f'gather --token with no address: exit status ({se[-300:]!r})')
    t.check(f'memtrace gather 127.0.0.1:{port} --token TOKEN' in se,
            f'... it names what it heard, to be gathered by address ({se[-300:]!r})')


def main():
    if len(sys.argv) != 2:
        print('usage: test_listen.py PROGRAM')
        return 2
    if os.geteuid() != 0:
        print("SKIP: the attacks are user nobody's on root's recordings: needs root")
        return 77
    t = gtlib.Case('security-listen')
    slow_gatherers(t, sys.argv[1])
    another_user(t, sys.argv[1], start_record, 'record --listen', 'b.mtrace')
    another_user(t, sys.argv[1], start_shim, 'the shim', 'c.mtrace')
    spoofed_announce(t)
    t.finish()


sys.exit(main())
