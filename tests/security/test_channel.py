#!/usr/bin/env python3
"""test_channel.py GT_PEAK - the recorder's socket takes only the command's
processes, and no client can crash it (issue 12).

`memtrace record` listens on an abstract socket whose name anyone can read in
/proc/net/unix.  It used to take a ring from whoever connected (user nobody
could add a process of theirs to root's recording), to trust the size and
positions a client gave (one that shrank its memfd, claimed a ring larger
than it, or moved its head past the end killed the recorder with SIGBUS or
SIGSEGV) and to drop a malformed record without a word.

  outsiders   while root records `sleep`, three processes that are not the
              command's connect with the shim: as nobody with the socket's
              public name (the attack of the issue), as nobody with the
              secret token too (say it leaked), as root without the token.
              Each is refused with a warning naming its pid; the recording
              holds the command's process alone.
  hostile     while root records GT_PEAK (tests/groundtruth/peak.c), this
              script, as a client holding the token, hands over
                unsealed    an unsealed memfd, then shrinks it;
                too-large   a ring that claims more than its memfd holds;
                past-end    a valid record, then a head far past the end;
                garbage     a valid record, then bytes that are no record;
                oversized   a valid record, then one too large to re-encode.
              Each time the recorder survives and warns naming this pid,
              memtrace exits with the command's status, GT_PEAK's figures
              are exact (peak.py), and an accepted client's stream keeps its
              valid record and counts its loss.
  fallback    while root records GT_PEAK, this script, as a client holding
              the token, asks for the BPF backend to trace a program it is
              about to execute, as the command's shim may (the '+bpf' of
              MEMTRACE_CONNECT): it is told no, is not followed with
              ptrace, and no entry of the BPF backend is recorded; GT_PEAK's
              figures are exact.
"""
import fcntl
import mmap
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, os.path.join(HERE, '..', 'groundtruth'))
import gtlib  # noqa: E402
import peak  # noqa: E402

MAGIC = 0x31474E4952544D  # MT_RING_MAGIC
HDR = 4096  # MT_RING_HDR
OFF_HEAD = 64  # offsetof(struct mt_ring_hdr, head)
NOBODY = 65534


def uv(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def string(b):
    return uv(len(b)) + b


def process_record(pid):
    """A valid MT_REC_PROCESS record (codec.h) for PID."""
    now = time.time_ns()
    return (b'\x07' + uv(pid) + uv(os.getppid()) + uv(now) + uv(time.monotonic_ns()) +
            string(b'preload') + string(b'/hostile') + string(b'hostile\0'))


def command_of(mpid, deadline):
    """The pid of memtrace MPID's command once it has exec'd with the shim,
    and its MEMTRACE_CONNECT (name#token)."""
    while time.monotonic() < deadline:
        try:
            with open(f'/proc/{mpid}/task/{mpid}/children') as f:
                kids = [int(x) for x in f.read().split()]
            for k in kids:
                with open(f'/proc/{k}/environ', 'rb') as f:
                    for var in f.read().split(b'\0'):
                        if var.startswith(b'MEMTRACE_CONNECT='):
                            return k, var.split(b'=', 1)[1].decode()
        except OSError:
            pass
        time.sleep(0.002)
    return None, None


def public_name(mpid):
    """The socket's name as anyone reads it in /proc/net/unix."""
    with open('/proc/net/unix') as f:
        for line in f:
            path = line.split()[-1]
            if path.startswith(f'@memtrace-{mpid}-'):
                return path
    return None


def start(t, cmd, out, opts=()):
    """memtrace record -o OUT OPTS -- CMD, running; (Popen, command pid,
    its MEMTRACE_CONNECT)."""
    p = subprocess.Popen([t.memtrace, 'record', '-o', out, *opts, '--', *cmd],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid, connect = command_of(p.pid, time.monotonic() + 10)
    t.check(pid is not None, f'the command of memtrace record -- {cmd[0]} is found running')
    return p, pid, connect


def finish(t, p, what):
    try:
        so, se = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
        t.fail(f'{what}: memtrace record did not end within 60 s')
    return p.returncode, se


def warned(se, pid, words):
    return any(line.startswith('memtrace: warning:') and f'pid {pid}' in line and words in line
               for line in se.splitlines())


def outsiders(t, shim):
    out = t.path('outsiders.mtrace')
    p, cmd, connect = start(t, ['sleep', '1.5'], out)
    name = public_name(p.pid)
    t.check(name is not None and connect and connect.startswith(name + '#'),
            f'the socket is listed in /proc/net/unix ({name!r}), its token only in the '
            f'environment')
    if not cmd or not name:
        p.kill()
        p.wait()
        return

    def as_nobody():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    tries = [('nobody, public name', name, as_nobody, NOBODY),
             ('nobody, leaked token', connect, as_nobody, NOBODY),
             ('root, public name', name, None, 0)]
    pids = []
    for what, conn, pre, uid in tries:
        env = dict(os.environ, LD_PRELOAD=shim, MEMTRACE_CONNECT=conn)
        q = subprocess.Popen(['sleep', '0.3'], env=env, preexec_fn=pre,
                             stderr=subprocess.DEVNULL)
        pids.append((what, q.pid, uid))
        q.wait()
    rc, se = finish(t, p, 'outsiders')
    t.eq(rc, 0, 'memtrace record -- sleep: exit status (the command\'s)')
    for what, pid, uid in pids:
        t.check(warned(se, pid, f'refused a connection from pid {pid} (uid {uid}): not a process '
                       'of the recorded command'),
                f'{what}: refused with a warning naming pid {pid} (stderr: {se.strip()!r})')
    rep = t.report(out)
    got = [q.get('pid') for q in t.processes(rep)]
    t.eq(got, [cmd], 'the processes of the recording: the command alone')


class Client:
    """A hostile client: a memfd of MEMFD_SIZE bytes, sealed or not, handed
    over with a hello that claims a ring of CLAIM data bytes."""

    def __init__(self, connect, claim, memfd_size, seal=True):
        name, _, token = connect.partition('#')
        token = token.partition('+')[0]  # '+bpf': the recorder offers BPF in the shim's stead
        self.fd = os.memfd_create('hostile', os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, memfd_size)
        if seal:
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        self.map = mmap.mmap(self.fd, memfd_size)
        self.map[0:24] = struct.pack('<QQII', MAGIC, claim, os.getpid(), os.getppid())
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect('\0' + name[1:])
        hello = struct.pack('<QIIQ16s', MAGIC, os.getpid(), os.getppid(), claim,
                            bytes.fromhex(token) if token else bytes(16))
        socket.send_fds(self.sock, [hello], [self.fd])

    def commit(self, records, at=0):
        self.map[HDR + at:HDR + at + len(records)] = records
        self.set_head(at + len(records))

    def set_head(self, head):
        self.map[OFF_HEAD:OFF_HEAD + 8] = struct.pack('<Q', head)

    def close(self):
        self.map.close()
        self.sock.close()
        os.close(self.fd)


def attack(mode, connect):
    """What the client of MODE does; returns (whether the recorder takes its
    ring, the words of the warning)."""
    me = os.getpid()
    if mode == 'unsealed':
        c = Client(connect, 1 << 16, HDR + (1 << 16), seal=False)
        time.sleep(0.1)
        os.ftruncate(c.fd, 0)  # under the mapping of a recorder that took it: SIGBUS
        time.sleep(0.15)
        c.close()
        return False, 'not a memfd sealed against resizing'
    if mode == 'too-large':
        c = Client(connect, 1 << 24, HDR + 4096)
        c.set_head(1 << 23)  # half of what it claims: beyond the memfd's end
        time.sleep(0.25)
        c.close()
        return False, 'not the size it claims'
    c = Client(connect, 1 << 18, HDR + (1 << 18))
    good = process_record(me)
    c.commit(good)
    time.sleep(0.1)  # drained: this much is recorded
    if mode == 'past-end':
        c.set_head(len(good) + (1 << 40))
        words = 'positions are out of bounds'
    elif mode == 'garbage':
        c.commit(b'\x05\x07' + b'\xff' * 40, len(good))  # a thread, then a varint without end
        words = 'malformed record'
    else:  # oversized: a module whose path is larger than any re-encoding buffer
        path = b'/x' * 50000
        c.commit(b'\x06' + uv(0) + uv(0) + uv(4096) + string(path) + string(b''), len(good))
        words = 'malformed record'
    time.sleep(0.15)
    c.close()
    return True, words


def hostile(t, gt_peak, mode, opts=()):
    label = ' '.join((mode,) + opts)
    out = t.path(f'{mode}{len(opts)}.mtrace')
    p, cmd, connect = start(t, [gt_peak], out, opts)
    if not cmd:
        p.kill()
        p.wait()
        return
    taken, words = attack(mode, connect)
    rc, se = finish(t, p, mode)
    if not t.eq(rc, 0, f'{label}: memtrace record exits with the command\'s status (stderr: '
                f'{se.strip()[-600:]!r})'):
        return
    t.check(warned(se, os.getpid(), words),
            f'{label}: a warning names pid {os.getpid()} and says "{words}" '
            f'(stderr: {se.strip()!r})')
    rep = t.report(out)
    if rep is None:
        return
    procs = t.processes(rep)
    mine = [q for q in procs if q.get('pid') == cmd]
    # the command's figures, as peak.py requires them of a recording of it alone
    peak.check_recording(t, dict(rep, processes=mine), f'{label}: {os.path.basename(gt_peak)}')
    others = [q for q in procs if q.get('pid') != cmd]
    if not taken:
        t.eq(others, [], f'{label}: the client refused has no process in the recording')
        return
    if t.eq([q.get('pid') for q in others], [os.getpid()],
            f'{label}: the client\'s stream, up to its fault, is in the recording'):
        t.check(others[0].get('lost_events', 0) >= 1,
                f'{label}: the client\'s stream counts its loss (lost_events = '
                f'{others[0].get("lost_events")!r})')


def tracer_of_self():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('TracerPid:'):
                return int(line.split()[1])
    return None


def fallback(t, gt_peak):
    out = t.path('fallback.mtrace')
    p, cmd, connect = start(t, [gt_peak], out)
    if not cmd:
        p.kill()
        p.wait()
        return
    t.check(connect.endswith('+bpf'), f'fallback: MEMTRACE_CONNECT offers BPF as root ({connect!r})')
    # in a child, which exits: the recorder reads a client's ring until then
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(r)
            c = Client(connect, 1 << 18, HDR + (1 << 18))
            c.commit(process_record(os.getpid()))
            c.sock.send(b'F' + os.path.realpath(gt_peak).encode())
            c.sock.settimeout(5)
            try:
                answer = c.sock.recv(1)
            except OSError:
                answer = b'?'
            os.write(w, answer + str(tracer_of_self()).encode())
            c.close()
        finally:
            os._exit(0)
    os.close(w)
    got = b''
    while True:
        b = os.read(r, 64)
        if not b:
            break
        got += b
    os.close(r)
    os.waitpid(child, 0)
    t.eq(got[:1], b'n', 'fallback: a process other than the command is told no')
    t.eq(got[1:], b'0', 'fallback: it is not followed with ptrace (its TracerPid)')
    rc, se = finish(t, p, 'fallback')
    t.eq(rc, 0, f'fallback: memtrace record exits with the command\'s status ({se.strip()[-600:]!r})')
    rep = t.report(out)
    if rep is None:
        return
    procs = t.processes(rep)
    t.eq([q.get('backend') for q in procs if q.get('backend') != 'preload'], [],
         'fallback: no entry of the BPF backend')
    peak.check_recording(t, dict(rep, processes=[q for q in procs if q.get('pid') == cmd]),
                         f'fallback: {os.path.basename(gt_peak)}')


def main():
    if len(sys.argv) != 2:
        print('usage: test_channel.py GT_PEAK')
        return 2
    if os.geteuid() != 0:
        print('SKIP: the attack is on a recording of root\'s by user nobody: needs root')
        return 77
    t = gtlib.Case('security-channel')
    outsiders(t, t.shim)
    for mode in ('unsealed', 'too-large', 'past-end', 'garbage', 'oversized'):
        hostile(t, sys.argv[1], mode)
    # the records are decoded by the culler instead
    for mode in ('garbage', 'oversized'):
        hostile(t, sys.argv[1], mode, ('--cull-temporary=1',))
    fallback(t, sys.argv[1])
    t.finish()


if __name__ == '__main__':
    sys.exit(main())
