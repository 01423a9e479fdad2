"""The shim on its own: LD_PRELOAD=libmemtrace-preload.so MEMTRACE_OUTPUT=FILE.
The recording must give exactly the figures of allocators.c and peak.c that
`memtrace record` gives (and that their cases check), be private (mode 0600
whatever the umask), and bytehound's MEMORY_PROFILER_OUTPUT and the %p
placeholder must work.

Usage: shim.py ALLOCATORS_PROG PEAK_PROG"""
import glob
import os
import stat

import allocators
import peak


def preload(t, prog, env, label):
    e = {'LD_PRELOAD': t.shim}
    e.update(env)
    old = os.umask(0)  # the file must be 0600 even so
    try:
        rc, so, se = t.run([prog], env=e, what=label)
    finally:
        os.umask(old)
    t.eq(rc, 0, f'{label}: exit status of the program (stderr {se.strip()[-300:]!r})')


def check_mode(t, path, label):
    if t.check(os.path.exists(path), f'{label}: the shim wrote {path}'):
        mode = stat.S_IMODE(os.stat(path).st_mode)
        t.eq(oct(mode), oct(0o600), f'{label}: mode of the recording')


LEAK_KINDS = ('definite', 'indirect', 'possible', 'reachable')


def figures(rep):
    """site (leaf function, its line, caller line) -> figures, and totals,
    without what differs from run to run (addresses, times, pids) and the
    leak scan's kinds, which only memtrace record makes (a standalone shim
    has nobody to scan it)."""
    out = {}
    for p in rep.get('processes', []):
        for s in p.get('sites', []):
            fr = s.get('frames', [])
            key = tuple((f.get('function'), f.get('line')) for f in fr[:2])
            out[key] = {k: v for k, v in s.items()
                        if k != 'frames' and k.split('_')[0] not in LEAK_KINDS}
        out['totals'] = {k: v for k, v in p.get('totals', {}).items() if k != 'peak_time_s'}
    return out


def run(t, allocators_prog, peak_prog):
    if not t.check(t.shim and os.path.exists(t.shim), f'MEMTRACE_SHIM names the shim ({t.shim!r})'):
        return

    # MEMTRACE_OUTPUT, compared with memtrace record
    out = t.path('standalone.mtrace')
    preload(t, allocators_prog, {'MEMTRACE_OUTPUT': out}, 'MEMTRACE_OUTPUT')
    check_mode(t, out, 'MEMTRACE_OUTPUT')
    rep = t.report(out) if os.path.exists(out) else None
    if rep:
        allocators.check_recording(t, rep, allocators_prog, 'standalone')
        t.eq(rep['processes'][0].get('backend') if rep.get('processes') else None, 'preload', 'backend')
        rec, _ = t.record([allocators_prog])
        rrep = t.report(rec)
        if rrep:
            a, b = figures(rep), figures(rrep)
            t.eq(sorted(a, key=str), sorted(b, key=str), 'sites of the standalone and the recorded run')
            for k in a:
                if k in b:
                    t.eq(a[k], b[k], f'figures of {k}: standalone vs memtrace record')

    # bytehound's name, with the peak program
    out = t.path('alias.mtrace')
    preload(t, peak_prog, {'MEMORY_PROFILER_OUTPUT': out}, 'MEMORY_PROFILER_OUTPUT')
    check_mode(t, out, 'MEMORY_PROFILER_OUTPUT')
    if os.path.exists(out):
        peak.check_recording(t, t.report(out), 'MEMORY_PROFILER_OUTPUT')

    # %p: the pid of the process
    pattern = t.path('pid.%p.mtrace')
    preload(t, peak_prog, {'MEMTRACE_OUTPUT': pattern}, 'MEMTRACE_OUTPUT with %p')
    files = glob.glob(t.path('pid.*.mtrace'))
    if t.eq(len(files), 1, f'files written for {pattern} ({files})'):
        rep = t.report(files[0])
        p = t.only_process(rep) if rep else None
        if p:
            t.eq(os.path.basename(files[0]), f'pid.{p.get("pid")}.mtrace', 'file name with %p expanded')
            check_mode(t, files[0], '%p')
