"""export-json: memtrace's own JSON export of gt-peak, gt-temporary and
gt-cxx: every allocation with its site (and --per-site aggregates), parsed
back and compared with the report of the same recording and with the
figures peak.c, temporary.c and cxx.cpp derive.

gt-peak: 14 allocations, 261999 bytes, 9 frees; leaked b and many[6..9]: 5
blocks, 54000 bytes; many_blocks 10 x 1000, site_a 100000, site_b 50000,
site_c 90000, site_e 11999.  site_a's block lives from about 0.3 s to about
0.6 s.
"""

import json
import os

import exportlib

t, progs = exportlib.setup('export-json')
FIGURES = ('allocations', 'allocated_bytes', 'frees', 'leaked_allocations', 'leaked_bytes', 'peak_bytes',
           'peak_allocations', 'temporary_allocations', 'culled_allocations', 'min_size', 'max_size')


def load(rec, *args):
    out = exportlib.export(t, rec, 'json', *args)
    try:
        doc = json.loads(out or b'{}')
    except ValueError as x:
        t.fail(f'json {args}: not JSON ({x})')
        return {}
    t.eq(doc.get('memtrace_export'), 1, f'json {args}: "memtrace_export": 1')
    return doc


def one_process(doc, what):
    procs = doc.get('processes') or []
    t.eq(len(procs), 1, f'{what}: one process')
    return procs[0] if procs else {'sites': [], 'allocations': [], 'totals': {}}


def leaf(site):
    fr = site.get('frames') or []
    return fr[0].get('function') if fr else None


def by_leaf(proc):
    """{leaf function: [allocations of its sites]}."""
    sites = {s['id']: leaf(s) for s in proc.get('sites', [])}
    out = {}
    for a in proc.get('allocations', []):
        out.setdefault(sites.get(a['site']), []).append(a)
    return out


def check_allocations(proc, rp, what):
    """The allocations against the report process RP."""
    allocs = proc.get('allocations', [])
    tot = rp.get('totals', {})
    t.eq(len(allocs), tot.get('allocations'), f'{what}: one entry per allocation of the report')
    t.eq(sum(a['size'] for a in allocs), tot.get('allocated_bytes'), f'{what}: allocated bytes')
    never = [a for a in allocs if a['freed_s'] is None]
    leaked = [a for a in never if not a['runtime_held']]
    held = [a for a in never if a['runtime_held']]
    t.eq(len(leaked), tot.get('leaked_allocations'), f'{what}: entries never freed, not the runtime\'s = leaked')
    t.eq(sum(a['size'] for a in leaked), tot.get('leaked_bytes'), f'{what}: leaked bytes')
    t.eq((len(held), sum(a['size'] for a in held)),
         (tot.get('runtime_held_allocations'), tot.get('runtime_held_bytes')), f'{what}: runtime-held entries')
    t.check(all('runtime_held' not in a for a in allocs if a['freed_s'] is not None),
            f'{what}: "runtime_held" only on entries never freed')
    t.eq(proc.get('totals'), {k: tot.get(k) for k in proc.get('totals', {})}, f'{what}: totals = the report')
    ids = {s['id'] for s in proc.get('sites', [])}
    t.check(all(a['site'] in ids for a in allocs), f'{what}: every allocation names a listed site')
    freed = [a['freed_s'] for a in allocs if a['freed_s'] is not None]
    t.eq(freed, sorted(freed), f'{what}: entries ordered by free time')
    t.eq(allocs[len(freed):], never, f'{what}: the ones never freed come last')
    t.check(all(a['freed_s'] is None or a['freed_s'] >= a['allocated_s'] for a in allocs),
            f'{what}: nothing is freed before it is allocated')
    t.check(all(a['thread'] > 0 and isinstance(a['allocated_s'], float) for a in allocs), f'{what}: thread, time')
    t.check(all(a['address'] is None or a['address'].startswith('0x') for a in allocs), f'{what}: addresses')
    # per site: the report's figures
    rs = {tuple((f['function'], f['address']) for f in s['frames']): s for s in rp.get('sites', [])}
    for s in proc.get('sites', []):
        r = rs.get(tuple((f['function'], f['address']) for f in s['frames']))
        if not t.check(r is not None, f'{what}: site {s["id"]} ({leaf(s)}) is a site of the report'):
            continue
        t.eq(s['frames'], r['frames'], f'{what}: site {leaf(s)}: frames as the report\'s')
        mine = [a for a in allocs if a['site'] == s['id']]
        lk = [a for a in mine if a['freed_s'] is None and not a['runtime_held']]
        t.eq((len(mine), sum(a['size'] for a in mine), len(lk), sum(a['size'] for a in lk)),
             (r['allocations'], r['allocated_bytes'], r['leaked_allocations'], r['leaked_bytes']),
             f'{what}: site {leaf(s)}: allocations, bytes, leaked, leaked bytes as the report')


# ---- gt-peak ----
peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
rp = t.only_process(t.report(peak)) or {'totals': {}, 'sites': []}
doc = load(peak)
t.eq((doc.get('per_site'), doc.get('filtered')), (False, False), 'gt-peak: not per site, not filtered')
proc = one_process(doc, 'gt-peak')
t.eq((proc.get('pid'), proc.get('exe')), (rp.get('pid'), rp.get('exe')), 'gt-peak: pid and exe')
check_allocations(proc, rp, 'gt-peak')
t.eq(len(proc.get('allocations', [])), 14, 'gt-peak: 14 allocations (peak.c)')
leaked = [a for a in proc.get('allocations', []) if a['freed_s'] is None]
t.eq((len(leaked), sum(a['size'] for a in leaked)), (5, 54000), 'gt-peak: 5 leaked blocks, 54000 bytes (peak.c)')
bl = by_leaf(proc)
for fn, sizes, n_leaked in (('many_blocks', [1000] * 10, 4), ('site_a', [100000], 0), ('site_b', [50000], 1),
                            ('site_c', [90000], 0), ('site_e', [11999], 0)):
    got = bl.get(fn, [])
    t.eq(sorted(a['size'] for a in got), sizes, f'gt-peak: sizes of {fn}')
    t.eq(len([a for a in got if a['freed_s'] is None]), n_leaked, f'gt-peak: leaked blocks of {fn}')
a = (bl.get('site_a') or [None])[0]
if t.check(a is not None, 'gt-peak: site_a\'s block'):
    t.check(0.25 < a['allocated_s'] < 0.5 and 0.25 < a['freed_s'] - a['allocated_s'] < 0.5,
            f'gt-peak: site_a allocated at ~0.3 s, freed ~0.3 s later ({a})')

# --per-site: the report's site figures
doc = load(peak, '--per-site')
t.eq(doc.get('per_site'), True, '--per-site: says so')
proc = one_process(doc, '--per-site')
t.check('allocations' not in proc, '--per-site: no allocation list')
rs = {tuple(f['address'] for f in s['frames']): s for s in rp.get('sites', [])}
t.eq(len(proc.get('sites', [])), len([s for s in rp.get('sites', []) if s['allocations']]),
     '--per-site: as many sites as the report has with allocations')
for s in proc.get('sites', []):
    r = rs.get(tuple(f['address'] for f in s['frames']), {})
    t.eq({k: s.get(k) for k in FIGURES}, {k: r.get(k) for k in FIGURES}, f'--per-site: figures of {leaf(s)}')
    t.eq(s['frames'], r.get('frames'), f'--per-site: frames of {leaf(s)}')
mine = {leaf(s): s for s in proc.get('sites', [])}
t.eq({k: mine.get('many_blocks', {}).get(k) for k in ('allocations', 'leaked_bytes', 'peak_bytes')},
     {'allocations': 10, 'leaked_bytes': 4000, 'peak_bytes': 6000}, '--per-site: many_blocks (peak.c)')

# a filtered export: the blocks of 50000 bytes or more are site_a, site_b and site_c's
doc = load(peak, '--size-min', '50000')
t.eq(doc.get('filtered'), True, '--size-min: filtered')
proc = one_process(doc, '--size-min 50000')
got = sorted((fn, a['size'], a['freed_s'] is None) for fn, v in by_leaf(proc).items() for a in v)
t.eq(got, [('site_a', 100000, False), ('site_b', 50000, True), ('site_c', 90000, False)],
     '--size-min 50000: exactly the blocks of site_a, site_b, site_c')
rf = t.only_process(t.report(peak, ['--size-min', '50000']))
if rf:
    check_allocations(proc, rf, '--size-min 50000')

# ---- gt-temporary: two threads, the C library's own blocks ----
tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
rt = t.only_process(t.report(tmp)) or {'totals': {}, 'sites': []}
proc = one_process(load(tmp), 'gt-temporary')
check_allocations(proc, rt, 'gt-temporary')
bl = by_leaf(proc)
t.eq(sorted(a['size'] for a in bl.get('solo', [])), [10] * 5, 'gt-temporary: solo 5 x 10')
thr = bl.get('thr_block', [])
if t.eq(len(thr), 1, 'gt-temporary: one thr_block'):
    t.check(thr[0]['thread'] != rt.get('pid'), f'gt-temporary: thr_block is allocated by the second thread ({thr})')
t.eq([(a['size'], a['freed_s']) for a in bl.get('main_between', [])], [(70, None)],
     'gt-temporary: main_between leaks 70 bytes')

# ---- gt-cxx: new, new[], aligned new, an exception ----
cxx, _ = t.record([progs['cxx']], out=t.path('cxx.mtrace'))
rc = t.only_process(t.report(cxx)) or {'totals': {}, 'sites': []}
proc = one_process(load(cxx), 'gt-cxx')
check_allocations(proc, rc, 'gt-cxx')
bl = by_leaf(proc)
t.eq(sorted(a['size'] for a in bl.get('gt::make_ints()', [])), [4000], 'gt-cxx: make_ints new int[1000]')
t.eq(sorted(a['size'] for a in bl.get('gt::make_tracked()', [])), [168], 'gt-cxx: make_tracked with its cookie')

# ---- several processes (a shell running gt-peak, then gt-temporary): one
# replay feeds every process's array, the later ones through temporary files
two, _ = t.record(['/bin/sh', '-c', f'"{progs["peak"]}"; "{progs["temporary"]}"'], opts=['--follow-forks'],
                  out=t.path('two.mtrace'))
rep = t.report(two)
doc = load(two)
rprocs, procs = t.processes(rep), doc.get('processes', [])
t.eq([(p.get('pid'), p.get('exe')) for p in procs], [(p['pid'], p['exe']) for p in rprocs],
     'shell running two programs: the report\'s processes, in its order')
t.check(len(procs) >= 3, f'shell running two programs: the shell and both programs ({len(procs)} processes)')
for p, r in zip(procs, rprocs):
    check_allocations(p, r, f'process {os.path.basename(r.get("exe") or "?")}')
for prog, fn, n in (('peak', 'site_b', 1), ('temporary', 'solo', 5)):
    m = [p for p in procs if p.get('exe') == os.path.realpath(progs[prog])]
    if t.eq(len(m), 1, f'one process of gt-{prog}'):
        t.eq(len(by_leaf(m[0]).get(fn, [])), n, f'gt-{prog}\'s process holds its {fn} allocations')
pid = procs[-1]['pid'] if procs else 0
doc = load(two, '--pid', str(pid))
t.eq([p['pid'] for p in doc.get('processes', [])], [pid], '--pid: that process alone')

t.finish()
