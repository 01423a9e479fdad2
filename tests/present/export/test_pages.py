"""export-pages: what the HTML report opens on and how it reads, in
Chromium (tests/present/browser/pages.js), on ground-truth programs whose
figures are known by construction:

- gt-leakkinds (leakkinds.c): the leak scan's kinds in the page's data, and
  the leak-kind selector of the flamegraph and the call sites: it opens on
  definitely + indirectly lost, each kind picked shows its bytes and blocks
  (the ones the program printed), "still held" the reachable ones; a
  recording made with --no-scan has no selector and leaks as before;
- the weight the flamegraph opens on and the table's sort: leaks when there
  are lost blocks (gt-peak's site_b), else the peak (gt-cxx, whose blocks
  are all still reachable), and what the C++ runtime holds said beside the
  leaks (its emergency pool);
- gt-functions: call sites that read alike (helper from wrap, along left
  and along right; rec from rec, at three depths) each say where their
  stacks part;
- gt-grow 3 against gt-grow 10 (export --base): the differential
  flamegraph leaves out the frames that did not change (steady, keep_one);
- gt-peak stripped: the hint that names the file without symbols and how
  to get them; none for gt-peak itself;
- at 1024 pixels wide, the chart's buttons each on one line.

Run as `python3 test_pages.py GT_PEAK GT_LEAKKINDS GT_FUNCTIONS GT_GROW GT_CXX`."""

import json
import os
import re
import sys

import exportlib
import gtlib

t = gtlib.Case('export-pages')
progs = dict(zip(('peak', 'leakkinds', 'functions', 'grow', 'cxx'), sys.argv[1:6]))
KINDS = ('definite', 'indirect', 'possible', 'reachable')


def page(rec, *args, name):
    """(path, embedded data) of the html export of REC."""
    out = t.path(name + '.html')
    raw = exportlib.export(t, rec, 'html', *args, out=out)
    m = raw and re.search(rb'<script type="application/json" id="memtrace-data">\n(.*?)\n</script>', raw, re.S)
    if not t.check(m, f'{name}: the page embeds its data'):
        return out, None
    return out, json.loads(m.group(1))


def browse(html, width=1280, frames=(), kinds=()):
    f = exportlib.browser(t, 'pages.js', html, str(width), ','.join(frames), ','.join(kinds))
    if f:
        t.eq(f['errors'], [], f'{os.path.basename(html)}: no console error')
        t.eq(f['requests'], [], f'{os.path.basename(html)}: no request elsewhere')
    return f


def in_blocks(n, b):
    return f'{b:,} byte{"s" * (b != 1)} in {n:,} block{"s" * (n != 1)}'


# ---- gt-leakkinds: the leak-kind selector ------------------------------------

rec, out = t.record([progs['leakkinds'], 'exit'], out=t.path('leakkinds.mtrace'))
want = {k: [0, 0] for k in KINDS}
for m in re.finditer(r'^block [0-9a-f]+ (\d+) (\w+)$', out, re.M):
    want[m.group(2)][0] += 1
    want[m.group(2)][1] += int(m.group(1))
t.eq(sum(n for n, _ in want.values()), 10, 'gt-leakkinds printed its ten blocks')
t.eq([want['definite'][1], want['indirect'][1] + want['definite'][1]], [want['definite'][1], 580],
     'gt-leakkinds: definitely and indirectly lost, 580 bytes (leakkinds.c)')
rp = t.only_process(t.report(rec)) or {}
lk = rp.get('leak_kinds') or {}
# the process's: the program's own, and the block pthread_create's thread
# storage the runtime keeps (possibly lost, as memcheck says)
got = {k: [lk.get(f'{k}_allocations'), lk.get(f'{k}_bytes')] for k in KINDS}
for k in ('definite', 'indirect', 'reachable'):
    t.eq(got[k], want[k], f'gt-leakkinds report: {k} as the program printed')
html, data = page(rec, name='leakkinds')
if data:
    t.eq(data.get('weight'), None, 'data: no weight named: the page picks one per process')
    p = data['processes'][0]
    plk = p.get('leak_kinds') or {}
    t.eq({k: [plk.get(f'{k}_allocations'), plk.get(f'{k}_bytes')] for k in KINDS}, got,
         'data: leak_kinds, the report\'s')
    fields = p['site_fields']
    for k in KINDS:
        if t.check(f'{k}_bytes' in fields, f'data: the sites have {k}_bytes'):
            t.eq(sum(s[fields.index(f'{k}_bytes')] for s in p['sites']), got[k][1],
                 f'data: the sites\' {k}_bytes add up')
f = browse(html, frames=['make_blocks'], kinds=['definite', 'indirect', 'possible', 'reachable', 'all', 'lost'])
if f:
    first = f['first']
    t.eq([(s['shown'], s['value'], s['disabled']) for s in first['selectors']], [(True, 'lost', False)] * 2,
         'chromium: a leak-kind selector over the flamegraph and over the call sites, on definitely + '
         'indirectly lost')
    lost = [want['definite'][0] + want['indirect'][0], want['definite'][1] + want['indirect'][1]]
    t.eq(first['figures'].get('leaked', {}).get('sub'), in_blocks(*lost) + ': definitely + indirectly lost',
         'chromium: "leaked" is the lost blocks')
    t.eq(first['figures'].get('held', {}).get('sub'), in_blocks(*want['reachable']) +
         ' a pointer still reached at exit: not leaks', 'chromium: the reachable blocks are "still held"')
    t.eq((first['weight'], first['sorted']), ('leaked', ['leaked_bytes']),
         'chromium: lost blocks: the flamegraph opens on them, the call sites sorted by them')
    t.eq(first['total'], f'Leaked bytes: {lost[1]:,} bytes in total', 'chromium: the flamegraph weighs the lost blocks')
    labels = {'definite': 'definitely lost', 'indirect': 'indirectly lost', 'possible': 'possibly lost',
              'reachable': 'still held (reachable)', 'all': 'all not freed', 'lost': 'definitely + indirectly lost'}
    expect = dict(got, all=[rp.get('totals', {}).get('leaked_allocations'), rp.get('totals', {}).get('leaked_bytes')],
                  lost=lost)
    for k, (n, b) in expect.items():
        g = f['kinds'].get(k, {})
        t.eq(g.get('figures', {}).get('leaked', {}).get('sub'), in_blocks(n, b) + ': ' + labels[k],
             f'chromium: kind {k}: the summary\'s figure')
        t.eq(g.get('total'), f'Leaked bytes: {b:,} bytes in total', f'chromium: kind {k}: the flamegraph\'s total')
        t.eq(sum(int(r['leaked'].split(' ')[0].replace(',', '')) for r in g.get('rows', [])), b,
             f'chromium: kind {k}: the call sites\' leaked column adds up')
        t.eq([s['value'] for s in g.get('selectors', [])], [k, k], f'chromium: kind {k}: both selectors show it')
    # a range of the page has no kinds: every block not freed, the
    # selectors off until the whole run is back
    ra, un = f.get('ranged', {}), f.get('unranged', {})
    lk_all = expect['all']
    t.eq([s['disabled'] for s in ra.get('selectors', [])], [True, True], 'chromium: a range: the selectors are off')
    t.eq((ra.get('figures', {}).get('leaked', {}).get('label'), ra.get('figures', {}).get('leaked', {}).get('sub')),
         ('Not freed', in_blocks(*lk_all) + ' (the leak kinds are the whole run\'s: none for a part of it)'),
         'chromium: a range: its blocks not freed, said so')
    t.eq(([s['disabled'] for s in un.get('selectors', [])], un.get('figures', {}).get('leaked', {}).get('sub')),
         ([False, False], in_blocks(*lost) + ': definitely + indirectly lost'),
         'chromium: the whole run again: the selectors on, the kind picked')

norec, _ = t.record([progs['leakkinds'], 'exit'], opts=['--no-scan'], out=t.path('noscan.mtrace'))
html, data = page(norec, name='noscan')
if data:
    t.eq(data['processes'][0].get('leak_kinds', 'missing'), None, 'data --no-scan: leak_kinds null')
f = browse(html)
if f:
    t.eq([s['shown'] for s in f['first']['selectors']], [False, False], 'chromium --no-scan: no leak-kind selector')
    t.eq(f['first']['figures'].get('leaked', {}).get('sub'), in_blocks(11, 2068),
         'chromium --no-scan: leaked is every block not freed (leakkinds.c\'s ten and the thread\'s storage)')
    t.check('held' not in f['first']['figures'], 'chromium --no-scan: no "still held"')

# ---- what the page opens on; runtime-held memory ------------------------

peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
html, _ = page(peak, name='peak')
f = browse(html)
if f:
    t.eq((f['first']['weight'], f['first']['sorted']), ('leaked', ['leaked_bytes']),
         'chromium gt-peak: site_b is lost: the flamegraph opens on leaks, the call sites sorted by them')
    t.eq(f['first']['rows'][0]['name'], 'site_b', 'chromium gt-peak: site_b first')
    t.eq(f['first']['hint'], None, 'chromium gt-peak: every frame named, no hint about symbols')
html, _ = page(peak, '--weight', 'allocations', name='peak-allocations')
f = browse(html)
if f:
    t.eq((f['first']['weight'], f['first']['sorted']), ('allocations', ['allocations']),
         'chromium gt-peak --weight allocations: the weight asked for')

cxx, _ = t.record([progs['cxx']], out=t.path('cxx.mtrace'))
rc = (t.only_process(t.report(cxx)) or {}).get('totals', {})
html, _ = page(cxx, name='cxx')
f = browse(html)
if f:
    t.eq((f['first']['weight'], f['first']['sorted']), ('peak', ['peak_bytes']),
         'chromium gt-cxx: nothing lost (its blocks are reachable): the flamegraph opens on the peak, the call '
         'sites sorted by it')
    note = f['first']['figures'].get('leaked', {}).get('note') or ''
    t.check(rc.get('runtime_held_bytes') == 72704 and
            note.startswith('Not counted: ' + in_blocks(1, 72704) + ' the C/C++ runtime holds until exit'),
            f'chromium gt-cxx: the runtime\'s emergency pool said beside the leaks ({note!r}, '
            f'report {rc.get("runtime_held_bytes")})')

# ---- call sites that read alike ---------------------------------------------

fn, _ = t.record([progs['functions']], out=t.path('functions.mtrace'))
html, _ = page(fn, name='functions')
f = browse(html)
if f:
    rows = f['first']['rows']
    seen = [(r['name'], r['caller'], r['where'], r['via']) for r in rows]
    t.eq(len(set(seen)), len(seen), f'chromium gt-functions: no two call sites read alike ({seen})')
    vias = sorted((r['via'] or '').split(' (')[0] for r in rows if (r['name'], r['caller']) == ('helper', 'from wrap'))
    t.eq(vias, ['via left', 'via right'], 'chromium gt-functions: helper from wrap, along left and along right')
    recs = sorted(r['via'] or '' for r in rows if (r['name'], r['caller']) == ('rec', 'from rec'))
    t.eq([v.split(' (')[0] for v in recs], ['via main', 'via main', 'via rec'],
         f'chromium gt-functions: rec from rec at three depths ({recs})')
    t.check(all(r['via'] is None for r in rows if (r['name'], r['caller']) in (('temp', 'from right'),
                                                                              ('dupper', 'from main'))),
            'chromium gt-functions: a site alone of its kind says nothing more')

# ---- the differential flamegraph --------------------------------------------

g3, _ = t.record([progs['grow'], '3'], out=t.path('grow3.mtrace'))
g10, _ = t.record([progs['grow'], '10'], out=t.path('grow10.mtrace'))
html, _ = page(g10, '--base', g3, '--weight', 'bytes', name='grow-diff')
f = browse(html, frames=['main', 'leak_grows', 'leak_shrinks', 'steady', 'keep_one'])
if f:
    w = f['first']['widths']
    t.check(w.get('main') and w.get('leak_grows') and w.get('leak_shrinks'),
            f'chromium --base: the frames that changed are drawn ({w})')
    t.eq((w.get('steady'), w.get('keep_one')), (None, None),
         'chromium --base: steady and keep_one (the same in both runs) are not drawn')

# ---- frames without symbols ---------------------------------------------------

stripped, names = exportlib.stripped_peak(t, progs)
if stripped:
    html, _ = page(stripped, name='stripped')
    f = browse(html)
    hint = (f or {}).get('first', {}).get('hint') or ''
    t.check(f and t.path('gt-peak') in hint and 'dbgsym' in hint and 'DEBUGINFOD_URLS' in hint,
            f'chromium stripped gt-peak: the hint names the file and how to get its symbols ({hint!r})')

# ---- at 1024 pixels ---------------------------------------------------------

f = browse(t.path('peak.html'), width=1024)
if f:
    t.check(f['chartButtons'] and all(b['lines'] == 1 for b in f['chartButtons']),
            f'chromium at 1024 px: the chart\'s buttons each on one line ({f["chartButtons"]})')

t.finish()
