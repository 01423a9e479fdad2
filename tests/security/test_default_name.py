#!/usr/bin/env python3
"""test_default_name.py - a made-up output name never takes what is there.

Without -o, `memtrace record` names its recording memtrace.COMMAND.PID.mtrace
in the current directory, and the standalone shim without MEMTRACE_OUTPUT
memtrace.EXE.PID.mtrace.  In a shared directory another user can plant a
symbolic link or a file at the name the next PID will get.  The PID is made
predictable here by running in a new PID namespace (unshare --pid --fork
--mount-proc): record is its process 1, so the command is 2; the shim's
program is 1 itself.  In a private temporary directory as the cwd:
  - nothing planted: the name is the expected one (so the planting hits);
  - a link planted at that name and a file at the first spare one: neither
    is followed nor written, and the next free name (.2) is taken and holds
    a readable recording.
"""
import os
import subprocess
import sys
import tempfile

MEMTRACE = os.environ['MEMTRACE']
SHIM = os.environ['MEMTRACE_SHIM']
TRUE = os.path.realpath('/bin/true')
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        failures.append(what)


def in_new_pid_ns(args, cwd, env=None):
    return subprocess.run(['unshare', '--pid', '--fork', '--mount-proc'] + args, cwd=cwd, env=env,
                          capture_output=True, text=True)


def plant(d, link_name, file_name):
    """A link to a precious file, and a file of someone else's."""
    target = os.path.join(d, 'precious')
    with open(target, 'w') as f:
        f.write('precious\n')
    os.symlink(target, os.path.join(d, link_name))
    with open(os.path.join(d, file_name), 'w') as f:
        f.write('theirs\n')
    return target


def untouched(d, target, file_name):
    return (open(target).read() == 'precious\n' and open(os.path.join(d, file_name)).read() == 'theirs\n')


def readable(path):
    r = subprocess.run([MEMTRACE, 'report', '--json', path], capture_output=True, text=True)
    return r.returncode == 0 and r.stderr == ''


def record_case(base):
    name = 'memtrace.%s.2' % base
    with tempfile.TemporaryDirectory(prefix='mt-defname-') as d:
        r = in_new_pid_ns([MEMTRACE, 'record', '-q', '--', TRUE], d)
        check(r.returncode == 0 and os.listdir(d) == [name + '.mtrace'],
              'record: the name is %s.mtrace (rc %d, %r, %s)' % (name, r.returncode, os.listdir(d), r.stderr.strip()))
    with tempfile.TemporaryDirectory(prefix='mt-defname-') as d:
        target = plant(d, name + '.mtrace', name + '.1.mtrace')
        r = in_new_pid_ns([MEMTRACE, 'record', '-q', '--', TRUE], d)
        check(r.returncode == 0, 'record: a planted link is no reason to fail (rc %d: %s)' % (r.returncode, r.stderr.strip()))
        check(untouched(d, target, name + '.1.mtrace'), 'record: the link and the file are untouched')
        check(os.path.islink(os.path.join(d, name + '.mtrace')), 'record: the link is still a link')
        new = os.path.join(d, name + '.2.mtrace')
        check(os.path.isfile(new) and not os.path.islink(new) and readable(new),
              'record: the recording is %s.2.mtrace (%r)' % (name, sorted(os.listdir(d))))


def shim_case(base):
    name = 'memtrace.%s.1' % base
    env = dict(os.environ)
    for k in ('MEMTRACE_OUTPUT', 'MEMORY_PROFILER_OUTPUT', 'MEMTRACE_CONNECT'):
        env.pop(k, None)
    # env(1) preloads the shim into true alone, which it becomes (pid 1)
    prog = ['env', 'LD_PRELOAD=' + SHIM, TRUE]
    with tempfile.TemporaryDirectory(prefix='mt-defname-') as d:
        r = in_new_pid_ns(prog, d, env)
        check(r.returncode == 0 and os.listdir(d) == [name + '.mtrace'],
              'shim: the name is %s.mtrace (%r)' % (name, os.listdir(d)))
    with tempfile.TemporaryDirectory(prefix='mt-defname-') as d:
        target = plant(d, name + '.mtrace', name + '.1.mtrace')
        r = in_new_pid_ns(prog, d, env)
        check(r.returncode == 0, 'shim: the program runs (rc %d)' % r.returncode)
        check(untouched(d, target, name + '.1.mtrace'), 'shim: the link and the file are untouched')
        new = os.path.join(d, name + '.2.mtrace')
        check(os.path.isfile(new) and not os.path.islink(new) and readable(new),
              'shim: the recording is %s.2.mtrace (%r)' % (name, sorted(os.listdir(d))))


def main():
    if os.geteuid() != 0:
        print('SKIP: a new PID namespace needs root')
        return 77
    base = os.path.basename(TRUE)
    record_case(base)
    shim_case(base)
    print('%d failed' % len(failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
