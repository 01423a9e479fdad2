"""A signal handler that allocates one block and calls exit() while main
churns; see sigexit.c.

Usage: sigexit.py record|shim PROG: RUNS runs under `memtrace record` or the
standalone shim.  The signal lands while the shim holds its channel lock in
about half of them: the handler's event, held back, can then never be
written, and must be counted in lost_events (it used to be silently
missing: 4 runs of 10, and standalone, everything since the last write of
the file went with it, the exit status too)."""
import os

RUNS = 20


def run(t, mode, prog):
    held = 0
    for i in range(RUNS):
        if mode == 'shim':
            rec = t.path(f'shim{i}.mtrace')
            rc, _, se = t.run([prog], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': rec})
            t.eq(rc, 7, f'run {i}: exit status under the standalone shim (stderr {se.strip()[-300:]!r})')
        else:
            rec, _ = t.record([prog], out=t.path(f'rec{i}.mtrace'), expect_rc=7)
        p = t.only_process(t.report(rec))
        if p is None:
            continue
        t.eq(p.get('exit_status'), 7, f'run {i}: exit_status in the recording')
        block = sum(s.get('allocations', 0) for s in t.sites_of(p, 'handler_block'))
        lost = p.get('lost_events')
        t.check((block, lost) in ((1, 0), (0, 1)),
                f'run {i}: the handler\'s block is recorded ({block} allocations) or counted as '
                f'lost (lost_events {lost}), never silently missing')
        if block:
            t.check_site(t.site(p, 'handler_block'), f'run {i}: handler_block', allocations=1,
                         allocated_bytes=4242, leaked_allocations=1, leaked_bytes=4242)
        if mode == 'record' and t.emulated:
            t.eq(p.get('leak_kinds', 'missing'), None, f'run {i}: no leak scan under an emulator (no ptrace)')
        elif mode == 'record':
            # the leak scan of a process exiting from its signal handler:
            # held at its exit like any other, complete, every leaked
            # block of a kind (the handler's, dropped, is lost or still in
            # a register or the handler's stack: either)
            lk = p.get('leak_kinds') or {}
            t.eq(lk.get('complete'), True, f'run {i}: the leak scan at an exit from a handler ({lk.get("why")!r})')
            kinds = sum(lk.get(f'{k}_allocations', 0) for k in ('definite', 'indirect', 'possible', 'reachable'))
            t.eq(kinds, p.get('totals', {}).get('leaked_allocations'), f'run {i}: every leaked block has a kind')
        else:
            held += 1
        # churn_once's free of a block whose allocation the cut took away
        # cannot be there: a standalone file stops at a record's end
        t.eq(p.get('totals', {}).get('unmatched_frees'), 0, f'run {i}: totals "unmatched_frees"')
        churn = sum(s.get('allocations', 0) for s in t.sites_of(p, 'churn_once'))
        t.check(churn > 1, f'run {i}: main\'s churn up to the signal is recorded ({churn} allocations)')
        os.unlink(rec)
    t.note(f'{held} of {RUNS} runs: the signal came while the shim held its lock '
           f'(the block counted as lost)')
