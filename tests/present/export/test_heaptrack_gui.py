"""export-heaptrack_gui: heaptrack's data file opened by heaptrack_gui
(heaptrack 1.4, Debian package heaptrack-gui), on Qt's offscreen platform.

heaptrack_gui counts allocations per row of the file's (size, call tree
node) table in an array that grows by one at each row's first '+': a row
defined but not allocated before the next new one made it write past the
array's end, and abort or segfault (issue 34).  heaptrack_gui has no option
to load a file and exit, nor to print its summary: it runs until it has
parsed the file and gone idle (its CPU time stops growing), must then still
be running, and must have said nothing about the file on stderr.  The
summary's figures come from the parser heaptrack_print shares with it
(AccumulatedTraceData::read), so heaptrack_print reads the same file and
its figures are checked against `memtrace report --json`.

Recordings: `ls /`, gt-peak (leaks), gt-cxx (leaks and temporaries),
gt-temporary (a thread), gt-peak filtered by size, and sh running gt-peak
and gt-temporary with --follow-forks (one file per process).
"""

import os
import re
import shutil
import signal
import subprocess
import time

import exportlib
from exportlib import ht_bytes

t, progs = exportlib.setup('export-heaptrack_gui')
GUI = shutil.which('heaptrack_gui')
HT = shutil.which('heaptrack_print')
t.check(GUI, 'heaptrack_gui is installed (Debian package heaptrack-gui; tools/setup.sh installs it)')
t.check(HT, 'heaptrack_print is installed (Debian package heaptrack)')

# Qt's own chatter on the offscreen platform, not about the file
QT_NOISE = re.compile(r'^(This plugin does not support propagateSizeHints\(\)|QStandardPaths: .*)$')


def cpu_ticks(pid):
    """The CPU time of process PID (all its threads), in clock ticks."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])


def gui_opens(path, what):
    """Runs heaptrack_gui on PATH until it is idle; fails if it exits."""
    if not GUI:
        t.fail(f'{what}: heaptrack_gui is not installed')
        return
    home = t.path('gui-home')
    os.makedirs(home, mode=0o700, exist_ok=True)
    env = dict(os.environ, QT_QPA_PLATFORM='offscreen', HOME=home, XDG_RUNTIME_DIR=home,
               XDG_CONFIG_HOME=home)
    err = open(t.path('gui.err'), 'w+')
    p = subprocess.Popen([GUI, path], env=env, stdout=subprocess.DEVNULL, stderr=err)
    start, last, still = time.monotonic(), -1, 0.0
    try:
        # idle: no CPU time for 1.5 s, after 2 s at least (60 s at most)
        while p.poll() is None and time.monotonic() - start < 60:
            time.sleep(0.25)
            try:
                ticks = cpu_ticks(p.pid)
            except (OSError, IndexError, ValueError):
                break
            still = still + 0.25 if ticks == last else 0.0
            last = ticks
            if still >= 1.5 and time.monotonic() - start >= 2:
                break
        rc = p.poll()
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    err.seek(0)
    lines = [l for l in err.read().splitlines() if l.strip() and not QT_NOISE.match(l)]
    err.close()
    t.check(rc is None, f'{what}: heaptrack_gui is still running after loading the file '
            f'(it exited with status {rc}{", signal " + str(-rc) if rc and rc < 0 else ""}; '
            f'stderr {lines[-5:]!r})')
    t.eq(lines[:5], [], f'{what}: heaptrack_gui says nothing about the file on stderr')


def ht_print(path, what):
    """heaptrack_print's summary figures of PATH, or {}."""
    if not HT:
        return {}
    p = subprocess.run([HT, path], capture_output=True, text=True, timeout=120)
    if not t.eq(p.returncode, 0, f'{what}: exit status of heaptrack_print ({p.stderr[-300:]!r})'):
        return {}
    t.check(not re.search(r'failed|out of bounds|corrupt', p.stderr + p.stdout),
            f'{what}: heaptrack_print complains: {(p.stderr + p.stdout)[-300:]!r}')
    s = {}
    for key, pat in (('calls', r'^calls to allocation functions: (\d+) '),
                     ('temporary', r'^temporary memory allocations: (\d+) '),
                     ('peak', r'^peak heap memory consumption: (\S+)$'),
                     ('leaked', r'^total memory leaked: (\S+)$')):
        m = re.search(pat, p.stdout, re.M)
        if t.check(m, f'{what}: heaptrack_print printed no {key!r} line'):
            s[key] = int(m.group(1)) if key in ('calls', 'temporary') else m.group(1)
    return s


def check(rec, what, *args, pid=None, temporary=True):
    """Exports REC (with ARGS), opens it in heaptrack_gui, and checks
    heaptrack_print's figures of the same file against the report's."""
    out = t.path(re.sub(r'[^\w.-]+', '_', what) + '.heaptrack')
    pargs = list(args) + (['--pid', str(pid)] if pid else [])
    if exportlib.export(t, rec, 'heaptrack', *pargs, out=out) is None:
        return
    gui_opens(out, what)
    rep = t.report(rec, args)
    tot = exportlib.totals_of(t, rep, pid) if rep else {}
    s = ht_print(out, what)
    t.eq(s.get('calls'), tot.get('allocations'), f'{what}: allocations')
    t.eq(s.get('peak'), ht_bytes(tot.get('peak_bytes', -1)), f'{what}: peak')
    # heaptrack's "leaked" is every block never freed, runtime-held included
    t.eq(s.get('leaked'), ht_bytes(tot.get('leaked_bytes', -1) + tot.get('runtime_held_bytes', 0)),
         f'{what}: leaked')
    if temporary:
        # plus one where the file's first row is freed after another free
        want = tot.get('temporary_allocations', -1)
        extra = exportlib.ht_first_row_after_free(out)
        t.check(s.get('temporary') in (want, want + extra),
                f'{what}: temporary allocations: expected {want}{" or one more" if extra else ""}, '
                f'got {s.get("temporary")}')


ls, _ = t.record(['ls', '/'], out=t.path('ls.mtrace'))
check(ls, 'ls /')
peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
check(peak, 'gt-peak')
check(peak, 'gt-peak --size-min 50000', '--size-min', '50000')
cxx, _ = t.record([progs['cxx']], out=t.path('cxx.mtrace'))
check(cxx, 'gt-cxx')
# gt-temporary's thread: its temporary may be interleaved with the main
# thread's allocation, which the file cannot express (test_heaptrack.py)
tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
check(tmp, 'gt-temporary', temporary=False)
check(tmp, 'gt-temporary --lifetime only_temporary', '--lifetime', 'only_temporary')
multi, rm, pids = exportlib.record_multi(t, progs)
for pid in pids:
    tp = exportlib.totals_of(t, rm, pid)
    check(multi, f'sh -f, pid {pid}', pid=pid, temporary=tp.get('temporary_allocations') != 9)
t.finish()
