"""An allocation from assembly without CFI whose %rbp points at a stack
address (see nocfi.c): the stack ends at that function.  x86-64 only."""
import os


def check(t, p, prog):
    """The one site of the program: 3 blocks of 555 bytes, leaked, its
    stack gt_nocfi_alloc alone, in the program."""
    own = t.own_sites(p, prog)
    t.eq(len(own), 1, 'sites of the program (one call site)')
    s = t.site(p, 'gt_nocfi_alloc')
    t.check_site(s, 'gt_nocfi_alloc', allocations=3, allocated_bytes=3 * 555, frees=0,
                 leaked_allocations=3, leaked_bytes=3 * 555)
    if s is None:
        return
    frames = s.get('frames') or []
    t.eq([(f.get('function'), f.get('module')) for f in frames],
         [('gt_nocfi_alloc', os.path.realpath(prog))],
         'the stack: gt_nocfi_alloc, and no frame after it (no rule says where its caller is)')
    # (before the fix, BPF's walk trusted %rbp there and added a frame at
    # the stack address it read: 0x7ff...)
    t.eq([f.get('address') for f in frames if not f.get('module')], [],
         'frames outside every object (a stack address taken for a return address)')


def run(t, prog):
    _, p = t.record_process([prog])
    if p is None:
        return
    t.check_no_loss(p)
    check(t, p, prog)


def run_bpf(t, prog):
    """The bpf axis: the kernel's unwinder has no rule for gt_nocfi_alloc
    either, tries %rbp as a frame pointer, and must not take the stack
    address it finds there for a return address: each of the 3 stacks is
    cut there, counted (stack_no_table, where the loss of a frame without
    a rule goes), as the shim's figures are otherwise."""
    _, p = t.record_process([prog], opts=['--backend=bpf'])
    if p is None:
        return
    t.eq(p.get('backend'), 'bpf', 'backend')
    lost = p.get('lost_by_kind', {})
    t.eq(lost.get('stack_no_table'), 3, 'lost_by_kind.stack_no_table: the 3 stacks cut at gt_nocfi_alloc')
    t.eq({k: v for k, v in lost.items() if k != 'stack_no_table' and v}, {}, 'no other loss')
    t.eq(p['totals'].get('unmatched_frees'), 0, 'totals "unmatched_frees"')
    check(t, p, prog)
