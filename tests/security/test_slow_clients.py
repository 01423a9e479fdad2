#!/usr/bin/env python3
"""test_slow_clients.py - slow clients against `memtrace server` (issue 33,
point 9).  Before: 2,100 connections of user nobody, each sending a header
line every 2 s, filled the server's 2,048 connections, and root's requests
went unanswered for as long as they lasted (the idle timeout restarts at
every line; on loopback every user is the same address to a per-IP limit).
Now:
  - while nobody holds and re-opens those connections, root's requests are
    answered, each within 3 s;
  - a connection trickling header lines is closed about 10 s after it
    started (SRV_HEADER_S), however steadily it trickles;
  - --client-connections N: a client opening more ends its own oldest idle
    connections, and is still answered; bad values: exit 2.
The recording: the ground-truth program argv[1].
"""
import os
import socket
import subprocess
import sys
import time

import gtlib
import serverlib

NOBODY = 65534
ATTACK = 2100
# root's Python may live where nobody cannot read it (pyenv under /root)
SYSTEM_PYTHON = '/usr/bin/python3'

# Runs as nobody: opens ATTACK connections to the port argv[1], each with
# a request line, says "ready N", then sends a header line on each every 2 s
# and opens again those the server closed.
ATTACKER = r'''
import resource, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 200), hard))
def one():
    try:
        s = socket.create_connection(('127.0.0.1', port), timeout=1)
        s.sendall(b'GET /list HTTP/1.1\r\nHost: 127.0.0.1\r\n')
        return s
    except OSError:
        return None
conns = [one() for _ in range(n)]
print('ready', sum(c is not None for c in conns), flush=True)
while True:
    time.sleep(2)
    for i, c in enumerate(conns):
        try:
            if c is None:
                raise OSError
            c.sendall(b'X-Slow: 1\r\n')
        except OSError:
            if c is not None:
                c.close()
            conns[i] = one()
'''


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def timed_get(port):
    """(status or error, seconds) of GET /list with a 10 s bound."""
    t0 = time.time()
    s = socket.create_connection(('127.0.0.1', port), timeout=10)
    try:
        s.sendall(b'GET /list HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
        got = s.recv(100)
        st = int(got.split()[1]) if got.startswith(b'HTTP/1.1 ') else repr(got)
    except OSError as x:
        st = repr(x)
    finally:
        s.close()
    return st, time.time() - t0


def closed_after(s, limit):
    """Seconds until the server closes S, which sends a header line every
    second meanwhile; None when it is still open after LIMIT seconds."""
    t0 = time.time()
    s.settimeout(1)
    while time.time() - t0 < limit:
        try:
            s.sendall(b'X-Slow: 1\r\n')
            if s.recv(100) == b'':
                return time.time() - t0
        except socket.timeout:
            pass
        except OSError:
            return time.time() - t0
    return None


def main():
    if os.geteuid() != 0:
        print('SKIP: the attacker is user nobody against root\'s server: needs root')
        return 77
    t = gtlib.Case('security-slow-clients')
    rec, _ = t.record([sys.argv[1]], out=t.path('peak.mtrace'))
    proc, port = serverlib.start(t, [rec])
    if proc is None:
        t.finish()

    # ---- many slow connections of another user --------------------------
    attacker = subprocess.Popen([SYSTEM_PYTHON, '-c', ATTACKER, str(port), str(ATTACK)],
                                stdout=subprocess.PIPE, text=True, preexec_fn=as_nobody)
    try:
        line = attacker.stdout.readline()
        t.note(f'the attacker: {line.strip()!r}')
        t.check(line.startswith('ready'), f'nobody opened its connections ({line!r})')
        for i in range(4):
            time.sleep(3)
            st, secs = timed_get(port)
            t.eq(st, 200, f'request {i + 1} while nobody trickles {ATTACK} connections: status')
            t.check(secs < 3, f'... answered in {secs:.2f} s (under 3)')
    finally:
        attacker.kill()
        attacker.wait()

    # ---- one connection trickling its headers ----------------------------
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(b'GET /list HTTP/1.1\r\nHost: 127.0.0.1\r\n')
    secs = closed_after(s, 20)
    s.close()
    t.check(secs is not None and 8 < secs < 13,
            f'a connection trickling header lines is closed 10 s after it started '
            f'({secs if secs is None else round(secs, 1)} s)')
    serverlib.stop(t, proc)

    # ---- --client-connections ---------------------------------------------
    proc, port = serverlib.start(t, [rec], opts=['--client-connections', '4'])
    if proc is not None:
        idle = [socket.create_connection(('127.0.0.1', port)) for _ in range(6)]
        time.sleep(0.5)
        st, secs = timed_get(port)
        t.eq(st, 200, '--client-connections 4 and 6 idle connections of the same client: status')
        ended = 0
        for s in idle:
            s.settimeout(0.2)
            try:
                ended += s.recv(1) == b''
            except socket.timeout:
                pass
            except OSError:
                ended += 1
            s.close()
        t.eq(ended, 3, '... its 3 oldest idle connections were ended to make room')
        serverlib.stop(t, proc)
    for bad in ('0', '70000', 'x'):
        rc, _, se = t.run([t.memtrace, 'server', '--client-connections', bad, rec], timeout=30)
        t.eq(rc, 2, f'--client-connections {bad}: exit status ({se.strip()[-120:]!r})')
    rc, _, se = t.run([t.memtrace, 'server', '--max-connections', '0', rec], timeout=30)
    t.eq(rc, 2, f'--max-connections 0: exit status ({se.strip()[-120:]!r})')
    t.finish()


sys.exit(main())
