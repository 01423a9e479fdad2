"""What the standalone shim writes before an exec, a posix_spawn followed by
SIGKILL, or a fatal signal ends the image; see lastwords.c.

Usage: lastwords.py PROG"""
import glob
import os
import sys
import signal

from gtlib import marker_line

SRC = 'lastwords.c'
TOTALS = dict(allocations=5, allocated_bytes=4300, frees=1, leaked_allocations=4, leaked_bytes=4000)

# mode: (the program's status as subprocess gives it, the exit_status the
# recording says (None: none, the image was replaced or died of SIGKILL;
# -N: the signal N the shim caught; else exit's or _exit's status), what
# its exec path is, or None)
MODES = {
    'execl': (0, None, '/bin/true'),
    'execlp': (0, None, 'true'),
    'execle': (0, None, '/bin/true'),
    'fexecve': (0, None, '/proc/self/fd/'),
    'execveat': (0, None, '/proc/self/fd/'),
    'spawn': (-signal.SIGKILL, None, None),
    'spawnp': (-signal.SIGKILL, None, None),
    'abort': (-signal.SIGABRT, -signal.SIGABRT, None),
    'segv': (-signal.SIGSEGV, -signal.SIGSEGV, None),
    'term': (-signal.SIGTERM, -signal.SIGTERM, None),
    'dfl': (-signal.SIGABRT, -signal.SIGABRT, None),
    'own': (-signal.SIGTERM, -signal.SIGTERM, None),
    'ign': (0, 0, None),
    'exit': (5, 5, None),
    '_exit': (4, 4, None),
}


def machine(path):
    """An ELF file's e_machine."""
    with open(path, 'rb') as f:
        head = f.read(20)
    return int.from_bytes(head[18:20], 'little' if head[5] == 1 else 'big')


def run(t, prog):
    modes = dict(MODES)
    if machine(prog) != machine(os.path.realpath(sys.executable)):
        # a cross build's program under qemu-user, whose execveat is ENOSYS
        print('note: execveat left out: qemu-user does not emulate it')
        del modes['execveat']
    for mode, (rc_want, status, exec_path) in modes.items():
        d = t.path(mode)
        os.makedirs(d, exist_ok=True)
        rc, _, se = t.run([prog, mode], env={'LD_PRELOAD': t.shim,
                                             'MEMTRACE_OUTPUT': os.path.join(d, 'rec.%p.mtrace')})
        t.eq(rc, rc_want, f'{mode}: the program\'s status (stderr {se.strip()[-200:]!r})')
        # the first image's file (an exec'd image writes NAME.1)
        files = glob.glob(os.path.join(d, '*.mtrace'))
        if not t.eq(len(files), 1, f'{mode}: one recording of the first image ({os.listdir(d)})'):
            continue
        p = t.only_process(t.report(files[0]))
        if p is None:
            continue
        t.eq(os.path.basename(p.get('exe') or ''), os.path.basename(prog), f'{mode}: the first image')
        t.check_totals(p, label=f'{mode} totals', **TOTALS)
        s = t.site(p, 'before', lambda x: x.get('allocated_bytes') == 4000)
        t.check_site(s, f'{mode} before', allocations=4, leaked_bytes=4000)
        t.check_frames(s, f'{mode} before', [('before', SRC, marker_line(SRC, 'site:before')),
                                             ('main', SRC, None)])
        t.eq(p.get('exit_status'), status, f'{mode}: exit_status in the recording')
        if status is not None and status < 0:
            t.eq(p.get('signal'), signal.Signals(-status).name, f'{mode}: signal in the recording')
        ex = p.get('exec')
        if exec_path is None:
            t.eq(ex, None, f'{mode}: no exec')
        elif t.check(isinstance(ex, dict), f'{mode}: the exec is recorded ({ex!r})'):
            path = ex.get('path') or ''
            if exec_path == 'true':
                t.eq(os.path.basename(path), 'true', f'{mode}: exec of true found in PATH ({path})')
            else:
                t.check(path.startswith(exec_path), f'{mode}: exec path {path!r} is {exec_path}...')
