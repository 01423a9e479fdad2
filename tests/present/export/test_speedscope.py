"""export-speedscope: speedscope's JSON file format for gt-peak and
gt-temporary, by several --weight, read back as speedscope reads it
(shared frames, sampled profiles of stacks outermost first and weights);
the sums and per-function figures must be the report's and those peak.c and
temporary.c derive.

gt-peak: many_blocks 10 x 1000 (4 leaked; 6000 live at the peak), site_a
100000 (live at the peak), site_b 50000 (leaked, live at the peak), site_c
90000, site_e 11999.
"""

import json

import exportlib

t, progs = exportlib.setup('export-speedscope')
SCHEMA = 'https://www.speedscope.app/file-format-schema.json'


def load(rec, *args):
    out = exportlib.export(t, rec, 'speedscope', *args)
    try:
        return json.loads(out or b'{}')
    except ValueError as x:
        t.fail(f'speedscope {args}: not JSON ({x})')
        return {}


def check_file(doc, what):
    """The file-format's required keys and types; returns the frames."""
    t.eq(doc.get('$schema'), SCHEMA, f'{what}: $schema')
    frames = doc.get('shared', {}).get('frames')
    if not t.check(isinstance(frames, list) and frames, f'{what}: shared.frames is a non-empty list'):
        return []
    for fr in frames:
        t.check(isinstance(fr.get('name'), str) and set(fr) <= {'name', 'file', 'line', 'col'},
                f'{what}: frame {fr} has a name and only name/file/line/col')
    t.check(isinstance(doc.get('profiles'), list) and doc['profiles'], f'{what}: profiles is a non-empty list')
    t.check(0 <= doc.get('activeProfileIndex', 0) < len(doc.get('profiles') or [1]), f'{what}: activeProfileIndex')
    for p in doc.get('profiles', []):
        t.eq(p.get('type'), 'sampled', f'{what}: profile type')
        t.check(p.get('unit') in ('bytes', 'none'), f'{what}: profile unit {p.get("unit")!r}')
        t.eq(len(p.get('samples', [])), len(p.get('weights', [])), f'{what}: as many weights as samples')
        t.check(all(isinstance(i, int) and 0 <= i < len(frames) for s in p.get('samples', []) for i in s),
                f'{what}: samples are frame indices')
        t.check(all(s for s in p.get('samples', [])), f'{what}: no empty stack')
        t.eq(p.get('startValue'), 0, f'{what}: startValue')
        t.eq(p.get('endValue'), sum(p.get('weights', [])), f'{what}: endValue = the sum of the weights')
    return frames


def leaf_weights(frames, prof):
    """{leaf function: weight}; the leaf is the last frame (root first)."""
    out = {}
    for s, w in zip(prof.get('samples', []), prof.get('weights', [])):
        name = frames[s[-1]]['name']
        out[name] = out.get(name, 0) + w
    return out


peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
proc = t.only_process(t.report(peak)) or {'totals': {}}
tot = proc['totals']

# weight bytes (the default): allocated bytes, then allocations
doc = load(peak)
frames = check_file(doc, 'default weight')
profs = doc.get('profiles', [])
if t.eq(len(profs), 2, 'default weight: two profiles (bytes, allocations)'):
    t.eq(doc.get('activeProfileIndex'), 0, 'the --weight profile is shown first')
    t.eq(profs[0]['unit'], 'bytes', 'profile 0 is in bytes')
    t.eq(profs[1]['unit'], 'none', 'profile 1 counts allocations')
    t.eq(sum(profs[0]['weights']), tot.get('allocated_bytes'), 'bytes profile: sum = allocated bytes of the report')
    t.eq(sum(profs[1]['weights']), tot.get('allocations'), 'allocations profile: sum = allocations of the report')
    lw = leaf_weights(frames, profs[0])
    for fn, want in (('many_blocks', 10000), ('site_a', 100000), ('site_b', 50000), ('site_c', 90000),
                     ('site_e', 11999)):
        t.eq(lw.get(fn), want, f'bytes profile: {fn}')
    lw = leaf_weights(frames, profs[1])
    t.eq((lw.get('many_blocks'), lw.get('site_a')), (10, 1), 'allocations profile: many_blocks, site_a')
    stacks = [[frames[i]['name'] for i in s] for s in profs[0]['samples']]
    t.check(any(s[-2:] == ['main', 'site_a'] for s in stacks), f'stacks run root to leaf: main then site_a ({stacks})')
    t.check(all(s[0] == '_start' for s in stacks), 'every stack starts at _start')
names = [f['name'] for f in frames]
t.eq(names.count('main'), 1, 'one frame per function: main called from five lines is one frame')
site_a = [f for f in frames if f['name'] == 'site_a']
if t.eq(len(site_a), 1, 'a frame for site_a'):
    t.check(site_a[0].get('file', '').endswith('peak.c'), f'site_a: its file ({site_a[0]})')
    t.eq(site_a[0].get('line'), exportlib.gtlib.marker_line('peak.c', 'site:site_a'), 'site_a: its line')

# weight leaked: leaked bytes, then leaked allocations
doc = load(peak, '--weight', 'leaked')
frames = check_file(doc, 'weight leaked')
profs = doc.get('profiles', [])
if t.eq(len(profs), 2, 'weight leaked: two profiles'):
    t.eq(sum(profs[0]['weights']), tot.get('leaked_bytes'), 'weight leaked: sum = leaked bytes of the report')
    t.eq(sum(profs[1]['weights']), tot.get('leaked_allocations'), 'weight leaked: count = leaked allocations')
    t.eq(leaf_weights(frames, profs[0]), {'many_blocks': 4000, 'site_b': 50000}, 'weight leaked: by function')
    t.eq(leaf_weights(frames, profs[1]), {'many_blocks': 4, 'site_b': 1}, 'weight leaked: counts by function')

# weight peak: what each site had live at the peak
doc = load(peak, '--weight', 'peak')
frames = check_file(doc, 'weight peak')
profs = doc.get('profiles', [])
if t.eq(len(profs), 2, 'weight peak: two profiles'):
    t.eq(sum(profs[0]['weights']), tot.get('peak_bytes'), 'weight peak: sum = peak bytes of the report')
    t.eq(sum(profs[1]['weights']), tot.get('peak_allocations'), 'weight peak: count = blocks at the peak')
    t.eq(leaf_weights(frames, profs[0]), {'many_blocks': 6000, 'site_a': 100000, 'site_b': 50000},
         'weight peak: by function')

# weight allocations: the count first, then the bytes
doc = load(peak, '--weight', 'allocations')
profs = doc.get('profiles', [])
if t.eq(len(profs), 2, 'weight allocations: two profiles'):
    t.eq((profs[0]['unit'], sum(profs[0]['weights'])), ('none', tot.get('allocations')),
         'weight allocations: the allocations profile first')

# filters apply
doc = load(peak, '--size-min', '50000')
frames = check_file(doc, '--size-min 50000')
if doc.get('profiles'):
    t.eq(leaf_weights(frames, doc['profiles'][0]), {'site_a': 100000, 'site_b': 50000, 'site_c': 90000},
         '--size-min 50000: the three big sites alone')

# gt-temporary: weight temporary has one profile (no byte figure of temporaries)
tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
tp = t.only_process(t.report(tmp)) or {'totals': {}}
doc = load(tmp, '--weight', 'temporary')
frames = check_file(doc, 'weight temporary')
profs = doc.get('profiles', [])
if t.eq(len(profs), 1, 'weight temporary: one profile'):
    t.eq(sum(profs[0]['weights']), tp['totals'].get('temporary_allocations'), 'weight temporary: sum = report')
    t.eq(leaf_weights(frames, profs[0]), {'solo': 5, 'inner': 3, 'thr_block': 1}, 'weight temporary: by function')
doc = load(tmp)
if len(doc.get('profiles', [])) == 2:
    t.eq(sum(doc['profiles'][0]['weights']), tp['totals'].get('allocated_bytes'), 'gt-temporary: allocated bytes')
else:
    t.fail('gt-temporary: two profiles expected')

# a program run through a link goes by the link's name, as in the report
# (Debian's redis-server is a link to redis-check-rdb)
link = exportlib.linked_peak(t, progs)
rec, _ = t.record([link], out=t.path('link.mtrace'))
lp = t.only_process(t.report(rec)) or {}
t.eq(lp.get('name'), 'peak-link', 'gt-peak run as peak-link: the report\'s name')
doc = load(rec)
t.eq([p.get('name') for p in doc.get('profiles', [])],
     [f'peak-link (pid {lp.get("pid")}): allocated bytes', f'peak-link (pid {lp.get("pid")}): allocations'],
     'gt-peak run as peak-link: the profiles are named after the link')

t.finish()
