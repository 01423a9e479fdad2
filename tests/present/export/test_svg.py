"""export-svg: the interactive SVG flamegraph of gt-peak, gt-temporary and
gt-cxx, read back by an XML parser (it must be well-formed; each frame's
<title> says its name, figure and share) against the report of the same
recording and the figures peak.c derives, then driven in Chromium
(tests/present/browser/svg.js): a click zooms, Reset Zoom restores, search matches.

gt-cxx has no template in its names, so a small C++ program with templates,
references and an operator< is compiled here to check that such names are
escaped and read back intact."""

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import exportlib

t, progs = exportlib.setup('export-svg')
SRC = os.environ.get('MEMTRACE_SOURCE_ROOT') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
BROWSER = os.path.join(SRC, 'tests', 'browser')
ARTIFACTS = os.path.join(SRC, 'tests', 'artifacts')
NS = '{http://www.w3.org/2000/svg}'
FIGURE = re.compile(r'^([\d,]+) (bytes|allocations) \((\d+\.\d\d)%\)$')


def svg(rec, *args, out=None):
    """(ElementTree root, raw bytes, {name: [frame]}) of the svg export; a
    frame is a dict of its title lines, figure and data attributes."""
    raw = exportlib.export(t, rec, 'svg', *args, out=out)
    if raw is None:
        return None, b'', {}
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as e:
        t.fail(f'svg {args}: not well-formed XML: {e}')
        return None, raw, {}
    frames = {}
    for g in root.iter(NS + 'g'):
        if g.get('class') != 'f':
            continue
        title = g.find(NS + 'title')
        lines = (title.text if title is not None else '').split('\n')
        m = FIGURE.match(lines[1] if len(lines) > 1 else '')
        if not t.check(m, f'svg {args}: frame title {lines!r} lacks "N unit (P%)" on its second line'):
            continue
        f = {'name': lines[0], 'value': int(m.group(1).replace(',', '')), 'unit': m.group(2),
             'pct': m.group(3), 'where': lines[2] if len(lines) > 2 else '',
             'o': int(g.get('data-o')), 'v': int(g.get('data-v')), 'd': int(g.get('data-d')),
             'width': float(g.find(NS + 'rect').get('width'))}
        t.check(f['value'] == f['v'], f'svg {args}: {f["name"]}: title says {f["value"]}, data-v {f["v"]}')
        frames.setdefault(f['name'], []).append(f)
    return root, raw, frames


def one(frames, name, what):
    fs = frames.get(name, [])
    if not t.check(len(fs) == 1, f'{what}: expected one frame {name!r}, found {len(fs)}'):
        return None
    return fs[0]


def check_tree(frames, what):
    """Each frame lies inside one frame of the level below it (its parent),
    and the frames of a level never overlap: the tree is consistent."""
    levels = {}
    for fs in frames.values():
        for f in fs:
            levels.setdefault(f['d'], []).append(f)
    for d, fs in levels.items():
        fs.sort(key=lambda f: f['o'])
        for a, b in zip(fs, fs[1:]):
            t.check(a['o'] + a['v'] <= b['o'], f'{what}: {a["name"]} and {b["name"]} overlap at depth {d}')
        if d == 0:
            continue
        for f in fs:
            parents = [p for p in levels.get(d - 1, []) if p['o'] <= f['o'] and f['o'] + f['v'] <= p['o'] + p['v']]
            t.check(len(parents) == 1, f'{what}: {f["name"]} at depth {d} has {len(parents)} parents')


def root_of(frames, what):
    roots = [f for fs in frames.values() for f in fs if f['d'] == 0]
    if not t.check(len(roots) == 1 and roots[0]['name'] == 'all', f'{what}: one root frame "all"'):
        return None
    return roots[0]


peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
rep = t.report(peak)
proc = t.processes(rep, 1)[0] if rep else {'totals': {}}
tot = proc['totals']

# default weight: bytes allocated
peak_svg = t.path('peak.svg')
root, raw, fr = svg(peak, out=peak_svg)
r = root_of(fr, 'bytes')
if r:
    t.eq(r['value'], tot.get('allocated_bytes'), 'bytes: root frame = allocated bytes of the report')
    t.eq(r['value'], 261999, 'bytes: root frame = the 261999 bytes peak.c allocates')
    t.eq(r['unit'], 'bytes', 'bytes: unit')
    t.eq(r['pct'], '100.00', 'bytes: root share')
    t.eq(root.get('data-total'), str(r['value']), 'bytes: data-total of the svg')
    t.eq(r['width'], 1180.0, 'bytes: root spans the drawing width')
for fn, want in (('many_blocks', 10000), ('site_a', 100000), ('site_b', 50000), ('site_c', 90000),
                 ('site_e', 11999)):
    f = one(fr, fn, 'bytes')
    if f:
        t.eq(f['value'], want, f'bytes: {fn} (from its <title>)')
        t.eq(f['pct'], f'{100 * want / 261999:.2f}', f'bytes: {fn} share')
a = one(fr, 'site_a', 'bytes')
if a:
    t.check(re.search(r'peak\.c:\d+$', a['where']), f'bytes: site_a\'s title gives file:line ({a["where"]!r})')
    t.eq(round(a['width'], 1), round(1180 * 100000 / 261999, 1), 'bytes: site_a\'s width in pixels')
m = one(fr, 'main', 'bytes')
if m and a:
    t.eq(a['d'], m['d'] + 1, 'bytes: site_a sits on main')
    t.check(re.search(r'peak\.c:\d+\u2013\d+$', m['where']), f'bytes: main spans several lines ({m["where"]!r})')
check_tree(fr, 'bytes')
text = raw.decode('utf-8', 'replace')
t.check('<![CDATA[' in text and 'function layout' in text, 'the script is embedded')
t.check(not re.search(r'(href|src)\s*=|@import|url\(', text), 'nothing is loaded from elsewhere')

for weight, key, want, sites in (
        ('leaked', 'leaked_bytes', 54000, {'site_b': 50000, 'many_blocks': 4000, 'site_a': None}),
        ('peak', 'peak_bytes', 156000, {'site_a': 100000, 'site_b': 50000, 'many_blocks': 6000, 'site_c': None}),
        ('allocations', 'allocations', 14, {'many_blocks': 10, 'site_e': 1})):
    _, _, fw = svg(peak, '--weight', weight)
    r = root_of(fw, weight)
    if r:
        t.eq(r['value'], tot.get(key), f'{weight}: root frame = {key} of the report')
        t.eq(r['value'], want, f'{weight}: root frame = peak.c\'s figure')
        t.eq(r['unit'], 'allocations' if weight == 'allocations' else 'bytes', f'{weight}: unit')
    for fn, v in sites.items():
        if v is None:
            t.check(fn not in fw, f'{weight}: {fn} has nothing, so no frame')
        else:
            f = one(fw, fn, weight)
            t.check(f and f['value'] == v, f'{weight}: {fn} = {v} ({f and f["value"]})')
    check_tree(fw, weight)

tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
rt = t.report(tmp)
_, _, fw = svg(tmp, '--weight', 'temporary')
r = root_of(fw, 'temporary')
if r and rt:
    t.eq(r['value'], t.processes(rt, 1)[0]['totals']['temporary_allocations'], 'temporary: root = report')
for fn, want in (('solo', 5), ('inner', 3), ('thr_block', 1)):
    t.eq(sum(f['value'] for f in fw.get(fn, [])), want, f'temporary: {fn}')

# C++: gt-cxx's names, then templates and operators that need escaping
cxx, _ = t.record([progs['cxx']], out=t.path('cxx.mtrace'))
cxx_svg = t.path('cxx.svg')
_, _, fc = svg(cxx, out=cxx_svg)
thr = one(fc, 'gt::throw_it(int)', 'cxx')
exc = one(fc, '__cxa_allocate_exception', 'cxx')
if thr and exc:
    t.eq(exc['value'], 176, 'cxx: the exception object and its header')
    t.eq(exc['d'], thr['d'] + 1, 'cxx: __cxa_allocate_exception sits on gt::throw_it(int)')

# several processes: a frame for each under the root
fork_prog = os.path.join(os.path.dirname(progs['peak']), 'gt-fork')
if t.check(os.access(fork_prog, os.X_OK), f'{fork_prog} is built'):
    fork, out = t.record([fork_prog], opts=['--follow-forks'], out=t.path('fork.mtrace'))
    kv = exportlib.gtlib.parse_kv(out)
    _, _, ff = svg(fork)
    r = root_of(ff, 'fork')
    if r:
        t.eq(r['value'], 6666 + 12109, 'fork: the root sums both processes')
    for who, want in (('parent', 6666), ('child', 12109)):
        f = one(ff, f'gt-fork [{kv.get(who)}]', 'fork')
        t.check(f and f['d'] == 1 and f['value'] == want, f'fork: the {who}\'s frame holds its {want} bytes')
    _, _, fc1 = svg(fork, '--pid', str(kv.get('child')))
    r = root_of(fc1, 'fork --pid')
    t.check(r and r['value'] == 12109 and not any(n.startswith('gt-fork [') for n in fc1),
            'fork --pid CHILD: the child alone, without a process frame')
    check_tree(ff, 'fork')

# a process's frame names it as the report does: gt-peak run through a
# link goes by the link's name, /bin/sh by sh (not dash)
link = exportlib.linked_peak(t, progs)
two, _ = t.record(['/bin/sh', '-c', f'"{link}"; "{progs["temporary"]}"'], opts=['--follow-forks'],
                  out=t.path('two.mtrace'))
rprocs = t.processes(t.report(two))
_, _, ft = svg(two)
for p in rprocs:
    f = one(ft, f'{p["name"]} [{p["pid"]}]', 'link')
    t.check(f and f['d'] == 1 and f['value'] == p['totals']['allocated_bytes'],
            f'{p["name"]} [{p["pid"]}]: a frame under the root with its {p["totals"]["allocated_bytes"]} bytes')
t.check(any(p['name'] == 'peak-link' for p in rprocs), 'the report names gt-peak run as peak-link so')

cxxc = shutil.which(os.environ.get('CXX', 'c++'))
src = t.path('templates.cpp')
with open(src, 'w') as f:
    f.write('''#include <cstdlib>
#include <new>
#define NOINLINE __attribute__((noinline))
static void keep(const void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }
struct A { char c[24]; };
template <typename T, int N> struct Pool {
\tNOINLINE static T *make() { T *p = new T[N]; keep(p); return p; }
};
template <typename T> NOINLINE T *grab(const T &proto) { T *p = new T(proto); keep(p); return p; }
struct Cmp {
\tint v;
\tNOINLINE bool operator<(const Cmp &o) const { void *p = malloc(40); keep(p); return v < o.v; }
};
int main()
{
\tkeep(Pool<A, 3>::make());
\tA a = {};
\tkeep(grab(a));
\tCmp x = {1}, y = {2};
\treturn x < y ? 0 : 1;
}
''')
if t.check(cxxc, 'a C++ compiler (c++ or $CXX) to build the template program'):
    exe = t.path('templates')
    p = subprocess.run([cxxc, '-O1', '-g', '-o', exe, src], capture_output=True, text=True)
    if t.check(p.returncode == 0, f'compiling templates.cpp: {p.stderr[-400:]}'):
        trec, _ = t.record([exe], out=t.path('templates.mtrace'))
        root, raw, ft = svg(trec)
        text = raw.decode('utf-8', 'replace')
        t.check('&lt;' in text and '&amp;' in text, 'templates: < and & are escaped in the file')
        for pat, want in ((r'^Pool<A, ?3>::make\(\)$', 72), (r'^A\* grab<A>\(A const&\)$', 24),
                          (r'^Cmp::operator<\(Cmp const&\) const$', 40)):
            hits = [f for n, fs in ft.items() if re.match(pat, n) for f in fs]
            if t.check(len(hits) == 1, f'templates: one frame matching {pat} (names: {sorted(ft)})'):
                t.eq(hits[0]['value'], want, f'templates: bytes of {hits[0]["name"]}')


# ---- in Chromium -------------------------------------------------------

def browser(script, *args):
    return exportlib.browser(t, script, *args)


os.makedirs(ARTIFACTS, exist_ok=True)
b = browser('svg.js', cxx_svg, '__cxa_allocate_exception', 'gt::throw_it(int)', t.path('cxx.png'))
if b and thr and exc:
    full = b['full']
    t.eq(full, 1180, 'chromium: drawing width')
    t.eq(b['before']['__cxa_allocate_exception'], exc['width'], 'chromium: the child\'s width before the click')
    t.check(exc['width'] < full / 10, f'chromium: the child is narrow before the click ({exc["width"]})')
    t.eq(b['zoomed']['gt::throw_it(int)'], full, 'chromium: the clicked frame spans the width')
    t.eq(b['zoomed']['__cxa_allocate_exception'], full, 'chromium: its child spans the width after the click')
    t.eq(b['zoomed']['main'], full, 'chromium: the ancestors stay, full width')
    t.eq(b['zoomed']['gt::make_ints()'], 0, 'chromium: a frame outside the zoom is hidden')
    t.check(b['unzoomVisible'], 'chromium: Reset Zoom shows when zoomed')
    t.eq(b['reset'], b['before'], 'chromium: Reset Zoom gives back every width')
    t.check(b['details'].startswith('__cxa_allocate_exception') and '176 bytes' in b['details'],
            f'chromium: hover fills the details line ({b["details"]!r})')
    t.eq(b['matched'], f'Matched: {exc["pct"]}% (176 bytes)', 'chromium: search shows the share it matches')
    t.eq(b['highlighted'], 1, 'chromium: search highlights the frame')
    t.eq(b['errors'], [], 'chromium: console errors')
    t.eq(b['requests'], [], 'chromium: requests to the network')

b = browser('svg.js', peak_svg, 'site_b', 'site_a', os.path.join(ARTIFACTS, 'svg-flamegraph.png'))
if b:
    t.eq(b['zoomed']['site_a'], b['full'], 'chromium: site_a spans the width once clicked')
    t.eq(b['zoomed']['site_b'], 0, 'chromium: site_b hides when site_a is zoomed')
    t.eq(b['matched'], 'Matched: 19.08% (50,000 bytes)', 'chromium: search for site_b')
    t.eq(b['errors'], [], 'chromium: console errors (gt-peak)')
    t.check(os.path.getsize(os.path.join(ARTIFACTS, 'svg-flamegraph.png')) > 5000, 'a screenshot was taken')

t.finish()
