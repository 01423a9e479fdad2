"""cli-gather-early: `memtrace gather ADDR -o FILE` started before the
recorder listens, interrupted, then run again once it does.

  test_gather_early.py STREAM_SLOW

While nothing listens at ADDR, gather says so once ("... trying again for
30 s") instead of waiting in silence.  Interrupted then (Ctrl-C), it says
the same command resumes, and it must: the empty FILE it leaves used to
make the same command refuse ("exists (and is not a gathering to
resume)").  The gathered file is then the recorder's own, byte for byte,
with slow.c's figures (60 allocations, 30 frees, 30 blocks and 90,000
bytes leaked).  An -o that names a directory or a symbolic link is refused
as what it is (it was called "exists, not a gathering to resume").
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time

import gtlib
from gtlib import stderr_lines


def exit_status(proc, timeout):
    """PROC's exit status, or None (and PROC killed) if it outlives TIMEOUT."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None


t = gtlib.Case('cli-gather-early')
slow = sys.argv[1]

# a port nothing listens on (for the moment)
s = socket.socket()
s.bind(('127.0.0.1', 0))
port = s.getsockname()[1]
s.close()
where = f'127.0.0.1:{port}'
out = t.path('gathered.mtrace')
argv = [t.memtrace, 'gather', where, '-o', out]

err = open(t.path('gather1.err'), 'w+')
g = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
said = ''
for _ in range(200):
    err.seek(0)
    said = err.read()
    if 'trying again' in said:
        break
    time.sleep(0.05)
lines = stderr_lines(said)
t.eq(len(lines), 1, f'gather {where} with nothing there: one line while it waits ({lines})')
if lines:
    t.check(where in lines[0] and 'trying again for 30 s' in lines[0],
            f'the line names the address and how long it keeps trying: {lines[0]!r}')
g.send_signal(signal.SIGINT)
rc = exit_status(g, 10)
t.eq(rc, 130, 'gather interrupted: exit status')
err.seek(0)
t.check('the same command resumes it' in err.read(), 'interrupted, gather says the same command resumes')

# now a recorder listens there, and the same command gathers its recording
local = t.path('local.mtrace')
rerr = open(t.path('record.err'), 'w+')
p = subprocess.Popen([t.memtrace, 'record', '--listen', where, '-o', local, '--', slow],
                     stdout=subprocess.DEVNULL, stderr=rerr)
for _ in range(100):
    rerr.seek(0)
    if re.search(r'gather with: memtrace gather', rerr.read()):
        break
    time.sleep(0.05)
rc, so, se = t.run(argv, timeout=60)
t.eq(rc, 0, f'the same gather command, run again: exit status (stderr {se.strip()[-300:]!r})')
rrc = exit_status(p, 60)
t.eq(rrc, 0, 'record --listen: exit status')
a = open(local, 'rb').read() if os.path.exists(local) else b''
b = open(out, 'rb').read() if os.path.exists(out) else None
t.check(b == a and len(a) > 16, f'the gathered file is the recording, byte for byte '
        f'({len(b) if b is not None else "no file"} B against {len(a)} B)')
proc = t.only_process(t.report(out)) if b else None
if proc:
    t.check_totals(proc, 'gathered', allocations=60, frees=30, leaked_allocations=30,
                   leaked_bytes=90000)

# -o naming a directory or a link: refused as what it is, and left alone
d = t.path('adir')
os.mkdir(d)
link = t.path('alink')
os.symlink(t.path('nowhere'), link)
for o, what in ((d, 'is a directory'), (link, 'is a symbolic link')):
    rc, so, se = t.run([t.memtrace, 'gather', '--retry', '0', '-o', o, where])
    t.eq(rc, 1, f'gather -o {what}: exit status')
    lines = stderr_lines(se)
    t.check(len(lines) == 1 and o in lines[0] and what in lines[0],
            f'gather -o {what}: one line naming it as what it is ({lines})')
t.check(os.path.isdir(d) and os.path.islink(link) and not os.path.exists(t.path('nowhere')),
        'the directory and the link are left alone')

t.finish()
