"""mimalloc's own API; see mimalloc.c for why each figure is what it is."""
import jemalloc

SRC = 'mimalloc.c'
# mi_heap_destroy frees its blocks without a call per block: the shim asks
# mimalloc for them; the BPF backend cannot (man/memtrace-record.1), so
# the bpf axis runs the program with "no-destroy" (mimalloc.c)
BPF = dict(object_prefix='libmimalloc.so', args=('no-destroy',))

FN = {'do_mi_malloc': 'malloc', 'do_mi_zalloc': 'calloc', 'do_mi_calloc': 'calloc',
      'do_mi_aligned': 'aligned_alloc', 'do_mi_src': 'malloc', 'do_mi_heap': 'malloc',
      'do_mi_realloc': 'realloc'}


def events():
    ev = [('alloc', 'do_mi_malloc', f'a{i}', 1201) for i in range(3)]
    ev += [('alloc', 'do_mi_zalloc', f'b{i}', 1203) for i in range(2)]
    ev += [('alloc', 'do_mi_calloc', f'c{i}', 5 * 241) for i in range(2)]
    ev += [('alloc', 'do_mi_aligned', f'd{i}', 1207) for i in range(2)]
    ev += [('alloc', 'do_mi_src', f's{i}', 1211) for i in range(2)]
    ev += [('alloc', 'do_mi_heap', f'h{i}', 1209) for i in range(3)]
    ev += [('realloc', 'do_mi_realloc', f's{i}', f'r{i}', 6007) for i in range(2)]
    ev += [('free', k) for k in ('a0', 'a1', 'b0', 'c0', 'd0', 'h0', 'r0', 'h1', 'h2')]
    return ev


def run(t, prog):
    rec, out = t.record([prog])
    t.check('mimalloc: done' in out, f'the program ran to its end (stdout {out!r})')
    p = t.only_process(t.report(rec))
    if p is not None:
        jemalloc.check(t, p, prog, SRC, FN, events(), 'mimalloc')
