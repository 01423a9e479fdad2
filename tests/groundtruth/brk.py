"""A program grown by the program break alone: glibc's malloc moving it
from inside libc, and the program's own sbrk; see brk.c for why every
figure is what it is."""
import csv
import io
import re

from gtlib import marker_line

SRC = 'brk.c'
STEP = 1 << 20


def brk_calls(t, rec):
    """(by_allocator, move, function) of every brk row of the mmaps table."""
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'csv', rec,
                        "SELECT by_allocator, length, function, line FROM mmaps WHERE kind = 'brk'"],
                       what='memtrace query')
    t.eq(rc, 0, f'query of the mmaps table: exit status (stderr {se.strip()[-300:]!r})')
    rows = list(csv.reader(io.StringIO(so)))[1:] if rc == 0 else []
    return [(int(r[0]), int(r[1]), r[2], int(r[3] or 0)) for r in rows]


def check(t, rec, out, backend):
    m = re.search(r'brk: heapgrow moved the break (-?\d+), brkstep (-?\d+)', out)
    if not t.check(m, f'{backend}: the program ran to its end (stdout {out!r})'):
        return
    grown, stepped = int(m.group(1)), int(m.group(2))
    t.eq(stepped, STEP, f'{backend}: brkstep moved the break by 1 MiB (the program says)')
    # (less the room left in the heap before: the shim's own start-up
    # allocates from it)
    t.check(grown >= (2 << 20) - (256 << 10), f'{backend}: heapgrow moved the break by about 2 MiB ({grown})')
    calls = brk_calls(t, rec)
    # (under BPF the loader's and sbrk(0)'s brk(0): questions, no moves)
    mine = [c for c in calls if not c[0] and c[1]]
    t.eq([c[1:] for c in mine], [(STEP, 'brkstep', marker_line(SRC, 'site:brkstep'))],
         f'{backend}: the program\'s own move: 1 MiB, by brkstep, on its line')
    alloc = [c for c in calls if c[0]]
    t.check(alloc, f'{backend}: malloc\'s moves of the break are recorded, as the allocator\'s')
    t.eq(sum(c[1] for c in alloc), grown,
         f'{backend}: the allocator\'s moves add up to the break\'s move over heapgrow ({[c[1] for c in alloc]})')
    if backend == 'shim':
        # (under BPF the stack of a call inside malloc ends at malloc's
        # caller's return address: mmaps.py's step_of)
        t.eq({c[2] for c in alloc}, {'heapgrow'}, f'{backend}: made by heapgrow\'s malloc calls')
    p = t.only_process(t.report(rec))
    if p is None:
        return
    mem = p.get('memory') or {}
    t.eq(mem.get('mapped_brk_bytes'), grown + STEP, f'{backend}: memory.mapped_brk_bytes: the break\'s whole move')
    if backend == 'shim':
        # (BPF sees the loader's mappings too)
        t.eq(mem.get('mapped_bytes'), grown + STEP, f'{backend}: memory.mapped_bytes: the break\'s move alone')
    t.eq((mem.get('mapping_calls') or {}).get('brk'), len(calls), f'{backend}: memory.mapping_calls.brk')
    rc, so, _ = t.run([t.memtrace, 'report', rec])
    line = next((s for s in so.splitlines() if s.strip().startswith('mapped:')), '')
    t.check('brk 0 B' not in line and 'brk ' in line,
            f'{backend}: the text report\'s mapped line counts the break ({line.strip()!r})')


def run(t, prog):
    rec, out = t.record([prog])
    check(t, rec, out, 'shim')


def run_bpf(t, prog):
    rec, out = t.record([prog], opts=['--backend=bpf'])
    check(t, rec, out, 'bpf')
