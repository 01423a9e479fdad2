"""The leak scan at the end of a recording (record, both backends): the
kinds gt-leakkinds gives its blocks (leakkinds.c; memcheck agrees:
leakkinds_valgrind.py) are the kinds the report gives its sites."""
import json
import re

KINDS = ('definite', 'indirect', 'possible', 'reachable')


def expected(out):
    """{kind: [allocations, bytes]} of the blocks gt-leakkinds printed."""
    want = {k: [0, 0] for k in KINDS}
    for m in re.finditer(r'^block [0-9a-f]+ (\d+) (\w+)$', out, re.M):
        want[m.group(2)][0] += 1
        want[m.group(2)][1] += int(m.group(1))
    return want


def made_here(site):
    """gt-leakkinds's own sites: allocated in make_blocks itself
    (pthread_create's TLS block, called from there too, is the runtime's)."""
    return (site.get('frames') or [{}])[0].get('function') == 'make_blocks'


def check(t, prog, backend, argv=('exit',), nblocks=10, own=made_here):
    label = f'record --backend={backend}'
    rec, out = t.record([prog, *argv], opts=[f'--backend={backend}'])
    want = expected(out)
    t.eq(sum(n for n, _ in want.values()), nblocks, f'{label}: the program printed its {nblocks} blocks')
    p = t.only_process(t.report(rec))
    if p is None:
        return
    lk = p.get('leak_kinds') or {}
    t.eq(lk.get('complete'), True, f'{label}: the scan read all it needed ({lk.get("why")!r})')
    t.check(lk.get('scanned_bytes', 0) > 0, f'{label}: the scan read memory')
    got = {k: [0, 0] for k in KINDS}
    for s in p.get('sites', []):
        if not own(s):
            continue
        for k in KINDS:
            got[k][0] += s.get(f'{k}_allocations', 0)
            got[k][1] += s.get(f'{k}_bytes', 0)
        # the kinds split a site's leaked blocks
        t.eq(sum(s.get(f'{k}_bytes', 0) for k in KINDS), s.get('leaked_bytes'),
             f'{label}: a site\'s kinds add up to its leaked bytes')
    for k in KINDS:
        t.eq(got[k], want[k], f'{label}: {k} [allocations, bytes] of the program\'s own sites')
    # the runtime loses nothing for good: the process's definite and
    # indirect are the program's
    for k in ('definite', 'indirect'):
        t.eq([lk.get(f'{k}_allocations'), lk.get(f'{k}_bytes')], want[k], f'{label}: the process\'s {k}')
    views(t, rec, p, label)
    # without the scan, no kinds
    rec2, _ = t.record([prog, *argv], opts=[f'--backend={backend}', '--no-scan'],
                       out=t.path(f'noscan-{backend}.mtrace'))
    p2 = t.only_process(t.report(rec2))
    if p2 is not None:
        t.eq(p2.get('leak_kinds', 'missing'), None, f'{label} --no-scan: leak_kinds is null')
        t.check(all('definite_bytes' not in s for s in p2.get('sites', [])),
                f'{label} --no-scan: no site has kinds')
        rc, _, se = t.run([t.memtrace, 'report', '--leaks=definite', rec2], what='report --leaks=definite')
        t.check(rc == 0 and 'no leak scan classified' in se,
                f'{label} --no-scan: --leaks=definite shows every block and says why ({rc}, {se!r})')


def kind_sum(p, kinds):
    lk = p.get('leak_kinds') or {}
    return (sum(lk.get(f'{k}_allocations', 0) for k in kinds), sum(lk.get(f'{k}_bytes', 0) for k in kinds))


def views(t, rec, p, label):
    """report --leaks: lost first, then possibly lost, then the reachable
    in one line; --leaks=KINDS narrows "leaked" to those kinds."""
    rc, out, se = t.run([t.memtrace, 'report', '--leaks', rec], what='report --leaks')
    t.eq(rc, 0, f'{label}: report --leaks ({se!r})')
    lost, possible, held = kind_sum(p, ('definite', 'indirect')), kind_sum(p, ('possible',)), kind_sum(p, ('reachable',))
    a, b = out.find('DEFINITELY AND INDIRECTLY LOST'), out.find('POSSIBLY LOST')
    c = out.find('STILL REACHABLE:')
    t.check(0 <= a < b < c, f'{label}: report --leaks: lost, then possibly lost, then still reachable ({a}, {b}, {c})')
    trees = re.findall(r'^leaked: ([\d,]+) B in (\d+) allocations?$', out, re.M)
    t.eq([(int(x.replace(',', '')), int(n)) for x, n in trees], [(lost[1], lost[0]), (possible[1], possible[0])],
         f'{label}: report --leaks: the two trees\' totals (lost, possibly lost)')
    m = re.search(r'STILL REACHABLE: (.*) in (\d+) blocks? at (\d+) sites?', out)
    t.eq(m and int(m.group(2)), held[0], f'{label}: report --leaks: the still reachable line\'s blocks')
    for sel, kinds in (('definite', ('definite',)), ('lost', ('definite', 'indirect')),
                       ('possible,reachable', ('possible', 'reachable')), ('all', KINDS)):
        rc, js, se = t.run([t.memtrace, 'report', '--json', f'--leaks={sel}', rec], what=f'report --leaks={sel}')
        q = t.only_process(json.loads(js)) if rc == 0 else None
        tot = (q or {}).get('totals', {})
        want = kind_sum(p, kinds)
        t.eq((tot.get('leaked_allocations'), tot.get('leaked_bytes')), want,
             f'{label}: report --json --leaks={sel}: leaked counts those kinds alone')
        t.eq((q or {}).get('leaked_kinds'), list(kinds), f'{label}: --leaks={sel}: leaked_kinds says which')
        t.eq(sum(s.get('leaked_bytes', 0) for s in (q or {}).get('sites', [])), want[1],
             f'{label}: --leaks={sel}: the sites\' leaked bytes add up')
    # query: each live block's kind, NULL for the freed (the runtime's
    # blocks have a kind too, but are no leaks: not in leak_kinds)
    rc, out, se = t.run([t.memtrace, 'query', '--format', 'json', rec,
                         'SELECT leak_kind AS k, count(*) AS n, sum(size) AS b FROM allocations '
                         'WHERE site_id NOT IN (SELECT id FROM sites WHERE runtime_held_allocations > 0) '
                         'GROUP BY leak_kind'], what='query leak_kind')
    rows = {r['k']: (r['n'], r['b']) for r in json.loads(out)} if rc == 0 else {}
    for k in KINDS:
        t.eq(rows.get(k, (0, 0)), kind_sum(p, (k,)), f'{label}: query: allocations of leak_kind {k!r}')
    rc, _, se = t.run([t.memtrace, 'report', '--leaks=lots', rec], what='report --leaks=lots')
    t.check(rc == 2 and "'lots'" in se, f'{label}: --leaks=lots: a usage error naming the word ({rc}, {se!r})')


def run(t, prog):
    check(t, prog, 'preload')


def run_bpf(t, prog):
    check(t, prog, 'bpf')
