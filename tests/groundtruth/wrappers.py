"""The program a wrapper runs is the one recorded: gt-peak (peak.c, its
figures exact) run through env, nice, timeout, sh -c "exec ...", and a
pyenv-style shim script that execs it.  Without --follow-forks.

The wrapper's own image is an entry of its own, started first (same pid for
the wrappers that exec; timeout's is the parent of gt-peak's), ending with
an exec that was traced; gt-peak's entry is the main one, named gt-peak.
`env -i` clears the environment, so gt-peak cannot load the shim: with
--backend=preload (the shim alone, as without root) the summary on stderr
names it and why, and only env is in the recording.

Through the BPF backend (run_bpf, gt-wrappers-bpf) the same entries, each
exec re-placing the probes for the new image: env -i is traced there, with
gt-peak's exact totals.  (timeout is left out: the BPF backend follows no
child.)  And under the default backend as root, the fallback: the shim
traces env, and before env's exec of gt-peak, which it cannot follow, the
recorder puts the BPF backend in its place: gt-peak's entry (backend "bpf",
same pid) has its exact totals, and nothing is said to be untraced.

Usage: wrappers.py PROG (gt-peak)"""
import os

import peak
from gtlib import stderr_lines


def main_entry(t, procs, label):
    mains = [p for p in procs if p.get('main') is True]
    t.eq(len(mains), 1, f'{label}: number of entries with "main": true')
    return mains[0] if mains else None


def check_wrapped(t, prog, label, cmd, wrapper_name, same_pid, opts=(), bpf_program=None):
    rec, _ = t.record(cmd, opts=opts)
    rep = t.report(rec)
    if rep is None:
        return
    procs = t.processes(rep, 2)
    if len(procs) != 2:
        return
    first, second = procs
    # start order: the wrapper, then the program
    t.eq(first.get('name'), wrapper_name, f'{label}: name of the first entry')
    t.eq(second.get('name'), 'gt-peak', f'{label}: name of the second entry')
    t.eq(second.get('exe'), os.path.realpath(prog), f'{label}: exe of the program\'s entry')
    m = main_entry(t, procs, label)
    t.check(m is second, f'{label}: the main entry is gt-peak\'s')
    if same_pid:
        t.eq(second.get('pid'), first.get('pid'), f'{label}: the program runs in the wrapper\'s pid')
        ex = first.get('exec') or {}
        t.eq(ex.get('traced'), True, f'{label}: the wrapper\'s entry ends with a traced exec ({ex})')
        t.eq(os.path.realpath(ex.get('path', '')), os.path.realpath(prog),
             f'{label}: the exec the wrapper\'s entry ends with')
    else:
        t.eq(second.get('ppid'), first.get('pid'), f'{label}: the program is the wrapper\'s child')
        t.eq(first.get('exit_status'), 0, f'{label}: the wrapper\'s exit_status')
    t.eq(second.get('exit_status'), 0, f'{label}: the program\'s exit_status')
    if bpf_program is None:
        bpf_program = bool(opts)
    if bpf_program:
        t.eq(second.get('backend'), 'bpf', f'{label}: backend of the program\'s entry')
        t.eq(first.get('backend'), 'bpf' if opts else 'preload', f'{label}: backend of the wrapper\'s entry')
    if bpf_program:
        # BPF stacks of these programs (no frame pointers) differ: totals only
        t.check_totals(second, label=f'{label} totals', **peak.TOTALS)
        t.check_no_loss(second, label)
    else:
        peak.check_process(t, second, label)


def run(t, prog):
    check_wrapped(t, prog, 'env', ['env', prog], 'env', True)
    check_wrapped(t, prog, 'nice', ['nice', prog], 'nice', True)
    check_wrapped(t, prog, 'sh -c exec', ['sh', '-c', f'exec "{prog}"'], 'sh', True)
    check_wrapped(t, prog, 'shim script', [shim_script(t, prog)], 'bash', True)
    check_wrapped(t, prog, 'timeout', ['timeout', '30', prog], 'timeout', False)

    check_children(t, prog)

    # env -i: not traced, and said so (the shim alone: as root the default
    # backend would put BPF in its place, run_bpf)
    rec = t.path('envi.mtrace')
    rc, so, se = t.run([t.memtrace, 'record', '--backend=preload', '-o', rec, '--', 'env', '-i', prog],
                       what='memtrace record')
    t.eq(rc, 0, 'env -i: exit status of memtrace record')
    warn = [ln for ln in stderr_lines(se) if ln.startswith('memtrace: warning:') and 'not traced' in ln]
    t.eq(len(warn), 1, f'env -i: one warning about an untraced program ({stderr_lines(se)})')
    if warn:
        t.check(os.path.realpath(prog) in warn[0] or prog in warn[0], f'env -i: the warning names {prog}: {warn[0]!r}')
        t.check('LD_PRELOAD' in warn[0], f'env -i: the warning says why (LD_PRELOAD): {warn[0]!r}')
    rep = t.report(rec)
    procs = t.processes(rep, 1)
    if procs:
        t.eq(procs[0].get('name'), 'env', 'env -i: the one entry')
        ex = procs[0].get('exec') or {}
        t.eq(ex.get('traced'), False, f'env -i: env\'s entry ends with an untraced exec ({ex})')
        t.check('LD_PRELOAD' in (ex.get('why') or ''), f'env -i: the exec says why ({ex})')


def check_children(t, prog):
    """A shell that runs the program in children (dash by vfork, bash by
    fork), three times: without --follow-forks only the shell is recorded,
    and the report and record's end say how many children were not
    traced; with it, none is said to be."""
    for shell in ('sh', 'bash'):
        cmd = [shell, '-c', f'"{prog}"; "{prog}"; "{prog}"; true']
        rec, _ = t.record(cmd, out=t.path(f'{shell}-children.mtrace'))
        rc, so, se = t.run([t.memtrace, 'record', '-o', t.path(f'{shell}-again.mtrace'), '--'] + cmd,
                           what='memtrace record')
        warn = [ln for ln in stderr_lines(se) if 'child process' in ln]
        t.check(len(warn) == 1 and '3 child processes not traced: use -f' in warn[0],
                f'{shell} -c: record says the 3 children were not traced ({stderr_lines(se)})')
        procs = t.processes(t.report(rec), 1)
        if procs:
            t.eq(procs[0].get('untraced_children'), 3, f'{shell} -c: untraced_children of the shell')
        rc, so, _ = t.run([t.memtrace, 'report', rec], what='memtrace report')
        t.check('3 child processes not traced: use -f' in so,
                f'{shell} -c: the text report says so ({so[:400]!r})')
        rc, so, se = t.run([t.memtrace, 'record', '-f', '-o', t.path(f'{shell}-f.mtrace'), '--'] + cmd,
                           what='memtrace record -f')
        t.check(rc == 0 and 'child process' not in se, f'{shell} -c with -f: nothing untraced said ({se[-300:]!r})')
        # (bash's children are bash images first, each an entry of its own)
        procs = t.processes(t.report(t.path(f'{shell}-f.mtrace')))
        t.check(len(procs) >= 4 and all(p.get('untraced_children') == 0 for p in procs),
                f'{shell} -c with -f: the shell and its 3 children, none untraced '
                f'({[(p.get("name"), p.get("untraced_children")) for p in procs]})')


def shim_script(t, prog):
    shim = t.path('pyenv-shim')
    with open(shim, 'w') as f:
        f.write(f'#!/bin/bash\nset -e\nprogram="{prog}"\nexec "$program" "$@"\n')
    os.chmod(shim, 0o755)
    return shim


def run_bpf(t, prog):
    bpf = ['--backend=bpf']
    check_wrapped(t, prog, 'bpf env', ['env', prog], 'env', True, bpf)
    check_wrapped(t, prog, 'bpf env -i', ['env', '-i', prog], 'env', True, bpf)
    check_wrapped(t, prog, 'bpf nice', ['nice', prog], 'nice', True, bpf)
    check_wrapped(t, prog, 'bpf sh -c exec', ['sh', '-c', f'exec "{prog}"'], 'sh', True, bpf)
    check_wrapped(t, prog, 'bpf shim script', [shim_script(t, prog)], 'bash', True, bpf)
    # the default backend: the shim for env, BPF in its place for gt-peak
    check_wrapped(t, prog, 'fallback env -i', ['env', '-i', prog], 'env', True, bpf_program=True)
    rec = t.path('fallback.mtrace')
    rc, so, se = t.run([t.memtrace, 'record', '-o', rec, '--', 'env', '-i', prog], what='memtrace record')
    warn = [ln for ln in stderr_lines(se) if ln.startswith('memtrace: warning:')]
    t.eq(warn, [], 'fallback env -i: no warning')
