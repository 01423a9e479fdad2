"""Allocations before main, and blocks the runtimes hold until exit; see
cxxinit.cpp.  The bpf axis (gt-cxxinit-bpf) also requires the BPF backend's
totals and runtime-held blocks to be the shim's (check_bpf)."""
import os

from gtlib import marker_line

SRC, LIB = 'cxxinit.cpp', 'cxxinit_lib.cpp'
BPF = {}

OWN = {
    'gtlib::lib_init_block()': dict(allocations=3, allocated_bytes=3000, frees=0, leaked_allocations=3,
                                    leaked_bytes=3000, runtime_held_allocations=0),
    'gtlib::lib_init_scratch()': dict(allocations=1, allocated_bytes=500, frees=1, leaked_allocations=0,
                                      temporary_allocations=1, runtime_held_allocations=0),
    'make_longs()': dict(allocations=5, allocated_bytes=400, frees=5, leaked_allocations=0,
                         temporary_allocations=5, runtime_held_allocations=0),
    'gtlib::lib_work()': dict(allocations=2, allocated_bytes=128, frees=0, leaked_allocations=2,
                              leaked_bytes=128, runtime_held_allocations=0),
}
TOTAL_KEYS = ('allocations', 'frees', 'allocated_bytes', 'leaked_allocations', 'leaked_bytes',
              'runtime_held_allocations', 'runtime_held_bytes', 'temporary_allocations')


def held_sites(p):
    return [s for s in p.get('sites', []) if s.get('runtime_held_allocations')]


def check_runtime(t, p, label):
    """Exactly two blocks held by the runtime: libstdc++'s pool and stdout's
    buffer, neither counted as leaked."""
    held = held_sites(p)
    t.eq(len(held), 2, f'{label}: sites with blocks held by the runtime '
         f'({[[f.get("function") for f in s.get("frames", [])[:2]] for s in held]})')
    pool = [s for s in held if os.path.basename((s.get('frames') or [{}])[0].get('module') or '')
            .startswith('libstdc++')]
    stdio = [s for s in held if t.fn(s) == '_IO_file_doallocate']
    if t.eq(len(pool), 1, f'{label}: libstdc++\'s emergency pool is held by the runtime'):
        t.check_site(pool[0], f'{label} emergency pool', allocations=1, frees=0, leaked_allocations=0,
                     runtime_held_allocations=1)
    if t.eq(len(stdio), 1, f'{label}: stdout\'s buffer is held by the runtime'):
        t.check_site(stdio[0], f'{label} stdout buffer', allocations=1, frees=0, leaked_allocations=0,
                     runtime_held_allocations=1)
    tot = p.get('totals', {})
    t.eq(tot.get('runtime_held_allocations'), 2, f'{label}: totals "runtime_held_allocations"')
    t.eq(tot.get('runtime_held_bytes'), sum(s.get('allocated_bytes', 0) for s in held),
         f'{label}: totals "runtime_held_bytes" = the bytes of those two blocks')


def run(t, prog):
    rec, out = t.record([prog])
    t.eq(out, 'gt-cxxinit done\n', 'what the program printed')
    p = t.only_process(t.report(rec))
    if p is None:
        return
    t.check_no_loss(p)
    for fn, want in OWN.items():
        sites = t.sites_of(p, fn)
        got = {k: sum(s.get(k, 0) for s in sites) for k in want}
        t.eq(got, want, f'{fn}: figures summed over its {len(sites)} sites')
    for s in t.sites_of(p, 'gtlib::lib_init_block()'):
        t.check_frames(s, 'lib_init_block', [('gtlib::lib_init_block()', LIB, marker_line(LIB, 'site:lib_init_block')),
                                             ('gtlib::Registry::Registry()', LIB, None)])
    for s in t.sites_of(p, 'gtlib::lib_work()'):
        t.check_frames(s, 'lib_work', [('gtlib::lib_work()', LIB, marker_line(LIB, 'site:lib_work')),
                                       ('main', SRC, None)])
    check_runtime(t, p, 'shim')
    held = held_sites(p)
    foreign = [s for s in p.get('sites', []) if t.fn(s) not in OWN and s not in held]
    for s in foreign:
        t.note(f'other site: {s.get("allocations")} x {[f.get("function") for f in s.get("frames", [])[:3]]}')
    t.check_totals(p, extra=foreign + held, allocations=11, frees=6, allocated_bytes=4028, leaked_allocations=5,
                   leaked_bytes=3128, temporary_allocations=6)
    t.check_sites_sum_to_totals(p)


def check_bpf(t, ps, pb):
    """The BPF backend sees the same blocks before main and holds the same
    ones as the runtime's."""
    check_runtime(t, pb, 'BPF')
    t.eq({k: pb['totals'].get(k) for k in TOTAL_KEYS}, {k: ps['totals'].get(k) for k in TOTAL_KEYS},
         'totals: BPF against the shim')
