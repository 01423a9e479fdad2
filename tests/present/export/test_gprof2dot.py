"""export-gprof2dot: memtrail's gprof2dot JSON for gt-peak and gt-temporary
by several --weight.  gprof2dot's JSON reader takes a function's own cost
from the events whose callchain starts with it (callee first) and the total
from every event; those figures must be the report's and the ground truth's.
The document must also keep to gprof2dot's schema.json (no other keys, a
non-empty callchain of function indices, numeric costs).  Debian packages no
gprof2dot; where one is on PATH the DOT it draws is checked too.

gt-peak: many_blocks 10 x 1000 (4 leaked), site_a 100000, site_b 50000
(leaked), site_c 90000, site_e 11999.
"""

import json
import shutil

import exportlib

t, progs = exportlib.setup('export-gprof2dot')


def load(rec, *args, out=None):
    data = exportlib.export(t, rec, 'gprof2dot', *args, out=out)
    try:
        doc = json.loads(data or b'{}')
    except ValueError as x:
        t.fail(f'gprof2dot {args}: not JSON ({x})')
        return {}
    check_schema(doc, f'gprof2dot {" ".join(args)}')
    return doc


def check_schema(doc, what):
    t.eq(sorted(doc), ['costs', 'events', 'functions', 'version'], f'{what}: top-level keys')
    t.eq(doc.get('version'), 0, f'{what}: version')
    costs = doc.get('costs') or []
    t.check(len(costs) == 1 and set(costs[0]) <= {'description', 'unit'} and
            all(isinstance(v, str) for v in costs[0].values()), f'{what}: one cost {costs}')
    fns = doc.get('functions') or []
    t.check(all(isinstance(f.get('name'), str) and set(f) <= {'name', 'module', 'process'} and
                all(isinstance(v, str) for v in f.values()) for f in fns), f'{what}: functions')
    for e in doc.get('events') or []:
        ok = (set(e) == {'callchain', 'cost'} and e['callchain'] and
              all(isinstance(i, int) and 0 <= i < len(fns) for i in e['callchain']) and
              len(e['cost']) == 1 and isinstance(e['cost'][0], int) and e['cost'][0] > 0)
        if not t.check(ok, f'{what}: event {e}'):
            break


def self_costs(doc):
    """{function name: cost of the events it is the callee of}."""
    fns = doc.get('functions') or []
    out = {}
    for e in doc.get('events') or []:
        name = fns[e['callchain'][0]]['name']
        out[name] = out.get(name, 0) + e['cost'][0]
    return out


def total(doc):
    return sum(e['cost'][0] for e in doc.get('events') or [])


peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
proc = t.only_process(t.report(peak)) or {'totals': {}}
tot = proc['totals']

out = t.path('peak.json')
doc = load(peak, out=out)
t.eq(doc.get('costs'), [{'description': 'Allocated memory', 'unit': 'bytes'}], 'default weight: allocated bytes')
t.eq(total(doc), tot.get('allocated_bytes'), 'default weight: total = allocated bytes of the report')
own = self_costs(doc)
for fn, want in (('many_blocks', 10000), ('site_a', 100000), ('site_b', 50000), ('site_c', 90000),
                 ('site_e', 11999)):
    t.eq(own.get(fn), want, f'default weight: {fn}')
fns = doc.get('functions') or []
chains = [[fns[i]['name'] for i in e['callchain']] for e in doc.get('events') or []]
t.check(any(c[:2] == ['site_a', 'main'] for c in chains), f'callchains run callee to caller ({chains})')
t.eq(len([f for f in fns if f['name'] == 'main']), 1, 'main is one function')
t.check(all(f.get('module') for f in fns), 'every function names its module')
t.eq({f['module'] for f in fns if f['name'] in ('site_a', 'main')}, {'gt-peak'}, 'module of site_a and main')

doc = load(peak, '--weight', 'leaked')
t.eq(total(doc), tot.get('leaked_bytes'), 'weight leaked: total = leaked bytes of the report')
t.eq(self_costs(doc), {'many_blocks': 4000, 'site_b': 50000}, 'weight leaked: by function')

doc = load(peak, '--weight', 'peak')
t.eq(total(doc), tot.get('peak_bytes'), 'weight peak: total = peak of the report (memtrail\'s maximum)')
t.eq(self_costs(doc), {'many_blocks': 6000, 'site_a': 100000, 'site_b': 50000}, 'weight peak: by function')

doc = load(peak, '--weight', 'allocations')
t.eq(doc.get('costs'), [{'description': 'Allocations', 'unit': 'allocations'}], 'weight allocations: its cost')
t.eq(total(doc), tot.get('allocations'), 'weight allocations: total')
t.eq(self_costs(doc).get('many_blocks'), 10, 'weight allocations: many_blocks')

doc = load(peak, '--size-min', '50000')
t.eq(self_costs(doc), {'site_a': 100000, 'site_b': 50000, 'site_c': 90000}, '--size-min 50000: the big sites')

tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
tp = t.only_process(t.report(tmp)) or {'totals': {}}
doc = load(tmp, '--weight', 'temporary')
t.eq(total(doc), tp['totals'].get('temporary_allocations'), 'gt-temporary, weight temporary: total')
t.eq(self_costs(doc), {'solo': 5, 'inner': 3, 'thr_block': 1}, 'gt-temporary, weight temporary: by function')

# several processes: each function is labelled with its process, by the
# name the report gives it (a program run through a link goes by the link's)
link = exportlib.linked_peak(t, progs)
two, _ = t.record(['/bin/sh', '-c', f'"{link}"; "{progs["temporary"]}"'], opts=['--follow-forks'],
                  out=t.path('two.mtrace'))
rprocs = t.processes(t.report(two))
labels = {f'{p["name"]} (pid {p["pid"]})' for p in rprocs}
t.check(any(p['name'] == 'peak-link' for p in rprocs), f'gt-peak run as peak-link: the report\'s name ({labels})')
doc = load(two)
fns = doc.get('functions') or []
t.check({f.get('process') for f in fns} <= labels, f'several processes: labels {sorted({f.get("process") for f in fns})} '
        f'are the report\'s {sorted(labels)}')
t.eq({f.get('process') for f in fns if f['name'] == 'site_a'},
     {f'{p["name"]} (pid {p["pid"]})' for p in rprocs if p['name'] == 'peak-link'},
     'several processes: site_a is labelled peak-link (pid N)')

# gprof2dot itself, where installed (pip's gprof2dot; not packaged by Debian)
g2d = shutil.which('gprof2dot')
if g2d:
    rc, so, se = t.run([g2d, '-f', 'json', '-n', '0', '-e', '0', out], what='gprof2dot')
    if t.check(rc == 0, f'gprof2dot -f json: exit status {rc}, {se.strip()[-300:]!r}'):
        for fn in ('many_blocks', 'site_a', 'site_b', 'site_c', 'site_e', 'main'):
            t.check(f'\\n{fn}\\n' in so, f'gprof2dot draws a node for {fn}')
        t.check('\\nsite_a\\n38.17%' in so, 'gprof2dot: site_a has 38.17% of the allocated bytes')
else:
    t.note('gprof2dot is not installed (Debian does not package it): its DOT output is not checked')

t.finish()
