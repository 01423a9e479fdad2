#!/usr/bin/env python3
"""test_output.py - output files never change what they name.

`memtrace record -o PATH` and the shim's MEMTRACE_OUTPUT, run as root, used
to chmod whatever PATH named (the machine's /dev/null became 0600).  Here,
in a private temporary directory only (a copy of /dev/null made with mknod,
never the real one):
  - a character device is written as it is, its mode and owner untouched;
  - an existing regular file is truncated and keeps its mode;
  - a symbolic link is not followed: its target is untouched, exit 125;
  - a FIFO and a directory are refused with a one-line error, exit 125;
  - the errors say what is wrong in words ("is a symbolic link: not
    followed", "is a FIFO: not written"), not ELOOP's or ENXIO's strerror;
  - a new file is created with mode 0600.
`memtrace export -o PATH` is held to the same (it used to write a temporary
file and rename it over whatever PATH named: a device or a link became a
regular file): a device is written in place and stays a device, a link, a
FIFO and a directory are refused (exit 1, the error in words), a file it
makes is 0644 less the umask (a page or an export is made to be shared),
and `-o -` is standard output.  A recording and a saved database are 0600
whatever the umask; a page and an export 0644 less the umask, their owner
always able to read and write them.
"""
import os
import stat
import subprocess
import sys
import tempfile

MEMTRACE = os.environ['MEMTRACE']
SHIM = os.environ['MEMTRACE_SHIM']
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        failures.append(what)


def record(out):
    return subprocess.run([MEMTRACE, 'record', '-q', '-o', out, '--', '/bin/true'],
                          capture_output=True, text=True)


def main():
    if os.geteuid() != 0:
        print('SKIP: mknod of a private /dev/null copy needs root')
        return 77
    with tempfile.TemporaryDirectory(prefix='mt-output-') as d:
        null = os.path.join(d, 'null')
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod(null, 0o666)
        r = record(null)
        st = os.stat(null)
        check(r.returncode == 0, 'a character device is written as it is (rc %d)' % r.returncode)
        check(stat.S_IMODE(st.st_mode) == 0o666 and stat.S_ISCHR(st.st_mode),
              'its mode stays 0666 (now %o)' % stat.S_IMODE(st.st_mode))

        # the same through the shim on its own
        env = dict(os.environ, LD_PRELOAD=SHIM, MEMTRACE_OUTPUT=null)
        subprocess.run(['/bin/true'], env=env)
        check(stat.S_IMODE(os.stat(null).st_mode) == 0o666,
              'MEMTRACE_OUTPUT leaves the device 0666')

        existing = os.path.join(d, 'existing.mtrace')
        with open(existing, 'w') as f:
            f.write('x' * 100000)
        os.chmod(existing, 0o640)
        r = record(existing)
        st = os.stat(existing)
        check(r.returncode == 0 and st.st_size < 100000, 'an existing file is truncated and rewritten')
        check(stat.S_IMODE(st.st_mode) == 0o640, 'and keeps its mode 0640 (now %o)' % stat.S_IMODE(st.st_mode))

        target = os.path.join(d, 'target')
        with open(target, 'w') as f:
            f.write('precious\n')
        os.chmod(target, 0o644)
        link = os.path.join(d, 'link.mtrace')
        os.symlink(target, link)
        r = record(link)
        check(r.returncode == 125, 'a symbolic link is refused (rc %d)' % r.returncode)
        check(open(target, 'rb').read() == b'precious\n' and stat.S_IMODE(os.stat(target).st_mode) == 0o644,
              'its target is untouched')
        check(r.stderr.count('\n') == 1 and r.stderr.startswith('memtrace: error:') and 'link.mtrace' in r.stderr,
              'one line naming the file: %r' % r.stderr)
        check('is a symbolic link: not followed' in r.stderr, 'saying what is wrong in words: %r' % r.stderr)

        fifo = os.path.join(d, 'fifo')
        os.mkfifo(fifo)
        r = record(fifo)
        check(r.returncode == 125 and 'fifo' in r.stderr, 'a FIFO is refused, not waited on (rc %d)' % r.returncode)
        check(r.stderr.count('\n') == 1 and 'fifo is a FIFO: not written' in r.stderr,
              'saying what is wrong in words: %r' % r.stderr)
        r = record(d)
        check(r.returncode == 125 and r.stderr.startswith('memtrace: error:'), 'a directory is refused')

        new = os.path.join(d, 'new.mtrace')
        r = record(new)
        check(r.returncode == 0 and stat.S_IMODE(os.stat(new).st_mode) == 0o600,
              'a new file is created 0600')

        # export -o: a recording with something in it
        rec = os.path.join(d, 'rec.mtrace')
        subprocess.run([MEMTRACE, 'record', '-q', '-o', rec, '--', 'sh', '-c', 'ls /'],
                       capture_output=True)

        def export(out):
            return subprocess.run([MEMTRACE, 'export', '--format', 'folded', '-o', out, rec],
                                  capture_output=True, text=True)
        r = export(null)
        st = os.stat(null)
        check(r.returncode == 0 and stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666,
              'export -o DEVICE: written in place, still a device of mode 0666 (rc %d, %s)'
              % (r.returncode, r.stderr.strip()))
        check(not [f for f in os.listdir(d) if '.tmp' in f], 'export -o DEVICE: no temporary file left')
        r = export(link)
        check(r.returncode == 1 and 'is a symbolic link: not followed' in r.stderr and os.path.islink(link)
              and open(target, 'rb').read() == b'precious\n',
              'export -o LINK: refused, the link and its target untouched (%r)' % r.stderr)
        r = export(fifo)
        check(r.returncode == 1 and 'is a FIFO: not written' in r.stderr and stat.S_ISFIFO(os.stat(fifo).st_mode),
              'export -o FIFO: refused, still a FIFO (%r)' % r.stderr)
        r = export(d)
        check(r.returncode == 1 and r.stderr.count('\n') == 1, 'export -o DIRECTORY: refused in one line')
        out = os.path.join(d, 'out.folded')
        r = export(out)
        mask = os.umask(0o022)
        os.umask(mask)
        want = (0o644 & ~mask) | 0o600
        check(r.returncode == 0 and stat.S_IMODE(os.stat(out).st_mode) == want and os.path.getsize(out) > 0,
              'export -o NEW: a file of mode %o, 0644 less the umask %03o (rc %d)'
              % (want, mask, r.returncode))
        r = export('-')
        check(r.returncode == 0 and r.stdout == open(out).read() and not os.path.exists('-'),
              'export -o -: standard output, the same as the file')

        # a recording and a saved query database are 0600 whatever the
        # umask; the page and a heaptrack file 0644 less the umask, and
        # always their owner's to read and write: under a umask that gives
        # all (000) and one that would take the owner's write (0277)
        for mask in (0o000, 0o277):
            sub = os.path.join(d, 'umask%03o' % mask)
            os.mkdir(sub)
            made = {
                'page': [MEMTRACE, 'export', '--format', 'html', '-o', os.path.join(sub, 'page'), rec],
                'heaptrack': [MEMTRACE, 'export', '--format', 'heaptrack', '-o',
                              os.path.join(sub, 'heaptrack'), rec],
                'saved': [MEMTRACE, 'query', '--save', os.path.join(sub, 'saved'), rec, 'SELECT 1'],
                'recording': [MEMTRACE, 'record', '-q', '-o', os.path.join(sub, 'recording'), '--',
                              '/bin/true'],
            }
            for name, cmd in made.items():
                r = subprocess.run(cmd, capture_output=True, text=True,
                                   preexec_fn=lambda m=mask: os.umask(m))
                path = os.path.join(sub, name)
                mode = stat.S_IMODE(os.stat(path).st_mode) if os.path.exists(path) else None
                want = (0o644 & ~mask) | 0o600 if name in ('page', 'heaptrack') else 0o600
                check(r.returncode == 0 and mode == want,
                      'umask %03o: %s written %o (rc %d, mode %s, %s)'
                      % (mask, name, want, r.returncode, oct(mode) if mode is not None else None,
                         r.stderr.strip()[-200:]))
    print('%d failed' % len(failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
