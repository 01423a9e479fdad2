"""Exit status of `memtrace record`: the command's own, 128+N for a signal,
126 and 127 as a shell uses them, 2 for a usage error.

Usage: exitcodes.py SEGV_PROG (segv.c)"""
import os
import signal

from gtlib import marker_line, stderr_lines


def one_error_line(t, se, label, mention=None):
    lines = stderr_lines(se)
    t.eq(len(lines), 1, f'{label}: number of lines on stderr ({lines})')
    if lines:
        t.check(lines[0].startswith('memtrace: error:'), f'{label}: stderr starts with "memtrace: error:": {lines[0]!r}')
        if mention:
            t.check(mention in lines[0], f'{label}: the error names {mention!r}: {lines[0]!r}')


def record(t, cmd, opts=()):
    out = t.path('rec.mtrace')
    if os.path.exists(out):
        os.unlink(out)
    rc, so, se = t.run([t.memtrace, 'record', '-q', '-o', out, *opts, '--', *cmd] if cmd is not None
                       else [t.memtrace, 'record', *opts])
    return rc, se, out


def run(t, segv):
    # the command's own status
    rc, se, out = record(t, ['false'])
    t.eq(rc, 1, 'memtrace record -- false')
    rep = t.report(out)
    t.eq(len(t.processes(rep)), 1, 'processes in the recording of false')
    rc, se, out = record(t, ['sh', '-c', 'exit 42'])
    t.eq(rc, 42, "memtrace record -- sh -c 'exit 42'")
    rc, se, out = record(t, ['true'])
    t.eq(rc, 0, 'memtrace record -- true')

    # not runnable: 127 (not found), 126 (found but not executable)
    rc, se, out = record(t, ['/nonexistent/gt-command'])
    t.eq(rc, 127, 'memtrace record -- /nonexistent/gt-command')
    one_error_line(t, se, 'nonexistent command (path)', '/nonexistent/gt-command')
    rc, se, out = record(t, ['gt-no-such-command-on-path'])
    t.eq(rc, 127, 'memtrace record -- gt-no-such-command-on-path')
    one_error_line(t, se, 'nonexistent command (PATH)', 'gt-no-such-command-on-path')
    noexec = t.path('not-executable')
    with open(noexec, 'w') as f:
        f.write('#!/bin/sh\nexit 0\n')
    os.chmod(noexec, 0o644)
    rc, se, out = record(t, [noexec])
    t.eq(rc, 126, 'memtrace record -- a file without execute permission')
    one_error_line(t, se, 'non-executable file', noexec)
    rc, se, out = record(t, [t.tmp])
    t.eq(rc, 126, 'memtrace record -- a directory')
    one_error_line(t, se, 'directory as command', t.tmp)

    # killed by a signal: 128 + N, and what it did until then is recorded
    rc, se, out = record(t, [segv])
    t.eq(rc, 128 + signal.SIGSEGV, 'memtrace record -- a program dying of SIGSEGV')
    rep = t.report(out)
    p = t.only_process(rep)
    if p is not None:
        s = t.site(p, 'before_crash')
        t.check_site(s, 'before_crash', allocations=1, allocated_bytes=4321, leaked_allocations=1)
        t.check_frames(s, 'before_crash', [('before_crash', 'segv.c', marker_line('segv.c', 'site:before_crash')),
                                           ('main', 'segv.c', None)])
        t.check_totals(p, allocations=1, leaked_allocations=1, leaked_bytes=4321, frees=0)
        if 'exit_status' in p:
            t.check(p['exit_status'] in (-11, 139), f'exit_status {p["exit_status"]!r} says SIGSEGV (-11 or 139)')

    # the summary names the crash on stderr (not only `report`)
    out = t.path('segv-loud.mtrace')
    rc, so, se = t.run([t.memtrace, 'record', '-o', out, '--', segv])
    t.eq(rc, 128 + signal.SIGSEGV, 'memtrace record (not quiet) -- a program dying of SIGSEGV')
    named = [ln for ln in stderr_lines(se) if ln.startswith('memtrace: warning:') and 'killed by SIGSEGV' in ln]
    t.eq(len(named), 1, f'one warning naming SIGSEGV on stderr ({stderr_lines(se)})')
    if named:
        t.check('(gt-segv)' in named[0], f'the warning names the program: {named[0]!r}')
    rep = t.report(out)
    p = t.only_process(rep)
    if p is not None:
        t.eq(p.get('signal'), 'SIGSEGV', 'report: "signal"')

    # usage errors: 2, and an error line naming the option first
    rc, se, out = record(t, ['true'], opts=['--gt-no-such-option'])
    t.eq(rc, 2, 'memtrace record --gt-no-such-option')
    lines = stderr_lines(se)
    t.check(lines and lines[0].startswith('memtrace: error:') and '--gt-no-such-option' in lines[0],
            f'unknown option: first stderr line is "memtrace: error: ..." naming it: {lines}')
    rc, se, out = record(t, None)
    t.eq(rc, 2, 'memtrace record without a command')
    lines = stderr_lines(se)
    t.check(lines and lines[0].startswith('memtrace: error:'), f'no command: stderr {lines}')
