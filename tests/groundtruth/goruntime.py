"""Programs whose heap memtrace cannot see (issue 11): a Go program is told
apart by its .go.buildinfo section.  godyn.c (dynamic, "cgo"): recorded, its
3 C allocations of 300 B exact, and a warning on stderr names it a Go
program with the hint.  gostatic.c (static, no C library, as Go without
cgo): nothing to probe, and the one-line error says it is a Go program,
not that symbols are missing (BPF backend: root)."""
import os


def run(t, which, prog):
    if which == 'dynamic':
        rec = t.path('rec.mtrace')
        rc, _, se = t.run([t.memtrace, 'record', '-o', rec, '--', prog], what='memtrace record')
        t.eq(rc, 0, 'exit status')
        t.check('is a Go program' in se and 'pprof' in se,
                f'stderr names a Go program and hints at its profiler ({se.strip()[-300:]!r})')
        p = t.only_process(t.report(rec))
        if p:
            own = t.own_sites(p, prog)
            t.eq([(s.get('allocations'), s.get('allocated_bytes')) for s in own], [(3, 900)],
                 'the C allocations are recorded exactly')
    else:
        rc, _, se = t.run([t.memtrace, 'record', '-o', t.path('rec.mtrace'), '--', prog],
                          what='memtrace record')
        t.eq(rc, 125, 'exit status: memtrace cannot trace it')
        lines = se.strip().splitlines()
        t.check(len(lines) == 1 and os.path.basename(prog) in lines[0] and 'Go program' in lines[0]
                and 'no allocator and links none' not in lines[0],
                f'one line naming it a Go program ({se!r})')
