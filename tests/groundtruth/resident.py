"""Resident memory beside the heap (record's RSS samples); see resident.c
for why every figure is what it is."""
import csv
import io

MIB16 = 16 << 20
HEAP = 20000 * 200
SHARED = 4 << 20


def samples(t, rec):
    """(s, rss, rss_anon, heap, rss_shmem) of every sample, in time order."""
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'csv', rec,
                        'SELECT s, rss, rss_anon, heap, rss_shmem FROM memory ORDER BY s'],
                       what='memtrace query')
    t.eq(rc, 0, f'query of the memory table: exit status (stderr {se.strip()[-300:]!r})')
    rows = list(csv.reader(io.StringIO(so)))[1:] if rc == 0 else []
    return [tuple([float(r[0])] + [int(x) for x in r[1:]]) for r in rows]


def run(t, prog):
    rec, out = t.record([prog])
    t.check('resident: done' in out, f'the program ran to its end (stdout {out!r})')
    p = t.only_process(t.report(rec))
    if p is None:
        return
    t.check_totals(p, 'totals', allocations=40000, frees=20000, leaked_bytes=HEAP)
    marks = {m['text']: m['time_s'] for m in p.get('markers', [])}
    t.eq(sorted(marks), ['fragmented', 'touched-1', 'touched-2', 'touched-3', 'unmapped'],
         'markers')
    if len(marks) != 5:
        return
    rows = samples(t, rec)
    t.check(len(rows) >= 20, f'samples every 10 ms over a run of 0.75 s or more ({len(rows)})')

    def between(a, b):
        """Samples from 5 ms after marker A to 10 ms before marker B (or
        140 ms after A): the plateau A begins, whatever the clocks' grain."""
        end = marks[b] - 0.010 if b else marks[a] + 0.140
        return [r for r in rows if marks[a] + 0.005 <= r[0] <= end]

    plateaus = [('fragmented', 'touched-1'), ('touched-1', 'touched-2'),
                ('touched-2', 'touched-3'), ('touched-3', 'unmapped'), ('unmapped', None)]
    level = {}
    for a, b in plateaus:
        got = between(a, b)
        if not t.check(got, f'at least one sample after "{a}"'):
            return
        # the heap does not move after the fragmentation: exact
        t.eq(sorted({r[3] for r in got}), [HEAP], f'heap in use after "{a}"')
        level[a] = sorted(r[1] for r in got)[len(got) // 2]
    base = level['fragmented']
    # the program's own shared memory, and nothing of memtrace's ring (a
    # memfd the process maps too: hundreds of KB by now): 4 MiB, within the
    # page or two of the ring's second view that the shim may have touched
    shm = [r[4] for r in rows if r[0] >= marks['fragmented'] + 0.005]
    t.check(shm and all(abs(x - SHARED) <= 8192 for x in shm),
            f"shared memory resident: the program's 4 MiB alone ({sorted(set(shm))})")
    # fragmentation: half the heap freed, resident anonymous memory stays
    frag = between('fragmented', 'touched-1')
    t.check(all(r[2] >= 1.8 * HEAP for r in frag),
            f'anonymous memory stays near 8.3 MB after half the heap is freed ({[r[2] for r in frag]})')
    for k, name in enumerate(('touched-1', 'touched-2', 'touched-3'), 1):
        rise = level[name] - base
        t.check(abs(rise - k * MIB16) <= MIB16 // 20,
                f'resident after "{name}": {k} x 16 MiB above the base, within 5% (got {rise} B)')
    t.check(abs(level['unmapped'] - base) <= MIB16 // 20,
            f'resident after "unmapped": back to the base within 0.8 MiB ({level["unmapped"] - base} B)')

    mem = p.get('memory') or {}
    t.eq(mem.get('heap_bytes'), HEAP, 'memory.heap_bytes (at the last sample)')
    t.check((mem.get('anon_beyond_heap_bytes') or 0) >= 0.8 * HEAP,
            f'memory.anon_beyond_heap_bytes: the freed half and more ({mem.get("anon_beyond_heap_bytes")})')
    t.check(abs((mem.get('peak_rss_bytes') or 0) - (base + 3 * MIB16)) <= MIB16 // 10,
            f'memory.peak_rss_bytes: the base and 48 MiB ({mem.get("peak_rss_bytes")})')
    kinds = [mem.get(f'peak_rss_{k}_bytes') for k in ('anon', 'file', 'shmem')]
    t.check(None not in kinds and sum(kinds) == mem.get('peak_rss_bytes'),
            f'memory.peak_rss_{{anon,file,shmem}}_bytes add up to the peak ({kinds})')
    t.check(kinds[0] is not None and kinds[0] >= 3 * MIB16 + HEAP,
            f'memory.peak_rss_anon_bytes: the 48 MiB and the heap ({kinds[0]})')
    t.check(kinds[2] is not None and abs(kinds[2] - SHARED) <= 8192,
            f"memory.peak_rss_shmem_bytes: the program's 4 MiB ({kinds[2]})")
    ring = mem.get('memtrace_ring_peak_bytes')
    t.check((ring or 0) >= 64 << 10,
            f"memory.memtrace_ring_peak_bytes: what the shim's ring held, not counted ({ring})")
    # (not before the third step; under qemu-user the emulator's own
    # memory, which RSS counts too, can grow past it later)
    t.check(marks['touched-3'] <= (mem.get('peak_rss_s') or 0),
            f'memory.peak_rss_s not before "touched-3" ({mem.get("peak_rss_s")})')
    rc, so, _ = t.run([t.memtrace, 'report', rec])
    t.check('beyond the heap:' in so, 'the text report says memory is held beyond the heap')
    t.check('at the peak: anonymous' in so and ', shared 4.19 MB' in so and "memtrace's own ring" in so,
            'the text report gives the kinds of resident memory, and leaves out the ring')

    # the mapped series beside them: the shared memory, malloc's moves of
    # the program break (glibc's choice of steps; at least the 8 MB of
    # blocks fragment allocates, all made by fragment's calls), then the
    # 48 MiB mapping from its mmap (after "fragmented") to its munmap
    # (before "unmapped")
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'csv', rec,
                        'SELECT s, kind, length, mapped, function FROM mmaps'], what='memtrace query')
    rows = [(float(r[0]), r[1], int(r[2]), int(r[3]), r[4])
            for r in list(csv.reader(io.StringIO(so)))[1:]] if rc == 0 else []
    brk = [r for r in rows if r[1] == 'brk']
    heap = sum(r[2] for r in brk)
    t.check(heap >= 40000 * 200 and {r[4] for r in brk} == {'fragment'},
            f"the break moved by malloc for fragment's blocks, 8 MB or more ({heap} B by {sorted({r[4] for r in brk})})")
    rows = [r for r in rows if r[1] != 'brk']
    t.eq([r[1:] for r in rows], [('mmap', SHARED, SHARED, 'share'),
                                  ('mmap', 3 * MIB16, SHARED + heap + 3 * MIB16, 'main'),
                                  ('munmap', 3 * MIB16, SHARED + heap, 'main')],
         'mapping calls: the shared memory, the mapping and its unmapping, with the mapped memory after each')
    if len(rows) == 3:
        t.check(marks['fragmented'] <= rows[1][0] <= marks['touched-1'],
                f'the mmap between "fragmented" and "touched-1" ({rows[1][0]})')
        t.check(marks['touched-3'] <= rows[2][0] <= marks['unmapped'],
                f'the munmap between "touched-3" and "unmapped" ({rows[2][0]})')
    t.eq((mem.get('peak_mapped_bytes'), mem.get('mapped_bytes'), mem.get('mapped_brk_bytes')),
         (SHARED + heap + 3 * MIB16, SHARED + heap, heap),
         'memory.peak_mapped_bytes, mapped_bytes (at the end), mapped_brk_bytes')
