"""export-pprof: gzipped profile.proto of gt-peak, gt-temporary and a
program with an inlined allocating function, read back by `go tool pprof`
(-raw and -top by every sample index); the figures it prints must be the
report's and those peak.c and temporary.c derive.

gt-peak: 14 allocations, 261999 bytes; leaked (in use at the end) 5 blocks,
54000 bytes: many_blocks 10 x 1000 (4 leaked), site_a 100000, site_b 50000
(leaked), site_c 90000, site_e 11999.
"""

import gzip
import os
import re
import shutil

import exportlib

import gtlib

t, progs = exportlib.setup('export-pprof')
TYPES = ['alloc_objects/count', 'alloc_space/bytes', 'inuse_objects/count', 'inuse_space/bytes']
# function -> (alloc_objects, alloc_space, inuse_objects, inuse_space), by construction
OWN = {'many_blocks': (10, 10000, 4, 4000), 'site_a': (1, 100000, 0, 0), 'site_b': (1, 50000, 1, 50000),
       'site_c': (1, 90000, 0, 0), 'site_e': (1, 11999, 0, 0)}

GO = shutil.which('go')
if not GO:
    t.fail('go is not installed (golang-go: tools/setup.sh installs it); pprof exports cannot be read back')
    t.finish()
for d in ('home', 'gocache', 'gopath', 'pprof'):
    os.makedirs(t.path(d), exist_ok=True)
GO_ENV = {'HOME': t.path('home'), 'GOCACHE': t.path('gocache'), 'GOPATH': t.path('gopath'),
          'PPROF_TMPDIR': t.path('pprof'), 'GOPROXY': 'off', 'GOTOOLCHAIN': 'local', 'GOFLAGS': ''}


def pprof(*args):
    """`go tool pprof ARGS`: its standard output, or '' after a failure."""
    rc, so, se = t.run([GO, 'tool', 'pprof', *args], env=GO_ENV, timeout=120, what='go tool pprof')
    if not t.check(rc == 0, f'go tool pprof {" ".join(args)}: exit status {rc}, stderr {se.strip()[-300:]!r}'):
        return ''
    return so


def parse_raw(text):
    """`pprof -raw`: (header lines {key: value}, sample types, samples as
    (values, location ids), {location id: (address, mapping, [(function,
    file:line)], inlined first)}, {mapping id: (filename, build id)})."""
    head, types, samples, locs, maps = {}, [], [], {}, {}
    section, cur = 'head', None
    for line in text.splitlines():
        if line == 'Samples:':
            section = 'types'
        elif line == 'Locations':
            section = 'locations'
        elif line == 'Mappings':
            section = 'mappings'
        elif section == 'head' and ': ' in line:
            k, v = line.split(': ', 1)
            head[k] = v
        elif section == 'types':
            types = line.split()
            section = 'samples'
        elif section == 'samples' and ':' in line and not re.match(r'\s+\w+:\[', line):  # not a label
            vals, ids = line.split(':', 1)
            samples.append(([int(v) for v in vals.split()], [int(i) for i in ids.split()]))
        elif section == 'locations':
            m = re.match(r'\s*(\d+): (0x[0-9a-f]+) M=(\d+) (\S+) (\S*) s=\d+', line)
            if m:
                cur = int(m.group(1))
                locs[cur] = (int(m.group(2), 16), int(m.group(3)), [(m.group(4), m.group(5))])
                continue
            m = re.match(r'\s+(\S+) (\S*) s=\d+', line)
            if m and cur is not None:
                locs[cur][2].append((m.group(1), m.group(2)))
        elif section == 'mappings':
            m = re.match(r'(\d+): \S+ (\S+) (\S*)', line)
            if m:
                maps[int(m.group(1))] = (m.group(2), m.group(3))
    return head, types, samples, locs, maps


def leaf_function(locs, sample):
    ids = sample[1]
    return locs[ids[0]][2][0][0] if ids and ids[0] in locs else None


def export(rec, name, *args):
    out = t.path(name)
    data = exportlib.export(t, rec, 'pprof', *args, out=out)
    if data is not None:
        t.check(data[:2] == b'\x1f\x8b', f'{name}: a gzip file (magic {data[:2]!r})')
        try:
            gzip.decompress(data)
        except OSError as x:
            t.fail(f'{name}: not a valid gzip stream: {x}')
    return out


def top_total(out, index):
    """The total of sample index INDEX that `pprof -top -unit=B` prints, and
    {function: flat value}."""
    so = pprof(f'-sample_index={index}', '-unit=B', '-nodecount=1000', '-nodefraction=0', '-top', out)
    m = re.search(r'of (\d+)B? total', so)
    flat = {}
    for line in so.splitlines():
        f = re.match(r'\s*(\d+)B?\s+[\d.]+%\s+[\d.]+%\s+(\d+)B?\s+[\d.]+%\s+(\S+)', line)
        if f:
            flat[f.group(3)] = int(f.group(1))
    return (int(m.group(1)) if m else None), flat


# ---- gt-peak: every figure, by -raw and by -top ----
peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
proc = t.only_process(t.report(peak)) or {'totals': {}}
tot = proc['totals']
want_totals = [tot.get('allocations'), tot.get('allocated_bytes'), tot.get('leaked_allocations'),
               tot.get('leaked_bytes')]
t.eq(want_totals[0], 14, 'the report of gt-peak: allocations (peak.c)')
out = export(peak, 'peak.pb.gz')

head, types, samples, locs, maps = parse_raw(pprof('-raw', out))
t.eq([ty.replace('[dflt]', '') for ty in types], TYPES, 'pprof -raw: sample types')
t.check(types and types[-1].endswith('[dflt]'), f'inuse_space is the default sample type: {types}')
t.eq(head.get('PeriodType'), 'space bytes', 'pprof -raw: period type')
t.eq(head.get('Period'), '1', 'pprof -raw: period (unsampled)')
t.check('Time' in head and 'Duration' in head, f'pprof -raw: time and duration given ({sorted(head)})')
sums = [sum(s[0][k] for s in samples) for k in range(4)] if samples else None
t.eq(sums, want_totals, 'pprof -raw: sums of the samples = the report (allocations, bytes, leaked, leaked bytes)')
t.eq(len(samples), len([s for s in proc.get('sites', []) if s['allocations']]), 'pprof -raw: a sample per site')
by_leaf = {}
for s in samples:
    fn = leaf_function(locs, s)
    by_leaf[fn] = tuple(a + b for a, b in zip(by_leaf.get(fn, (0, 0, 0, 0)), s[0]))
for fn, want in OWN.items():
    t.eq(by_leaf.get(fn), want, f'pprof -raw: values of {fn}')
for s in samples:
    names = [locs[i][2][-1][0] for i in s[1] if i in locs]
    t.check(len(names) == len(s[1]), f'pprof -raw: every location of a sample is listed ({s[1]})')
    if names and names[0] == 'site_a':
        t.eq(names[1:2], ['main'], 'site_a: its caller (leaf first) is main')
        t.eq(locs[s[1][0]][2][0][1].rsplit('/', 1)[-1], f'peak.c:{gtlib.marker_line("peak.c", "site:site_a")}',
             'site_a: its file and line')
real = os.path.realpath(progs['peak'])
mine = [m for m in maps.values() if m[0] == real]
t.eq(len(mine), 1, f'a mapping for gt-peak itself ({list(maps.values())})')
if mine:
    t.eq(mine[0][1], exportlib.build_id(real), 'the mapping of gt-peak carries its build-id')
t.check(all(loc[1] in maps for loc in locs.values()), 'every location of gt-peak lies in a mapping')

for k, index in enumerate(('alloc_objects', 'alloc_space', 'inuse_objects', 'inuse_space')):
    total, flat = top_total(out, index)
    t.eq(total, want_totals[k], f'pprof -top -sample_index={index}: total = the report')
    for fn, want in OWN.items():
        t.eq(flat.get(fn, 0), want[k], f'pprof -top -sample_index={index}: flat of {fn}')
# the default sample type is inuse_space
so = pprof('-top', '-unit=B', out)
t.check(f'of {want_totals[3]}B total' in so, f'pprof -top without -sample_index shows inuse_space: {so[:300]!r}')

# ---- filters apply: --size-min 50000 keeps site_a, site_b and site_c ----
out = export(peak, 'big.pb.gz', '--size-min', '50000')
_, _, samples, locs, _ = parse_raw(pprof('-raw', out))
got = {leaf_function(locs, s): tuple(s[0]) for s in samples}
t.eq(got, {fn: OWN[fn] for fn in ('site_a', 'site_b', 'site_c')}, '--size-min 50000: the three big sites alone')

# ---- gt-temporary: two threads and the C library's own allocations ----
tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
tp = t.only_process(t.report(tmp)) or {'totals': {}}
out = export(tmp, 'temporary.pb.gz')
for k, (index, key) in enumerate((('alloc_objects', 'allocations'), ('alloc_space', 'allocated_bytes'),
                                  ('inuse_objects', 'leaked_allocations'), ('inuse_space', 'leaked_bytes'))):
    total, flat = top_total(out, index)
    t.eq(total, tp['totals'].get(key), f'gt-temporary: pprof -top -sample_index={index}: total = the report')
    if index == 'alloc_space':
        for fn, want in (('solo', 50), ('inner', 90), ('thr_block', 60), ('main_between', 70)):
            t.eq(flat.get(fn), want, f'gt-temporary: allocated bytes of {fn}')

# ---- several processes in one profile, each sample labelled with its pid ----
two, _ = t.record(['/bin/sh', '-c', f'"{progs["peak"]}"; "{progs["temporary"]}"'], opts=['--follow-forks'],
                  out=t.path('two.mtrace'))
rprocs = t.processes(t.report(two))
out = export(two, 'two.pb.gz')
total, flat = top_total(out, 'alloc_space')
t.eq(total, sum(p['totals']['allocated_bytes'] for p in rprocs), 'several processes: allocated bytes of them all')
t.eq((flat.get('site_a'), flat.get('solo')), (100000, 50), 'several processes: functions of both programs')
for p in rprocs:
    so = pprof('-sample_index=alloc_objects', f'-tagfocus=pid={p["pid"]}', '-nodefraction=0', '-top', out)
    m = re.search(r'accounting for (\d+),', so)
    t.eq(int(m.group(1)) if m else None, p['totals']['allocations'], f'-tagfocus=pid={p["pid"]}: its allocations')

# ---- an exec chain: the programs share one pid; each sample also carries
# its process's name, and the profile is named after the main one (pprof's
# "File:" is the first mapping's; sh's came first)
chain, _ = t.record(['/bin/sh', '-c', f'exec "{progs["peak"]}"'], out=t.path('chain.mtrace'))
cprocs = t.processes(t.report(chain))
t.eq(sorted(p['name'] for p in cprocs), ['gt-peak', 'sh'], 'exec chain: the report has sh, then gt-peak')
t.eq(len({p['pid'] for p in cprocs}), 1, 'exec chain: one pid')
out = export(chain, 'chain.pb.gz')
so = pprof('-sample_index=alloc_objects', '-top', out)
t.check(re.search(r'^File: gt-peak$', so, re.M), f'exec chain: pprof names the profile after gt-peak: {so[:200]!r}')
for p in cprocs:
    so = pprof('-sample_index=alloc_objects', f'-tagfocus=process={p["name"]}', '-nodefraction=0', '-top', out)
    m = re.search(r'accounting for (\d+),', so)
    t.eq(int(m.group(1)) if m else None, p['totals']['allocations'],
         f'exec chain: -tagfocus=process={p["name"]}: its allocations')
    if p['name'] == 'gt-peak':
        t.eq(p['totals']['allocations'], 14, 'exec chain: gt-peak\'s 14 allocations (peak.c)')

# ---- a binary without symbols: each frame without a name is a function of
# its own, gt-peak+0xOFFSET as in the report (pprof drew them all as one
# "[gt-peak]" node of 14 allocations)
srec, snames = exportlib.stripped_peak(t, progs)
out = export(srec, 'stripped.pb.gz') if srec else None
for k, index in enumerate(('alloc_objects', 'alloc_space', 'inuse_objects', 'inuse_space')):
    if not out or not snames:
        break
    total, flat = top_total(out, index)
    for fn, want in OWN.items():
        t.eq(flat.get(snames.get(fn), 0), want[k], f'stripped gt-peak: -sample_index={index}: flat of '
             f'{snames.get(fn)} (in {fn})')

# ---- an inlined allocating function: one location, its lines inlined first ----
src = t.path('inl.c')
with open(src, 'w') as f:
    f.write('#include <stdlib.h>\n'
            'void *keep;\n'
            'static inline __attribute__((always_inline)) void *grab(size_t n)\n'
            '{\n'
            '\treturn malloc(n); /* line 5 */\n'
            '}\n'
            '__attribute__((noinline)) void outer(void)\n'
            '{\n'
            '\tkeep = grab(4242); /* line 9 */\n'
            '\t__asm__ volatile("" ::: "memory");\n'
            '}\n'
            'int main(void)\n'
            '{\n'
            '\touter();\n'
            '\treturn 0;\n'
            '}\n')
cc = os.environ.get('CC') or 'cc'
binary = t.path('inl')
rc, _, se = t.run([cc, '-O2', '-g', '-o', binary, src], what=cc)
if t.check(rc == 0, f'{cc} builds the inlining program: {se.strip()[-300:]!r}'):
    rec, _ = t.record([binary], out=t.path('inl.mtrace'))
    out = export(rec, 'inl.pb.gz')
    _, _, samples, locs, _ = parse_raw(pprof('-raw', out))
    mine = [s for s in samples if s[0][1] == 4242]
    if t.eq(len(mine), 1, 'inlining program: one sample of 4242 bytes'):
        lines = locs.get(mine[0][1][0], (0, 0, []))[2]
        t.eq([(fn, fl.rsplit('/', 1)[-1]) for fn, fl in lines], [('grab', 'inl.c:5'), ('outer', 'inl.c:9')],
             'inlining program: the leaf location holds grab (inlined) then outer')
        callers = [locs[i][2][-1][0] for i in mine[0][1][1:2] if i in locs]
        t.eq(callers, ['main'], 'inlining program: the next location is main')

t.finish()
