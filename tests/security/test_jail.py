#!/usr/bin/env python3
"""test_jail.py LEAKER - jailed targets do not decide what memtrace opens.

Root's `memtrace -p PID` on a process chrooted as nobody used to open
/proc/PID/root/<the path its maps give>.  The maps give paths as root sees
them (/tmp/X/jail/lib/libc.so.6), so that resolved inside the jail, where
the jail's owner could plant anything: a FIFO hung memtrace for good (and
SIGTERM with it), a symbolic link made it open any host file.

Here, in a private temporary directory only, LEAKER (tests/attach/leaker.c)
and the libraries `ldd` names are copied into a jail and run there as uid
65534; inside the jail, at the path of each object it maps as memtrace
used to look it up, the test plants
  - fifo:    a FIFO;
  - symlink: a symbolic link to a file outside the jail (a sentinel file
             for the program, a FIFO for the libraries);
  - deleted: the program is removed (its maps say "leaker (deleted)") and
             a FIFO and a symbolic link are planted under that name.
Then `memtrace -p PID`, `memtrace top -p PID` and `memtrace sweep` each run
as root, and as root without CAP_SYS_ADMIN (where /proc/PID/map_files is
refused and the path is resolved in the process's root): each must finish
within seconds with status 0, report the leaker's allocations, open none of
the planted files nor their targets (inotify watches them), and say which
object it skipped when it skipped one.  Last, SIGTERM and SIGINT end
`memtrace -p PID --duration 3600`, `memtrace top` and `memtrace sweep
--duration 3600` once they trace (attach's note, top's first snapshot),
with their reports.

No bound here is a timing one (the machine may be loaded): a hang is one
that outlives TIMEOUT, and a stop signal that were not acted on would leave
the command running to its --duration, far beyond TIMEOUT.
"""
import ctypes
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import bpflib

MEMTRACE = os.environ['MEMTRACE']
NOBODY = 65534
TIMEOUT = 120  # a hang is a failure, not a stuck test
# what the stop-signal runs ask for: far beyond TIMEOUT
LONG = '3600'
failures = []

# root, and root without what /proc/PID/map_files needs
MODES = {
    'root': [],
    'no-sys-admin': ['setpriv', '--bounding-set=-sys_admin,-checkpoint_restore', '--'],
}


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


# ---- inotify: whether anything opened the planted files ----------------

libc = ctypes.CDLL(None, use_errno=True)
IN_ACCESS, IN_OPEN, IN_NONBLOCK = 0x1, 0x20, 0o4000


class Watch:
    """Opens and reads of the files watched, as inotify reports them."""

    def __init__(self):
        self.fd = libc.inotify_init1(IN_NONBLOCK)
        assert self.fd >= 0, 'inotify_init1'
        self.names = {}

    def add(self, path):
        wd = libc.inotify_add_watch(self.fd, os.fsencode(path), IN_OPEN | IN_ACCESS)
        assert wd >= 0, f'inotify_add_watch {path}: {os.strerror(ctypes.get_errno())}'
        self.names[wd] = path

    def opened(self):
        """The files opened or read since the last call."""
        seen = set()
        try:
            buf = os.read(self.fd, 65536)
        except BlockingIOError:
            return seen
        i = 0
        while i + 16 <= len(buf):
            wd, _mask, _cookie, ln = (int.from_bytes(buf[i + k:i + k + 4], 'little', signed=k == 0)
                                      for k in (0, 4, 8, 12))
            seen.add(self.names.get(wd, wd))
            i += 16 + ln
        return seen


# ---- the jail -------------------------------------------------------------

def libraries(prog):
    out = subprocess.run(['ldd', prog], capture_output=True, text=True, check=True).stdout
    return [m.group(1) for m in re.finditer(r'(/\S+) \(0x', out)]


def copy_in(jail, path):
    dest = jail + path
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy2(os.path.realpath(path), dest)


def make_jail(top, prog):
    jail = os.path.join(top, 'jail')
    os.makedirs(jail)
    copy_in(jail, prog)
    shutil.move(jail + prog, os.path.join(jail, 'leaker'))
    for lib in libraries(prog):
        copy_in(jail, lib)
    return jail


def enter_jail(jail):
    os.chroot(jail)
    os.chdir('/')
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def start_jailed(jail):
    p = subprocess.Popen(['/leaker'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, preexec_fn=lambda: enter_jail(jail))
    line = p.stdout.readline()
    if not check(line.startswith('ready'), f'the leaker runs in the jail as uid {NOBODY} ({line!r})'):
        p.kill()
        return None
    time.sleep(0.2)  # a few rounds: allocations before memtrace looks
    return p


def mapped_objects(pid):
    """The paths of the objects PID maps, as its maps (read by root) give them."""
    paths = []
    with open(f'/proc/{pid}/maps') as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith('/'):
                path = parts[5].rstrip('\n')
                if path not in paths:
                    paths.append(path)
    return paths


def plant_dir(path):
    """Makes PATH's parents, owned by the jail's owner as if it made them."""
    d = os.path.dirname(path)
    missing = []
    while not os.path.isdir(d):
        missing.append(d)
        d = os.path.dirname(d)
    for d in reversed(missing):
        os.mkdir(d)
        os.chown(d, NOBODY, NOBODY)


def plant(scenario, jail, outside, objs, pid, watch):
    """Plants what SCENARIO says in JAIL, watching everything planted."""
    sentinel = os.path.join(outside, 'sentinel')
    trap = os.path.join(outside, 'trap.fifo')
    if scenario == 'deleted':
        os.unlink(os.path.join(jail, 'leaker'))
        objs = mapped_objects(pid)
        deleted = [o for o in objs if o.endswith(' (deleted)')]
        check(len(deleted) == 1, f'the program shows as deleted in its maps: {objs}')
        # under that name at the jail's root (where its path, the jail's
        # name taken off, leads) and at the full name inside the jail
        os.mkfifo(os.path.join(jail, 'leaker (deleted)'))
        os.chown(os.path.join(jail, 'leaker (deleted)'), NOBODY, NOBODY)
        watch.add(os.path.join(jail, 'leaker (deleted)'))
        for o in deleted:
            plant_dir(jail + o)
            os.symlink(sentinel, jail + o)
        return
    for o in objs:
        where = jail + o
        plant_dir(where)
        if scenario == 'fifo':
            os.mkfifo(where)
            os.chown(where, NOBODY, NOBODY)
            watch.add(where)
        else:
            os.symlink(sentinel if o.endswith('/leaker') else trap, where)
            os.lchown(where, NOBODY, NOBODY)


# ---- the commands ---------------------------------------------------------

def commands(pid):
    return {
        'attach': [MEMTRACE, '-p', str(pid), '--duration', '2', '--interval', '0'],
        'top': [MEMTRACE, 'top', '-p', str(pid), '--count', '2', '--interval', '0.5'],
        # every process of the machine, all reported: its figures and
        # symbols take seconds on a busy machine
        'sweep': [MEMTRACE, 'sweep', '--duration', '2', '--json', '-n', '1000000'],
    }


def reports_leaker(name, out, pid, symbols):
    """Whether OUT shows the leaker's allocations (it leaks 200 blocks a
    second): at least 50 blocks, and its leaking site by name when its
    program could be read (SYMBOLS)."""
    if name == 'attach':
        m = re.search(r'leaked: ([\d.]+) (\w+) in ([\d,]+) allocation', out)
        ok = m is not None and int(m.group(3).replace(',', '')) >= 50
    elif name == 'top':
        m = re.search(r'\s([\d,]+)\s+[\d,]+\s+%d\s' % pid, out)
        ok = m is not None and int(m.group(1).replace(',', '')) >= 50
    else:
        # --json: other processes may have a leaky_alloc too
        try:
            procs = [p for p in json.loads(out)['processes'] if p['pid'] == pid]
        except (ValueError, KeyError):
            return False
        ok = bool(procs) and procs[0]['totals']['leaked_allocations'] >= 50
        out = json.dumps(procs)
    return ok and (not symbols or 'leaky_alloc' in out)


def run_one(mode, name, argv, pid, scenario, jail, watch):
    t0 = time.monotonic()
    try:
        r = subprocess.run(MODES[mode] + argv, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        check(False, f'{scenario}/{mode}: memtrace {name} finishes (hung {TIMEOUT} s)')
        return
    took = time.monotonic() - t0
    what = f'{scenario}/{mode}: memtrace {name}'
    check(r.returncode == 0, f'{what}: exit 0 (rc {r.returncode}, stderr {r.stderr[-400:]!r})')
    print(f'     ({what}: {took:.1f} s)', flush=True)
    opened = watch.opened()
    check(not opened, f'{what}: opens none of the planted files nor their targets ({opened})')
    # the program can be symbolized unless it was deleted
    symbols = scenario != 'deleted'
    check(reports_leaker(name, r.stdout, pid, symbols),
          f'{what}: reports the leaker\'s allocations ({r.stdout[-600:]!r})')
    warned = [l for l in r.stderr.splitlines() if 'warning' in l and 'skipping' in l]
    mine = [l for l in warned if f'process {pid}:' in l]
    if scenario == 'deleted' and mode == 'no-sys-admin':
        # the program's name leads to the FIFO: skipped, and said once
        want = f'process {pid}: skipping {jail}/leaker (deleted): a FIFO, not a regular file'
        check(sum(want in l for l in mine) == 1, f'{what}: one warning names it: {want!r} in {warned}')
    else:
        # map_files (root) or the real paths in the jail: nothing skipped
        check(not mine, f'{what}: skips nothing of the leaker: {mine}')


def scenario_run(scenario, prog, top):
    base = os.path.join(top, scenario)
    outside = os.path.join(base, 'outside')
    os.makedirs(outside)
    sentinel = os.path.join(outside, 'sentinel')
    with open(sentinel, 'w') as f:
        f.write('SENTINEL: memtrace must never open this\n')
    os.mkfifo(os.path.join(outside, 'trap.fifo'))
    jail = make_jail(base, prog)
    watch = Watch()
    watch.add(sentinel)
    watch.add(os.path.join(outside, 'trap.fifo'))
    p = start_jailed(jail)
    if p is None:
        return
    try:
        objs = mapped_objects(p.pid)
        check(any(o.startswith(jail + '/') for o in objs) and
              any('/libc.so' in o for o in objs),
              f'{scenario}: its maps give host paths into the jail: {objs}')
        plant(scenario, jail, outside, objs, p.pid, watch)
        watch.opened()  # planting is not memtrace's doing
        for mode in MODES:
            for name, argv in commands(p.pid).items():
                run_one(mode, name, argv, p.pid, scenario, jail, watch)
        if scenario == 'fifo':
            stop_signals(p.pid, watch)
        check(p.poll() is None, f'{scenario}: the leaker still runs')
    finally:
        p.kill()
        p.wait()


def catches(pid, sig):
    """Whether process PID has a handler for SIG (and is not setpriv, which
    execs the command in the same process)."""
    try:
        with open(f'/proc/{pid}/status') as f:
            st = dict(l.split(':', 1) for l in f if ':' in l)
        with open(f'/proc/{pid}/comm') as f:
            comm = f.read().strip()
    except OSError:
        return False
    return comm != 'setpriv' and (int(st['SigCgt'], 16) >> (sig - 1)) & 1 == 1


def wait_for(m, name):
    """Reads M's output until it traces: attach's note on stderr, top's
    first snapshot on stdout; sweep says nothing (its report does not
    depend on how long it traced): it has caught the stop signals
    (/proc/PID/status), which it does before it scans.  Returns what was
    read (stdout, stderr), or None when M ended or TIMEOUT passed first."""
    got = {m.stdout.fileno(): b'', m.stderr.fileno(): b''}
    deadline = time.monotonic() + TIMEOUT
    while True:
        if (name == 'sweep' and catches(m.pid, signal.SIGINT)) \
                or (name == 'attach' and b'attached to' in got[m.stderr.fileno()]) \
                or (name == 'top' and b'\n' in got[m.stdout.fileno()]):
            return tuple(got[f].decode() for f in (m.stdout.fileno(), m.stderr.fileno()))
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        # (sweep: looked at again every 10 ms; it prints nothing meanwhile)
        ready, _, _ = select.select(list(got), [], [], min(left, 0.01) if name == 'sweep' else left)
        for f in ready:
            b = os.read(f, 65536)
            if not b:
                return None
            got[f] += b


def stop_signals(pid, watch):
    """SIGTERM or SIGINT once the command traces: it detaches and reports,
    long before its --duration would end it."""
    runs = [
        ('attach', signal.SIGTERM, [MEMTRACE, '-p', str(pid), '--duration', LONG, '--interval', '0']),
        ('attach', signal.SIGINT, [MEMTRACE, '-p', str(pid), '--duration', LONG, '--interval', '0']),
        ('top', signal.SIGTERM, [MEMTRACE, 'top', '-p', str(pid), '--interval', '0.5']),
        ('sweep', signal.SIGINT, [MEMTRACE, 'sweep', '--duration', LONG, '--min-age', '0']),
    ]
    for mode in MODES:
        for name, sig, argv in runs:
            what = f'{mode}: memtrace {name}, {signal.Signals(sig).name} once it traces'
            m = subprocess.Popen(MODES[mode] + argv, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            first = wait_for(m, name)
            if first is None:
                m.kill()
                _, e = m.communicate()
                check(False, f'{what}: traces (stderr {e.decode(errors="replace")[-300:]!r})')
                continue
            if name == 'attach':
                # the report is of what was traced: long enough for the
                # leaker's 50 blocks (it leaks 200 a second)
                time.sleep(1)
            t0 = time.monotonic()
            m.send_signal(sig)
            try:
                out, err = m.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                m.kill()
                m.communicate()
                check(False, f'{what}: exits (hung {TIMEOUT} s; its --duration is {LONG} s)')
                continue
            out = first[0] + out.decode(errors='replace')
            err = first[1] + err.decode(errors='replace')
            took = time.monotonic() - t0
            # Before the fix these runs died or hung (a hang: above).
            print(f'     ({what}: exited {took:.2f} s after the signal)', flush=True)
            check(m.returncode == 0, f'{what}: exit 0 (rc {m.returncode}, {err[-300:]!r})')
            if name == 'sweep':
                # the 20 biggest sites of the machine: the leaker's may not be.
                # (Reading the machine's unwind tables takes a part of the
                # second, so the time traced may round to 0 s.)
                ok = re.match(r'memtrace sweep: \d+ s, \d+ of \d+ process', out) is not None
            else:
                ok = reports_leaker(name, out, pid, True)
            check(ok, f'{what}: with its report ({out[-400:]!r})')
            opened = watch.opened()
            check(not opened, f'{what}: opens none of the planted files ({opened})')


def main():
    why = bpflib.bpf_unavailable()
    if why:
        print(f'SKIP: {why}')
        return 77
    if not shutil.which('setpriv'):
        print('SKIP: setpriv (util-linux) is needed to run memtrace without CAP_SYS_ADMIN')
        return 77
    prog = os.path.realpath(sys.argv[1])
    top = tempfile.mkdtemp(prefix='mt-jail-')
    try:
        os.chmod(top, 0o755)
        for scenario in ('fifo', 'symlink', 'deleted'):
            scenario_run(scenario, prog, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f'{len(failures)} failure(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
