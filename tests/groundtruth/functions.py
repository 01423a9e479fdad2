"""Per-function figures (self and inclusive, every weight), callers and
callees, the most useful frame of a site, and the size and lifetime
histograms; see functions.c, whose table these are."""

W = ('allocations', 'allocated_bytes', 'leaked_allocations', 'leaked_bytes', 'peak_allocations',
     'peak_bytes', 'temporary_allocations')


def w(a, b, la=0, lb=0, pa=0, pb=0, tmp=0):
    return dict(zip(W, (a, b, la, lb, pa, pb, tmp)))


ZERO = w(0, 0)
# function: (self, inclusive), as functions.c's header works them out
FUNCS = {
    'helper': (w(6, 2350, 3, 2050, 3, 2050), w(6, 2350, 3, 2050, 3, 2050)),
    'wrap': (w(4, 700, 0, 0, 1, 100), w(8, 1050, 1, 50, 2, 150)),
    'left': (ZERO, w(6, 900)),
    'right': (ZERO, w(5, 2183, 3, 2050, 5, 2183, 1)),
    'temp': (w(1, 33, 0, 0, 1, 33, 1), w(1, 33, 0, 0, 1, 33, 1)),
    'rec': (w(4, 28, 4, 28), w(4, 28, 4, 28)),
    'dupper': (ZERO, w(1, 8, 1, 8)),
    'main': (ZERO, w(16, 3119, 8, 2086, 5, 2183, 1)),
}


def run(t, prog):
    rec, _ = t.record([prog])
    rep = t.report(rec, ['--functions'])
    p = t.only_process(rep)
    if p is None:
        return
    t.check_no_loss(p)
    t.check_totals(p, allocations=16, allocated_bytes=3119, frees=8, leaked_allocations=8, leaked_bytes=2086,
                   peak_bytes=2183, peak_allocations=5, temporary_allocations=1)
    fns = {f['name']: f for f in p.get('functions', [])}
    for name, (self_, incl) in FUNCS.items():
        f = fns.get(name)
        if not t.check(f is not None, f'--functions lists {name}'):
            continue
        t.eq(f['self'], self_, f'{name}: self figures')
        t.eq(f['inclusive'], incl, f'{name}: inclusive figures')
        t.check(f['file'] and f['file'].endswith('functions.c'), f'{name}: its file ({f["file"]})')
    t.eq(fns.get('rec', {}).get('sites'), 4, 'rec: four sites (one per depth), counted once each')
    # strdup asked malloc itself: it has the self figures, dupper the inclusive
    libc = [f for f in p.get('functions', []) if f['module'] and '/libc.so' in f['module']
            and f['self']['allocations']]
    t.eq([(f['self']['allocations'], f['self']['allocated_bytes']) for f in libc], [(1, 8)],
         'the C library\'s function (strdup) asked for 8 bytes itself')
    # ranked by inclusive allocated bytes, the default view's weight
    ranked = [f['inclusive']['allocated_bytes'] for f in p.get('functions', [])]
    t.eq(ranked, sorted(ranked, reverse=True), '--functions: ranked by inclusive allocated bytes')
    rl = t.report(rec, ['--functions', '--leaks'])
    pl = t.only_process(rl) if rl else None
    if pl:
        ranked = [f['inclusive']['leaked_bytes'] for f in pl.get('functions', [])]
        t.eq(ranked, sorted(ranked, reverse=True), '--functions --leaks: ranked by inclusive leaked bytes')

    # the most useful frame: the first outside the allocator and the runtime
    for s in p.get('sites', []):
        names = [f.get('name') for f in s.get('frames', [])]
        k = s.get('useful_frame')
        if names and names[0] in ('helper', 'wrap', 'temp', 'rec'):
            t.eq(k, 0, f'site of {names[0]}: its own frame is the useful one')
        elif 'dupper' in names:
            t.eq(names[k] if k is not None and k < len(names) else None, 'dupper',
                 f'strdup\'s site: the useful frame is dupper, not {names[0]}')

    # callers and callees: what went through each edge
    r = t.report(rec, ['--callers', 'helper'])
    p = t.only_process(r) if r else None
    if p:
        t.eq(p.get('callers_of', {}).get('inclusive'), FUNCS['helper'][1], '--callers helper: its figures')
        got = {c['name']: c['inclusive'] for c in p.get('callers', [])}
        t.eq(got, {'right': w(2, 2000, 2, 2000, 2, 2000), 'wrap': w(4, 350, 1, 50, 1, 50)},
             '--callers helper: right (2 x 1000) and wrap (3 x 100 + 50)')
    r = t.report(rec, ['--callees', 'right'])
    p = t.only_process(r) if r else None
    if p:
        got = {c['name']: c['inclusive'] for c in p.get('callees', [])}
        t.eq(got, {'helper': w(2, 2000, 2, 2000, 2, 2000), 'wrap': w(2, 150, 1, 50, 2, 150),
                   'temp': w(1, 33, 0, 0, 1, 33, 1)}, '--callees right')
    r = t.report(rec, ['--callees', 'helper'])
    p = t.only_process(r) if r else None
    if p:
        got = {c['name']: c['inclusive']['allocations'] for c in p.get('callees', [])}
        t.eq(got, {'malloc': 6}, '--callees helper: malloc itself')
    rc, so, se = t.run([t.memtrace, 'report', '--callers', 'nosuchfn', rec])
    t.eq(rc, 1, '--callers of no function: exit status 1')
    t.check('nosuchfn' in se and '--functions' in se, f'--callers of no function: says so ({se.strip()!r})')

    # the text forms
    rc, so, se = t.run([t.memtrace, 'report', '--callers', 'helper', rec])
    t.eq(rc, 0, 'report --callers helper (text): exit status')
    t.check('\nFUNCTION helper [functions.c]\n' in so, f'--callers text: the function ({so[:300]!r})')
    t.check('  self:      allocations 6, allocated 2.35 KB, leaked 2.05 KB in 3, peak 2.05 KB in 3, '
            'temporary 0\n' in so, '--callers text: helper\'s self figures')
    t.check('-> 85.11% (2.00 KB, 2x): right [' in so, f'--callers text: the tree has right at 2000/2350 ({so!r})')
    rc, so, se = t.run([t.memtrace, 'report', '--leaks=all', '--top-down', rec])
    t.check(so.count('-> 100.00% (2.09 KB, 8x): main [') == 1,
            f'--leaks --top-down: main holds every leak at the top ({so[-1500:]!r})')

    # one is singular: "1 call", "1 allocation", "1 block"
    rc, so, se = t.run([t.memtrace, 'report', rec])
    for want in ('  1 call to malloc (50 B) from:\n', '  8 B leaked in 1 allocation from:\n',
                 '  33 B at peak in 1 block (1 allocation) from:\n'):
        t.check(want in so, f'summary: {want.strip()!r} ({so[-1500:]!r})')
    t.check(' 1 allocations' not in so and ' 1 blocks' not in so and ' 1 calls' not in so,
            'summary: no "1 allocations", "1 blocks", "1 calls"')

    # sizes and lifetimes
    r = t.report(rec, ['--sizes'])
    p = t.only_process(r) if r else None
    if p:
        t.eq([(b['max_size'], b['allocations'], b['bytes']) for b in p.get('sizes', [])],
             [(8, 5, 36), (64, 2, 83), (128, 4, 400), (256, 3, 600), (1024, 2, 2000)],
             '--sizes: allocations per power-of-two size')
        life = {b['max_s']: b['allocations'] for b in p.get('lifetimes', [])}
        t.eq(life.get(0.1), 6, '--sizes: left\'s six blocks lived 10 to 100 ms (50 ms)')
        t.eq(life.get(0.001, 0) + life.get(0.01, 0), 2, '--sizes: two blocks freed within 10 ms')
        t.eq(sum(life.values()), 8, '--sizes: eight blocks freed')
        t.eq(p.get('never_freed'), {'allocations': 8, 'bytes': 2086}, '--sizes: never freed = leaked')
    r = t.report(rec, ['--sizes', '--size-min', '100'])
    p = t.only_process(r) if r else None
    if p:
        t.eq([(b['max_size'], b['allocations']) for b in p.get('sizes', [])], [(128, 4), (256, 3), (1024, 2)],
             '--sizes --size-min 100: the filter holds')
