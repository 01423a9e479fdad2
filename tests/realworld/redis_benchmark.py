#!/usr/bin/env python3
"""redis_benchmark.py [--backend=bpf] - Debian's redis-server (linked to
libjemalloc.so.2) recorded by memtrace while redis-benchmark sends it a known
number of requests, then shut down with redis-cli.

What must hold: redis serves every request (redis-benchmark exits 0 and
reports every test), shuts down cleanly (memtrace record exits 0: the
server's own status), the recording's process is redis-server's, its
allocator is jemalloc, and its allocations were traced: redis allocates at
least one object per SET it stores (a key and a value, each a separate
allocation for values of this size), so the allocations must exceed the
number of SET requests, and it frees (every client connection's buffers),
so frees must be nonzero.  The server listens only on a unix socket in the
test's own temporary directory (port 0: no TCP).
"""
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import gtlib  # noqa: E402

REQUESTS = 20000  # per test: SET, then GET


def main():
    backend = [a for a in sys.argv[1:] if a.startswith('--backend=')]
    backend = backend[0].split('=', 1)[1] if backend else 'preload'
    t = gtlib.Case('redis-benchmark' + ('-bpf' if backend == 'bpf' else ''))
    if backend == 'bpf':
        import bpflib
        why = bpflib.bpf_unavailable()
        if why:
            print(f'skipped: {why}')
            return 77
    tools = {n: shutil.which(n) for n in ('redis-server', 'redis-benchmark', 'redis-cli')}
    missing = [n for n, p in tools.items() if not p]
    if missing:
        t.fail(f'{", ".join(missing)} not found: run tools/setup.sh (redis-server, redis-tools)')
        t.finish()
    work = t.tmp
    sock = os.path.join(work, 'redis.sock')
    rec = os.path.join(work, 'redis.mtrace')
    server = subprocess.Popen(
        [t.memtrace, 'record', '-q', f'--backend={backend}', '-o', rec, '--',
         tools['redis-server'], '--port', '0', '--unixsocket', sock, '--dir', work,
         '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', ''],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            if os.path.exists(sock) or server.poll() is not None:
                break
            time.sleep(0.1)
        t.check(os.path.exists(sock), f'redis-server listens on {sock}')
        rc, out, err = t.run([tools['redis-benchmark'], '-s', sock, '-n', str(REQUESTS), '-c', '4',
                              '-t', 'set,get', '-d', '100', '-r', '100000', '-q', '--csv'],
                             timeout=300, what='redis-benchmark')
        t.eq(rc, 0, f'redis-benchmark exit status (stderr {err.strip()[-300:]!r})')
        tests = [ln.split(',')[0].strip('"') for ln in out.splitlines()[1:] if ln.strip()]
        t.eq(sorted(tests), ['GET', 'SET'], f'redis-benchmark ran both tests (output {out[-300:]!r})')
        rc, out, err = t.run([tools['redis-cli'], '-s', sock, 'shutdown', 'nosave'], what='redis-cli')
    finally:
        try:
            so, se = server.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
            so, se = server.communicate()
            t.fail('redis-server did not exit after shutdown')
    t.eq(server.returncode, 0, f'memtrace record exit status (redis-server\'s; stderr {se.strip()[-400:]!r})')
    rep = t.report(rec)
    p = t.only_process(rep)
    if p is not None:
        # Debian's redis-server is a symbolic link to redis-check-rdb, which
        # looks at its argv[0]: the process is named by it
        t.eq(os.path.basename((p.get('argv') or [''])[0]), 'redis-server',
             'the process is redis-server (its argv[0])')
        t.eq(p.get('exit_status'), 0, 'redis-server exit status')
        t.eq(p.get('allocator'), 'jemalloc', 'redis-server\'s allocator')
        tot = p.get('totals', {})
        t.check(tot.get('allocations', 0) > REQUESTS,
                f'allocations ({tot.get("allocations")}) exceed the {REQUESTS} SET requests')
        t.check(tot.get('frees', 0) > 0, f'frees ({tot.get("frees")}) are counted')
        lost = p.get('lost_by_kind', {})
        if backend == 'bpf':
            # a stack the kernel's stack map could not take (a bucket taken
            # by another stack) keeps its event, with its caller alone
            t.note(f'stack_error: {lost.get("stack_error")}')
            lost = {k: v for k, v in lost.items() if k != 'stack_error'}
        t.eq({k: v for k, v in lost.items() if v}, {}, 'lost events, by kind')
    t.finish()


if __name__ == '__main__':
    sys.exit(main())
