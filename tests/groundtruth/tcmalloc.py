"""tcmalloc's own API; see tcmalloc.c for why each figure is what it is."""
import jemalloc

SRC = 'tcmalloc.c'
# tc_new and tc_delete are tcmalloc's operator new and delete, which the BPF
# backend does not probe (a return probe on a function that throws is
# fatal), nor tc_free_sized, its sized delete: the bpf axis runs the program
# with "c-api", which leaves them out (tcmalloc.c)
BPF = dict(object_prefix='libtcmalloc', args=('c-api',))

FN = {'do_tc_malloc': 'malloc', 'do_tc_calloc': 'calloc', 'do_tc_memalign': 'memalign',
      'do_tc_posix_memalign': 'posix_memalign', 'do_tc_src': 'malloc',
      'do_tc_realloc': 'realloc', 'do_tc_new': 'malloc'}


def events():
    ev = [('alloc', 'do_tc_malloc', f'a{i}', 1301) for i in range(3)]
    ev += [('alloc', 'do_tc_calloc', f'b{i}', 7 * 187) for i in range(2)]
    ev += [('alloc', 'do_tc_memalign', f'c{i}', 1303) for i in range(2)]
    ev += [('alloc', 'do_tc_posix_memalign', 'd', 1305)]
    ev += [('alloc', 'do_tc_src', f's{i}', 1307) for i in range(2)]
    ev += [('realloc', 'do_tc_realloc', f's{i}', f'r{i}', 7001) for i in range(2)]
    ev += [('alloc', 'do_tc_new', f'n{i}', 1311) for i in range(2)]
    ev += [('free', k) for k in ('a0', 'a1', 'b0', 'c0', 'r0', 'n0', 'n1')]
    return ev


def run(t, prog):
    rec, out = t.record([prog])
    t.check('tcmalloc: done' in out, f'the program ran to its end (stdout {out!r})')
    p = t.only_process(t.report(rec))
    if p is not None:
        jemalloc.check(t, p, prog, SRC, FN, events(), 'tcmalloc')
