"""jemalloc's own API; see jemalloc.c for why each figure is what it is."""
import os

from gtlib import marker_line
from replay import replay

SRC = 'jemalloc.c'
BPF = dict(object_prefix='libjemalloc.so')

# leaf function -> allocator function reported
FN = {'do_mallocx': 'mallocx', 'do_mallocx_align': 'mallocx', 'do_mallocx_zero': 'mallocx',
      'do_rallocx_src': 'mallocx', 'do_malloc': 'malloc', 'do_rallocx': 'rallocx',
      'do_xbig': 'mallocx', 'do_xsmall': 'mallocx', 'do_xallocx': 'xallocx'}


def events():
    ev = [('alloc', 'do_mallocx', f'a{i}', 1101) for i in range(3)]
    ev += [('alloc', 'do_mallocx_align', f'b{i}', 1103) for i in range(2)]
    ev += [('alloc', 'do_mallocx_zero', f'c{i}', 1105) for i in range(2)]
    ev += [('alloc', 'do_rallocx_src', f'd{i}', 1107) for i in range(4)]
    ev += [('alloc', 'do_malloc', f'm{i}', 1111) for i in range(2)]
    ev += [('realloc', 'do_rallocx', f'd{i}', f'e{i}', 5003) for i in range(4)]
    ev += [('alloc', 'do_xbig', 'g', 65536), ('alloc', 'do_xsmall', 'f', 1109),
           ('realloc', 'do_xallocx', 'g', 'h', 32768)]
    ev += [('free', f'a{i}') for i in range(3)]
    ev += [('free', 'b0'), ('free', 'e0'), ('free', 'e1'), ('free', 'f'), ('free', 'm0'),
           ('free', 'm1')]
    return ev


def check(t, p, prog, src, fns, evs, allocator, label='record'):
    """The exact figures of a program whose events EVS replay gives, every
    site's leaf in FNS with its allocator function; ALLOCATOR the process's."""
    totals, sites = replay(evs)
    # What the libraries allocate for themselves while they start (the
    # libstdc++ that jemalloc and tcmalloc link keeps its emergency pool,
    # tcmalloc's initialisation): counted since the shim records from the
    # first allocation, added to the totals.  None of it may come from the
    # program's code: an event of the program counted twice (mi_malloc and
    # the malloc it calls) would show there, with the program on its stack.
    foreign = t.startup_sites(p, prog, label)
    t.check_totals(p, label=f'{label} totals', extra=foreign, **totals)
    t.check_no_loss(p, label)
    t.eq(p.get('allocator'), allocator, f'{label}: the process\'s allocator')
    own = t.own_sites(p, prog)
    t.eq(len(own), len(sites), f'{label}: number of sites of the program')
    for fn, want in sites.items():
        s = t.site(p, fn)
        t.check_site(s, f'{label} {fn}', allocator=fns[fn], **want)
        t.check_frames(s, f'{label} {fn}', [
            (fn, src, marker_line(src, 'site:' + fn)),
            ('main', src, marker_line(src, 'call:' + fn)),
        ])


def run(t, prog):
    rec, out = t.record([prog])
    t.check('jemalloc: done' in out, f'the program ran to its end (stdout {out!r})')
    p = t.only_process(t.report(rec))
    if p is None:
        return
    check(t, p, prog, SRC, FN, events(), 'jemalloc')
    t.check(os.path.basename(p.get('allocator_object') or '').startswith('libjemalloc.so'),
            f'allocator_object names libjemalloc: {p.get("allocator_object")!r}')
