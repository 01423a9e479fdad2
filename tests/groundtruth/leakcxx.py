"""The leak scan of C++ objects (leakcxx.cpp), both backends: an object
held only through its second base (this + 16) is possibly lost, as
memcheck without heuristics says (leakkinds_valgrind.py gt-leakcxx)."""
import leakkinds


def made_here(site):
    """The objects' site: `new Both` in make()."""
    return any((f.get('function') or '').startswith('make') for f in (site.get('frames') or [])[:3])


def run(t, prog):
    leakkinds.check(t, prog, 'preload', argv=(), nblocks=3, own=made_here)


def run_bpf(t, prog):
    leakkinds.check(t, prog, 'bpf', argv=(), nblocks=3, own=made_here)
