"""bpflib - what the tests of the BPF backend share: whether this machine can
run it, and the comparison of a program recorded through it with the same
program recorded through the shim (the groundtruth runner's bpf axis)."""

import os


def bpf_unavailable():
    """Why the BPF backend cannot run here, or None."""
    if os.geteuid() != 0:
        return 'not root (the BPF backend needs root or CAP_BPF and CAP_PERFMON)'
    if not os.path.exists('/sys/kernel/btf/vmlinux'):
        return 'the kernel has no BTF (/sys/kernel/btf/vmlinux)'
    if not os.path.exists('/sys/bus/event_source/devices/uprobe'):
        return 'the kernel has no uprobe support'
    return None


def by_leaf(proc, leaves=None):
    """Figures summed per leaf function: BPF stacks beyond the immediate
    caller may be shorter than the shim's, so sites are compared by it."""
    out = {}
    for s in proc.get('sites', []):
        f = (s.get('frames') or [{}])[0].get('function')
        if leaves is not None and f not in leaves:
            continue
        d = out.setdefault(f, dict(allocations=0, allocated_bytes=0, leaked_allocations=0,
                                   leaked_bytes=0, frees=0, temporary_allocations=0))
        for k in d:
            d[k] += s.get(k, 0)
    return out


def chains(proc, sites):
    """Allocations and bytes per call chain ((function, line) of every
    frame, leaf first) of SITES of PROC."""
    out = {}
    for s in sites:
        key = tuple((f.get('function'), f.get('line')) for f in s.get('frames') or [])
        a, b = out.get(key, (0, 0))
        out[key] = (a + s.get('allocations', 0), b + s.get('allocated_bytes', 0))
    return out


def same_as_shim(t, prog, args=(), temporaries=True, object_prefix='libc.so', stacks=True):
    """Records PROG with the shim and with BPF: the same figures per leaf
    function of the program's own code and, with STACKS, the same whole
    call chains (the kernel unwinds with the unwind tables, as the shim
    does: the programs are built without frame pointers).  (Totals are not
    compared here: a case whose totals must agree says so in its check_bpf,
    run_case.py.)"""
    shim, _ = t.record([prog, *args], opts=['--backend=preload'], out=t.path('shim.mtrace'))
    bpf, _ = t.record([prog, *args], opts=['--backend=bpf'], out=t.path('bpf.mtrace'))
    rs, rb = t.report(shim), t.report(bpf)
    ps, pb = t.only_process(rs), t.only_process(rb)
    if ps is None or pb is None:
        return None
    t.eq(pb.get('backend'), 'bpf', 'backend named in the BPF report')
    t.eq(pb.get('lost_events'), 0, 'BPF: lost_events')
    t.eq(pb['totals'].get('unmatched_frees'), 0, 'BPF: unmatched_frees')
    own = [s for s in t.own_sites(ps, prog)]
    leaves = {(s.get('frames') or [{}])[0].get('function') for s in own} - {None}
    t.check(len(leaves) > 0, 'the shim found sites in the program')
    # the report names the allocator object each site called (libc, unless
    # the program links another allocator: OBJECT_PREFIX), and the process's
    objs = {s.get('allocator_object') for s in pb.get('sites', [])
            if (s.get('frames') or [{}])[0].get('function') in leaves}
    t.check(len(objs) >= 1 and all(o and os.path.basename(o).startswith(object_prefix) for o in objs),
            f'allocator_object of the program\'s sites is {object_prefix}*: {objs}')
    t.eq(pb.get('allocator'), ps.get('allocator'), 'the process\'s allocator: BPF against the shim')
    if stacks:
        own_b = [s for s in pb.get('sites', [])
                 if (s.get('frames') or [{}])[0].get('function') in leaves]
        cs, cb = chains(ps, own), chains(pb, own_b)
        for c in sorted(set(cs) | set(cb), key=str):
            names = ' <- '.join(f'{fn}:{line}' for fn, line in c)
            t.eq(cb.get(c), cs.get(c), f'(allocations, bytes) of the chain {names}: BPF against the shim')
    ls, lb = by_leaf(ps, leaves), by_leaf(pb, leaves)
    for f in sorted(leaves):
        want, got = ls.get(f), lb.get(f)
        if not temporaries and want and got:
            want = dict(want, temporary_allocations=None)
            got = dict(got, temporary_allocations=None)
        t.eq(got, want, f'figures of the sites called from {f}: BPF against the shim')
    # Times are not compared between the two runs: how long a run takes
    # depends on the machine's load.  Their order is checked in each: the
    # peak falls within the run.
    for how, p in (('the shim', ps), ('BPF', pb)):
        pt, dur = p['totals'].get('peak_time_s'), p.get('duration_s')
        t.check(isinstance(pt, (int, float)) and isinstance(dur, (int, float)) and 0 <= pt <= dur,
                f'{how}: the peak ({pt!r} s) falls within the run ({dur!r} s)')
    return pb
