"""Allocations from assembly without CFI whose %rbp points at a stack or a
data address (see nocfi.c): the stack ends at that function.  x86-64
only."""
import os


def check(t, p, prog):
    """The two sites of the program: 3 blocks of 555 bytes and 2 of 444,
    leaked, each stack its assembly function alone, in the program."""
    own = t.own_sites(p, prog)
    t.eq(len(own), 2, 'sites of the program (two call sites)')
    for fn, n, size in (('gt_nocfi_stack', 3, 555), ('gt_nocfi_data', 2, 444)):
        s = t.site(p, fn)
        t.check_site(s, fn, allocations=n, allocated_bytes=n * size, frees=0,
                     leaked_allocations=n, leaked_bytes=n * size)
        if s is None:
            continue
        frames = s.get('frames') or []
        # (before the fix, BPF's walk trusted %rbp there and added a frame
        # at the word it read: a stack address 0x7ff..., or gt_nocfi_word)
        t.eq([(f.get('function'), f.get('module')) for f in frames], [(fn, os.path.realpath(prog))],
             f'{fn}: the stack, the function alone (no rule says where its caller is)')


def run(t, prog):
    _, p = t.record_process([prog])
    if p is None:
        return
    t.check_no_loss(p)
    check(t, p, prog)


def run_bpf(t, prog):
    """The bpf axis: the kernel's unwinder has no rule for gt_nocfi_alloc
    either, tries %rbp as a frame pointer, and must not take the stack or
    data address it finds there for a return address: each of the 5 stacks is
    cut there, counted (stack_no_table, where the loss of a frame without
    a rule goes), as the shim's figures are otherwise."""
    _, p = t.record_process([prog], opts=['--backend=bpf'])
    if p is None:
        return
    t.eq(p.get('backend'), 'bpf', 'backend')
    lost = p.get('lost_by_kind', {})
    t.eq(lost.get('stack_no_table'), 5, 'lost_by_kind.stack_no_table: the 5 stacks cut at the assembly')
    t.eq({k: v for k, v in lost.items() if k != 'stack_no_table' and v}, {}, 'no other loss')
    t.eq(p['totals'].get('unmatched_frees'), 0, 'totals "unmatched_frees"')
    check(t, p, prog)
