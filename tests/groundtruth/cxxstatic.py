"""libstdc++'s emergency pool in a program that carries libstdc++ itself,
stripped (as gcc's cc1): held by the runtime, not leaked; see cxxstatic.cpp.
The bpf axis (run_bpf) gives the same figures through the BPF backend."""

POOL = (72704, 73728)


def check(t, opts, label):
    rec, out = t.record([t.prog], opts=opts)
    t.check('cxxstatic: done' in out, f'{label}: the program ran to its end (stdout {out!r})')
    p = t.only_process(t.report(rec))
    if p is None:
        return
    tot = p.get('totals', {})
    t.eq(tot.get('runtime_held_allocations'), 1, f'{label}: blocks held by the runtime (the pool)')
    t.check(tot.get('runtime_held_bytes') in POOL,
            f'{label}: bytes held by the runtime: the pool\'s {POOL} ({tot.get("runtime_held_bytes")})')
    t.eq((tot.get('leaked_allocations'), tot.get('leaked_bytes')), (2, 133),
         f'{label}: leaked: the string and its buffer alone')
    t.eq(tot.get('allocations'), 4, f'{label}: allocations: the pool, the string, its buffer, the vector')


def run(t, prog):
    t.prog = prog
    check(t, [], 'shim')


def run_bpf(t, prog):
    t.prog = prog
    check(t, ['--backend=bpf'], 'bpf')
