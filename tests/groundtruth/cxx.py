"""C++ allocations and an exception; see cxx.cpp."""
from gtlib import marker_line

SRC = 'cxx.cpp'
# the bpf axis (run_case.py --backend=bpf): the same figures as the shim's
BPF = {}

# demangled leaf function -> expected figures
SITES = {
    'gt::churn_widget()': dict(allocator='malloc', allocations=1, allocated_bytes=48, frees=1,
                               leaked_allocations=0, temporary_allocations=1, peak_bytes=0),
    'gt::make_ints()': dict(allocator='malloc', allocations=1, allocated_bytes=4000, frees=0,
                            leaked_allocations=1, leaked_bytes=4000, temporary_allocations=0, peak_bytes=4000),
    'gt::make_doubles()': dict(allocator='malloc', allocations=1, allocated_bytes=2400, frees=1,
                               leaked_allocations=0, temporary_allocations=1, peak_bytes=2400),
    'gt::make_tracked()': dict(allocator='malloc', allocations=1, allocated_bytes=10 * 16 + 8, frees=1,
                               leaked_allocations=0, temporary_allocations=1, peak_bytes=0),
    'gt::make_nothrow()': dict(allocator='malloc', allocations=1, allocated_bytes=48, frees=0,
                               leaked_allocations=1, leaked_bytes=48, temporary_allocations=0, peak_bytes=0),
    'gt::make_aligned()': dict(allocations=1, allocated_bytes=128, frees=1,
                               leaked_allocations=0, temporary_allocations=1, peak_bytes=0),
}
# operator new(size_t, align_val_t) reaches one of these, depending on how
# libstdc++ was configured (glibc's has aligned_alloc)
ALIGNED_ALLOCATORS = ('aligned_alloc', 'posix_memalign', 'memalign')
EXC_BYTES = 48 + 128  # sizeof(Error) + __cxa_refcounted_exception on x86-64


def run(t, prog, env=None):
    """ENV: more environment for the program (preloaded.py: an allocator
    library in LD_PRELOAD, whose own operator new the shim must see)."""
    rec, _ = t.record([prog], env=env)
    p = t.only_process(t.report(rec))
    if p is None:
        return

    # Every frame of the program's own functions must be demangled.
    for s in p.get('sites', []):
        for f in s.get('frames', []):
            fn = f.get('function') or ''
            t.check(not fn.startswith('_Z'), f'frame function {fn!r} is not demangled')
            t.check(not fn.startswith('operator new') and not fn.startswith('operator delete'),
                    f'an operator new/delete frame was left in a site: {[x.get("function") for x in s["frames"][:4]]}')

    for fn, want in SITES.items():
        s = t.site(p, fn)
        t.check_site(s, fn, **want)
        short = fn[len('gt::'):-2]
        t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + short)), ('main', SRC, None)])
    s = t.site(p, 'gt::make_aligned()')
    if s:
        t.check(s.get('allocator') in ALIGNED_ALLOCATORS,
                f'gt::make_aligned(): allocator {s.get("allocator")!r}, expected one of {ALIGNED_ALLOCATORS}')

    # Two calls of make_widget from two lines of main: two sites.
    ws = t.sites_of(p, 'gt::make_widget()')
    t.eq(len(ws), 2, 'number of sites of gt::make_widget() (two call stacks)')
    lines = sorted(t.fn(s, 1) == 'main' and s['frames'][1].get('line') for s in ws)
    t.eq(lines, sorted([marker_line(SRC, 'call:make_widget'), marker_line(SRC, 'call:make_widget_again')]),
         'lines in main of the two make_widget sites')
    for s in ws:
        t.check_site(s, 'gt::make_widget()', allocator='malloc', allocations=1, allocated_bytes=48, frees=0,
                     leaked_allocations=1, leaked_bytes=48, temporary_allocations=0, peak_bytes=48)
        t.check_frames(s, 'gt::make_widget()', [('gt::make_widget()', SRC, marker_line(SRC, 'site:make_widget'))])

    # The exception object: libstdc++'s __cxa_allocate_exception calls malloc
    # for the throwing function.  The report may list that frame (it called
    # the allocator) or drop it as part of the allocator; the throwing
    # function must come right after it, or first.
    def is_exc(s):
        names = [f.get('function') for f in s.get('frames', [])[:2]]
        return 'gt::throw_it(int)' in names
    exc = [s for s in p.get('sites', []) if is_exc(s)]
    if t.eq(len(exc), 1, 'number of sites of the thrown exception'):
        s = exc[0]
        names = [f.get('function') for f in s['frames']]
        if names[0] == '__cxa_allocate_exception':
            t.note('the exception site starts at __cxa_allocate_exception (libstdc++)')
            names = names[1:]
            frames = s['frames'][1:]
        else:
            frames = s['frames']
        t.eq(names[:2], ['gt::throw_it(int)', 'main'], 'exception site: the throwing function, then main')
        if len(frames) >= 2:
            t.eq(frames[0].get('line'), marker_line(SRC, 'site:throw_it'), 'exception site: line of the throw')
            t.eq(frames[1].get('line'), marker_line(SRC, 'call:throw_it'), 'exception site: line in main')
        t.check_site(s, 'exception', allocator='malloc', allocations=1, allocated_bytes=EXC_BYTES, frees=1,
                     leaked_allocations=0, temporary_allocations=1, peak_bytes=0)

    # Sites of libstdc++'s own start-up (its emergency exception pool), if
    # the shim saw them, are counted on top.
    foreign = t.foreign_sites(p, prog, exclude=exc)
    t.eq(len(t.own_sites(p, prog)) + len(exc), len(SITES) + 2 + 1, 'number of sites of the program')
    t.check_totals(p, extra=foreign, allocations=9, frees=5, allocated_bytes=7064,
                   leaked_allocations=4, leaked_bytes=4144, temporary_allocations=5)
    if not foreign:
        t.check_totals(p, peak_bytes=6496, peak_allocations=4)
    else:
        t.note('peak not compared exactly: library-internal allocations are live too')
        t.check(p['totals'].get('peak_bytes', 0) >= 6496, 'totals peak_bytes >= 6496')
    t.check_no_loss(p)
    t.check_sites_sum_to_totals(p)
