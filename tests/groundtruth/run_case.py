#!/usr/bin/env python3
"""run_case.py [--backend=BACKEND] NAME ARGS... - runs the ground-truth case
NAME through one recording backend.

The expectations of case NAME are in NAME.py next to this file, the program
they describe in NAME.c / NAME.cpp; NAME.py defines run(t, *ARGS) where t is
a gtlib.Case.  Exit status 0 when every check passed, 1 otherwise.

The backend is an axis of the cases: --backend=preload (the default) runs
run(t, *ARGS), whose figures are exact by construction.  --backend=bpf runs
the case's program PROG (the first of ARGS) through the BPF backend and
through the shim, and requires the same figures of every site of the
program's own code, with nothing lost (bpflib.same_as_shim): the figures the
shim gives are the ones the preload axis checks.  A case has a bpf axis when
NAME.py sets BPF, the options of that comparison (e.g. temporaries=False
where the order of events of different threads can differ between the
backends).  Without root, BTF or uprobes the bpf axis exits 77 (a skip).
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import bpflib  # noqa: E402
import gtlib  # noqa: E402

BACKENDS = ('preload', 'bpf')


def load(name):
    spec = importlib.util.spec_from_file_location('gtcase_' + name.replace('-', '_'),
                                                  os.path.join(HERE, name + '.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_bpf(t, mod, args):
    """The bpf axis: the program (ARGS[0]) through both backends, compared;
    or the case's own run_bpf, for a case about more than one program."""
    if hasattr(mod, 'run_bpf'):
        mod.run_bpf(t, *args)
        return
    opts = getattr(mod, 'BPF', None)
    if opts is None:
        t.fail(f'case {t.name} has no bpf axis (its module sets no BPF)')
        return
    bpflib.same_as_shim(t, args[0], **opts)
    # a case may compare more of the two recordings (its check_bpf)
    extra = getattr(mod, 'check_bpf', None)
    if extra:
        ps = t.only_process(t.report(t.path('shim.mtrace')))
        pb = t.only_process(t.report(t.path('bpf.mtrace')))
        if ps is not None and pb is not None:
            extra(t, ps, pb)


def main():
    argv = sys.argv[1:]
    backend = 'preload'
    if argv and argv[0].startswith('--backend='):
        backend = argv.pop(0).split('=', 1)[1]
    if not argv or backend not in BACKENDS:
        print(f'usage: run_case.py [--backend={"|".join(BACKENDS)}] NAME [ARGS...]')
        return 2
    name, args = argv[0], argv[1:]
    mod = load(name)
    if backend == 'bpf':
        why = bpflib.bpf_unavailable()
        if why:
            print(f'gt-{name}-bpf: skipped: {why}')
            return 77
        t = gtlib.Case(name + '-bpf')
    else:
        t = gtlib.Case(name)
    try:
        if backend == 'bpf':
            run_bpf(t, mod, args)
        else:
            mod.run(t, *args)
    except Exception:
        import traceback
        traceback.print_exc()
        t.fail('the case raised an exception (see above)')
    t.finish()


if __name__ == '__main__':
    sys.exit(main())
