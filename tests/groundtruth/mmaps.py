"""Calls that map memory, with their stacks and the mapped memory they add
up to; see mmaps.c for why every figure is what it is."""
import csv
import io
import os

from gtlib import marker_line

SRC = 'mmaps.c'
MIB = 1 << 20
BLOCK = MIB + 4096  # malloc(1 MiB)'s own mapping: the block and a page for its header
PEAK = 8 * MIB + (64 << 10) + (256 << 10) + BLOCK
STEPS = ('anon', 'filemap', 'trim', 'grow', 'brkstep', 'bigblock', 'bigfree', 'unmapall')
COLS = ('s', 'kind', 'by_allocator', 'address', 'length', 'old_address', 'old_length', 'prot',
        'flags', 'fd', 'offset', 'error', 'path', 'mapped', 'function', 'line', 'stack')
PROT_READ, PROT_WRITE, MAP_SHARED, MAP_PRIVATE, MAP_ANONYMOUS = 1, 2, 1, 2, 0x20
EM_MIPS = 8


def anon_flag(prog):
    """MAP_ANONYMOUS of the program's architecture (its ELF header's
    e_machine): MIPS numbers it 0x800, the others 0x20."""
    with open(prog, 'rb') as f:
        head = f.read(20)
    little = head[5] == 1
    machine = int.from_bytes(head[18:20], 'little' if little else 'big')
    return 0x800 if machine == EM_MIPS else 0x20


def calls(t, rec):
    """Every row of the mmaps table, in stream order, as dicts."""
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'csv', rec,
                        f'SELECT {", ".join(COLS)} FROM mmaps'], what='memtrace query')
    t.eq(rc, 0, f'query of the mmaps table: exit status (stderr {se.strip()[-300:]!r})')
    rows = list(csv.reader(io.StringIO(so)))[1:] if rc == 0 else []
    return [dict(zip(COLS, r)) for r in rows]


def step_of(row):
    """The program's step whose call this is (the outermost in its stack), or None."""
    names = row['stack'].split(';')
    for n in reversed(names):
        if n in STEPS:
            return n
    # Under BPF the allocator's calls inside malloc have stacks that end at
    # malloc's caller: the uretprobe on malloc holds its return address
    # (the unwinder stops at the trampoline); only bigblock calls malloc
    if row['by_allocator'] == '1' and 'malloc' in row['stack'] and row['stack'].endswith('?'):
        return 'bigblock'
    return None


def run(t, prog):
    global MAP_ANONYMOUS
    MAP_ANONYMOUS = anon_flag(prog)
    data = t.path('data')
    rec, out = t.record([prog, data])
    t.check('mmaps: done' in out, f'the program ran to its end (stdout {out!r})')
    check(t, rec, data, 'shim')
    check_server(t, rec)
    # the shim on its own (its file: blocks named by address, not serial)
    solo = t.path('solo.mtrace')
    rc, _, se = t.run([prog, data], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': solo})
    t.eq(rc, 0, f'standalone run (stderr {se.strip()[-300:]!r})')
    check(t, solo, data, 'shim')
    # off: record --no-mmap, and bytehound's name for it
    off, _ = t.record([prog, data], opts=['--no-mmap'], out=t.path('off.mtrace'))
    t.eq(calls(t, off), [], 'record --no-mmap: no mapping calls')
    solo_off = t.path('solo-off.mtrace')
    rc, _, se = t.run([prog, data], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': solo_off,
                                         'MEMORY_PROFILER_GATHER_MMAP_CALLS': '0'})
    t.eq(calls(t, solo_off), [], 'MEMORY_PROFILER_GATHER_MMAP_CALLS=0: no mapping calls')


def run_bpf(t, prog):
    data = t.path('data')
    rec, out = t.record([prog, data], opts=['--backend=bpf'])
    t.check('mmaps: done' in out, f'the program ran to its end (stdout {out!r})')
    check(t, rec, data, 'bpf')
    off, _ = t.record([prog, data], opts=['--backend=bpf', '--no-mmap'], out=t.path('off.mtrace'))
    t.eq(calls(t, off), [], 'bpf: record --no-mmap: no mapping calls')


def check(t, rec, data, backend):
    p = t.only_process(t.report(rec))
    if p is None:
        return
    rows = calls(t, rec)
    first = next((i for i, r in enumerate(rows) if step_of(r) == 'anon'), 0)
    own = [r for r in rows[first:] if step_of(r)]
    got = [(step_of(r), r['kind'], int(r['length']), int(r['by_allocator'])) for r in own]
    # under BPF the first malloc also makes glibc's main arena (a brk of
    # the size glibc picks), which the shim cannot see
    big = [('bigblock', 'block', BLOCK, 1)] if backend == 'shim' else \
          [('bigblock', 'brk', None, 1), ('bigblock', 'mmap', BLOCK, 1),
           ('bigfree', 'munmap', BLOCK, 0)]
    # (free has no return probe, so no call in flight: its unmapping is
    # not marked as the allocator's under BPF; man memtrace-record, BUGS)
    # brk's length is the break's move, signed: sbrk(256 KiB) then
    # sbrk(-256 KiB) in brkstep, for both backends (it was the recorded
    # request: sbrk's increment zigzag-encoded in the shim, 524288 and
    # 524287; brk's address under BPF); the arena's, glibc's choice, apart
    want = [('anon', 'mmap', 4 * MIB, 0), ('filemap', 'mmap', 64 << 10, 0),
            ('trim', 'munmap', MIB, 0), ('grow', 'mremap', 8 * MIB, 0),
            ('brkstep', 'brk', 256 << 10, 0)] + big + \
           [('brkstep', 'brk', -(256 << 10), 0), ('unmapall', 'munmap', 8 * MIB, 0),
            ('unmapall', 'munmap', 64 << 10, 0)]
    t.eq([(s, k, None if k == 'brk' and b else n, b) for s, k, n, b in got], want,
         f'{backend}: the program\'s calls (step, kind, length, by the allocator), in order')
    if len(got) != len(want):
        return
    arena = 0
    if backend == 'bpf':
        a = own[5]
        arena = int(a['address']) - int(a['old_address'])
        t.check(arena > 0, f'bpf: the arena\'s brk moves the break up ({arena})')
        t.eq(int(a['length']), arena, 'bpf: the arena\'s brk: its length is the break\'s move')
    t.eq([int(r['error']) for r in own], [0] * len(own), f'{backend}: no call failed')

    # arguments
    a, f, tr, g = own[0], own[1], own[2], own[3]
    t.eq((int(a['prot']), int(a['flags']) & (MAP_PRIVATE | MAP_ANONYMOUS | MAP_SHARED), a['path']),
         (PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, ''), f'{backend}: anon: prot, flags, no file')
    t.eq((int(f['prot']), int(f['flags']) & (MAP_PRIVATE | MAP_SHARED), int(f['offset'])),
         (PROT_READ, MAP_SHARED, 4096), f'{backend}: filemap: prot, flags, offset')
    t.check(int(f['fd']) >= 0, f'{backend}: filemap: a descriptor ({f["fd"]})')
    if backend == 'shim' or f['path']:
        # (the BPF recorder reads it after the call: gone if the program
        # unmapped it first)
        t.eq(f['path'], os.path.realpath(data), f'{backend}: filemap: the file\'s path')
    t.eq(int(tr['address']), int(a['address']), f'{backend}: trim unmaps from the mapping\'s start')
    t.eq((int(g['old_address']), int(g['old_length'])), (int(a['address']) + MIB, 3 * MIB),
         f'{backend}: grow: the old range')
    brk = [r for r in own if r['kind'] == 'brk' and r['by_allocator'] == '0']
    t.eq([int(r['address']) - int(r['old_address']) for r in brk], [256 << 10, -(256 << 10)],
         f'{backend}: the break\'s moves')

    # stacks: each call's caller is its step, on the marked line (the
    # allocator's calls are made inside malloc and free: their step is in
    # the stack, further out)
    for r in own:
        s = step_of(r)
        if backend == 'bpf' and s in ('bigblock', 'bigfree'):
            continue  # made inside malloc and free
        site = {'unmapall': 'unmap8' if int(r['length']) == 8 * MIB else 'unmap64'}.get(s, s)
        t.eq((r['function'], int(r['line'] or 0)), (s, marker_line(SRC, f'site:{site}')),
             f'{backend}: {r["kind"]} of {s}: its caller (function, line)')

    # the mapped series: from what was mapped before the first step, up by
    # each step's bytes, the peak at the big block, back at the end
    i0 = rows.index(own[0])
    base = int(rows[i0 - 1]['mapped']) if i0 else 0
    series = [int(r['mapped']) - base for r in own]
    steps = [4 * MIB, 4 * MIB + (64 << 10), 3 * MIB + (64 << 10), 8 * MIB + (64 << 10),
             8 * MIB + (64 << 10) + (256 << 10)]
    steps += [PEAK] if backend == 'shim' else \
        [PEAK - BLOCK + arena, PEAK + arena, PEAK - BLOCK + arena]
    steps += [8 * MIB + (64 << 10) + arena, (64 << 10) + arena, arena]
    t.eq(series, steps, f'{backend}: mapped memory after each call, above what was mapped before')
    mem = p.get('memory') or {}
    t.eq(mem.get('peak_mapped_bytes'), base + PEAK + arena, f'{backend}: memory.peak_mapped_bytes')
    if backend == 'shim':
        # nothing else maps memory through the dynamic linker here
        t.eq(mem.get('mapping_calls'), {'total': 9, 'mmap': 2, 'munmap': 3, 'mremap': 1, 'brk': 2,
                                         'block': 1, 'failed': 0, 'by_allocator': 1},
             'shim: memory.mapping_calls')
        t.eq(mem.get('mapped_bytes'), 0, 'shim: memory.mapped_bytes at the end')
    rc, so, _ = t.run([t.memtrace, 'report', rec])
    t.check('mapping calls:' in so, f'{backend}: the text report lists the mapping calls')


def check_server(t, rec):
    """memtrace server's /data/0/mmaps: bytehound's operations, the same
    calls as the mmaps table, with the same callers and mapped memory."""
    import json
    import serverlib
    proc, port = serverlib.start(t, [rec])
    if proc is None:
        return
    try:
        with serverlib.OPENER.open(f'http://127.0.0.1:{port}/data/0/mmaps', timeout=60) as r:
            doc = json.loads(r.read())
    finally:
        proc.terminate()
        proc.communicate()
    ops = doc.get('operations', [])
    rows = calls(t, rec)
    got = [(next(iter(o)), v.get('length'), v.get('mapped_bytes'), v.get('by_allocator'),
            (v.get('backtrace') or [{}])[0].get('function'))
           for o in ops for v in o.values()]
    want = [('mmap' if r['kind'] == 'block' else r['kind'], int(r['length']), int(r['mapped']),
             r['by_allocator'] == '1', r['function'] or None) for r in rows]
    t.eq(got, want, 'server /mmaps: kind, length, mapped, by the allocator, caller of each call')
    mm = [v for o in ops for k, v in o.items() if k == 'mmap' and not v.get('block')]
    if len(mm) == 2:
        t.eq([(v['is_readable'], v['is_writable'], v['is_shared'], v['is_private'],
               v['is_anonymous'], v['offset'], v['pointer_s'] == hex(v['pointer']))
              for v in mm],
             [(True, True, False, True, True, 0, True), (True, False, True, False, False, 4096, True)],
             'server /mmaps: the two mmaps\' flags as bytehound\'s booleans, offset, pointer_s')
