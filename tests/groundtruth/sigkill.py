"""A program or its recorder killed with SIGKILL; see sigkill.c.

Usage: sigkill.py self|recorder|shim PROG

shim: the standalone shim (LD_PRELOAD, MEMTRACE_OUTPUT) in a program killed
after 1.5 s of quiet: its flusher thread must have written the 1000 blocks."""
import ctypes
import os
import select
import signal
import subprocess
import time

from gtlib import marker_line, parse_kv, stderr_lines

SRC = 'sigkill.c'


def check_blocks(t, p, label):
    s = t.site(p, 'before_kill')
    t.check_site(s, f'{label} before_kill', allocator='malloc', allocations=1000, allocated_bytes=100000,
                 frees=0, leaked_allocations=1000, leaked_bytes=100000)
    t.check_frames(s, f'{label} before_kill', [('before_kill', SRC, marker_line(SRC, 'site:before_kill')),
                                               ('main', SRC, None)])
    late = t.sites_of(p, 'late')
    n = sum(x.get('allocations', 0) for x in late)
    t.check(n <= 10, f'{label}: {n} allocations of late(), at most 10 were made')
    t.note(f'{label}: {n} of the 10 allocations made just before the kill are in the recording')
    t.check_totals(p, label=f'{label} totals', allocations=1000 + n, frees=0, leaked_allocations=1000 + n,
                   leaked_bytes=100 * (1000 + n), unmatched_frees=0)
    t.eq(p.get('lost_events'), 0, f'{label}: lost_events')


def run_self(t, prog):
    rec, _ = t.record([prog, 'self'], expect_rc=128 + signal.SIGKILL)
    if not t.check(os.path.exists(rec), f'the recording {rec} exists after the command was killed'):
        return
    rc, so, se = t.run([t.memtrace, 'report', '--json', rec])
    t.eq(rc, 0, f'exit status of memtrace report on the recording of a killed program (stderr {se!r})')
    rep = t.report(rec)
    if rep is None:
        return
    t.eq(rep.get('truncated'), False, 'report "truncated" (memtrace record itself was not killed)')
    p = t.only_process(rep)
    if p is None:
        return
    check_blocks(t, p, 'killed program')
    if 'exit_status' in p:
        t.check(p['exit_status'] in (-9, 137), f'exit_status {p["exit_status"]!r} says SIGKILL (-9 or 137)')
    else:
        t.note('no "exit_status" in the entry of the killed program (an extra key)')


def subreaper():
    """Makes this process the reaper of its orphaned descendants (the program,
    once its recorder is killed), so that the program's own exit status can
    be read.  False where prctl is not there."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def wait_orphan(pid, deadline):
    """The exit status of PID (a descendant reparented to us), or None."""
    while time.monotonic() < deadline:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if got == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    return None


def run_recorder(t, prog):
    rec = t.path('rec.mtrace')
    reaper = t.check(subreaper(), 'the test can reap the program once its recorder is gone (prctl)')
    m = subprocess.Popen([t.memtrace, 'record', '-o', rec, '--', prog, 'recorder'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = b''
    deadline = time.monotonic() + 30
    prog_pid = None
    reaped = False
    try:
        while b'ready' not in out and time.monotonic() < deadline:
            r, _, _ = select.select([m.stdout], [], [], 1)
            if r:
                chunk = os.read(m.stdout.fileno(), 4096)
                if not chunk:
                    break
                out += chunk
        prog_pid = parse_kv(out.decode(errors='replace')).get('pid')
        if not t.check(b'ready' in out and isinstance(prog_pid, int),
                       f'the program started and printed its pid ({out!r})'):
            return
        time.sleep(1.5)
        os.kill(m.pid, signal.SIGKILL)
        m.wait(10)
        t.eq(m.returncode, -signal.SIGKILL, 'memtrace record was killed by SIGKILL')
        # the program (now without its recorder) must go on and finish
        while time.monotonic() < deadline:
            r, _, _ = select.select([m.stdout], [], [], 1)
            if r:
                chunk = os.read(m.stdout.fileno(), 4096)
                if not chunk:
                    break
                out += chunk
        t.check(b'done' in out, f'the program finished normally after its recorder was killed '
                f'(output {out!r}; it hangs or died when the recorder is gone)')
        if reaper:
            status = wait_orphan(prog_pid, deadline)
            t.eq(status, 0, 'the program\'s own exit status, its recorder gone')
            reaped = status is not None
    finally:
        if prog_pid and not reaped:
            try:
                os.kill(prog_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if m.poll() is None:
            m.kill()
            m.wait()
    rc, so, se = t.run([t.memtrace, 'report', '--json', rec])
    t.eq(rc, 0, f'exit status of memtrace report on the recording of a killed recorder (stderr {se!r})')
    if rc != 0:
        return
    rep = t.report(rec)
    if rep is None:
        return
    lines = stderr_lines(se)
    if rep.get('truncated'):
        t.eq(len(lines), 1, f'one line on stderr for a truncated recording ({lines})')
        t.check(lines and lines[0].startswith('memtrace: warning:'), f'stderr says it is truncated: {lines}')
    p = t.only_process(rep)
    if p is None:
        return
    s = t.site(p, 'before_kill')
    t.check_site(s, 'killed recorder before_kill', allocations=1000, allocated_bytes=100000, frees=0,
                 leaked_allocations=1000)
    t.eq(p.get('pid'), prog_pid, 'pid of the process')


def run_shim(t, prog):
    out = t.path('shim.mtrace')
    rc, so, se = t.run([prog, 'self'], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': out})
    t.eq(rc, -signal.SIGKILL, f'the program died of SIGKILL (stderr {se.strip()[-300:]!r})')
    if not t.check(os.path.exists(out), f'the standalone recording {out} exists after the kill'):
        return
    rep = t.report(out)
    if rep is None:
        return
    p = t.only_process(rep)
    if p is not None:
        check_blocks(t, p, 'standalone shim, killed program')


def run(t, mode, prog):
    if mode == 'self':
        run_self(t, prog)
    elif mode == 'shim':
        run_shim(t, prog)
    else:
        run_recorder(t, prog)
