"""An allocator library preloaded by the user (LD_PRELOAD=LIB memtrace
record -- PROG) under an ordinary program: allocators.c (every C function)
or cxx.cpp (C++'s new and delete, which each of these libraries defines
itself, without calling malloc).  The library stays in force (the shim
forwards to it: the report names it as the process's allocator; glibc's
allocator given a jemalloc block would abort), and the figures are the
program's, exactly as without it."""
import os

import allocators
import cxx


def run(t, name, lib, prog):
    path = os.path.join('/usr/lib', os.uname().machine + '-linux-gnu', lib)
    if not os.path.exists(path):
        t.fail(f'{path} is missing: run tools/setup.sh (it installs the {name} package)')
        return
    env = {'LD_PRELOAD': path}
    if os.path.basename(prog) == 'gt-cxx':
        cxx.run(t, prog, env=env)
        rec = t.path('rec.mtrace')
    else:
        rec, _ = t.record([prog], env=env)
    rep = t.report(rec)
    if os.path.basename(prog) != 'gt-cxx':
        allocators.check_recording(t, rep, prog, f'{name} preloaded')
    p = t.only_process(rep)
    if p is None:
        return
    t.eq(p.get('allocator'), name, 'the process\'s allocator (the preloaded one stays in force)')
    t.eq(os.path.realpath(p.get('allocator_object') or ''), os.path.realpath(path),
         'the allocator object is the preloaded library')
