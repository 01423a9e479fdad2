"""serverlib - what the server tests share (tests/present/server): starting
`memtrace server` on a free port, stopping it with SIGTERM, and stopping
every server a test started when it ends, even on an exception."""

import atexit
import json
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request

import gtlib

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
SERVERS = []


@atexit.register
def _stop_servers():
    """No server outlives the test, even when it stops on an exception."""
    for p in SERVERS:
        if p.poll() is None:
            p.kill()
            p.wait()


def loading(listing):
    """Whether a /list answer shows a file still loading."""
    return any(f.get('state') == 'loading' for f in listing)


def wait_loaded(port, timeout=60, headers=None):
    """Waits until the server on PORT has loaded its files (its /list shows
    none loading); True, or False after TIMEOUT seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            req = urllib.request.Request(f'http://127.0.0.1:{port}/list', headers=headers or {})
            with OPENER.open(req, timeout=5) as r:
                if r.status == 200 and not loading(json.loads(r.read())):
                    return True
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            pass
        time.sleep(0.05)
    return False


def start(t, files, tries=20, opts=()):
    """Starts `memtrace server OPTS` on a random free high port; returns
    (process, port) once /list answers, or (None, None) after a failure."""
    for _ in range(tries):
        port = random.randint(20000, 60999)
        p = subprocess.Popen([t.memtrace, 'server', '--listen', f'127.0.0.1:{port}', *opts,
                              *files],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        SERVERS.append(p)
        deadline = time.time() + 60
        while time.time() < deadline and p.poll() is None:
            try:
                with OPENER.open(f'http://127.0.0.1:{port}/list', timeout=5) as r:
                    # the files load after the server starts: wait for them
                    if r.status == 200 and not loading(json.loads(r.read())):
                        return p, port
                    time.sleep(0.05)
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.05)
        if p.poll() is None:
            p.kill()
        _, se = p.communicate()
        if p.returncode == 1 and 'in use' in se:
            continue  # somebody else's port: another one
        t.fail(f'memtrace server did not start (exit {p.returncode}): {se.strip()[-400:]!r}')
        return None, None
    t.fail('no free port found')
    return None, None


def stop(t, proc, sanitizer=True):
    """SIGTERM to the server PROC: a clean stop, exit status 0 within a
    minute, and (with SANITIZER, for the ASan build) no leak or error
    reported on its stderr."""
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=60)
        t.eq(proc.returncode, 0, 'the server stops on SIGTERM with exit status 0')
        if sanitizer:
            t.check('Sanitizer' not in err and 'runtime error' not in err,
                    f'the server reports no error: {err[-800:]!r}')
    except subprocess.TimeoutExpired:
        t.fail('the server did not stop on SIGTERM')


def setup(name):
    """The case NAME, recordings of gt-peak and gt-temporary (the programs
    given as argv[1:3]) and a server of both: (case, peak recording,
    temporary recording, server process, port).  When the server does not
    start, the test ends there."""
    t = gtlib.Case(name)
    peak, _ = t.record([sys.argv[1]], out=t.path('peak.mtrace'))
    temp, _ = t.record([sys.argv[2]], out=t.path('temporary.mtrace'))
    proc, port = start(t, [peak, temp])
    if proc is None:
        t.finish()
    return t, peak, temp, proc, port
