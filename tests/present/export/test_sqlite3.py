"""export-sqlite3: a real program's recording, Debian's sqlite3 running the
workload of tools/sqlite-workload.sh, exported to heaptrack, pprof and
massif and read back by heaptrack_print, `go tool pprof` and ms_print's
input, each consumer's figures against `memtrace report --json` of the same
recording.

Why a real program: Debian's libsqlite3 is stripped, and the allocator's
direct callers (the static sqlite3MemMalloc and sqlite3MemRealloc) have no
name anywhere; its stacks are deep and its sites many.  By construction the
workload inserts ROWS rows, and printf() with the text value it makes costs
three allocations per row: three call sites of exactly ROWS calls, two of
them through sqlite3MemMalloc, one through sqlite3MemRealloc, so two
different unnamed frames of one module.  A consumer that merges the frames
it cannot name into one function (as heaptrack_print and pprof do with
frames that have no function) would put all of them under one entry.

Each consumer's entries are compared with the report's sites grouped by the
name of their first frame (the allocating function, "module+0xoffset"
without a symbol), which is how both consumers group by default.

Needs sqlite3, heaptrack_print and go (tools/setup.sh installs them); a
missing one is a failure that names its package.
"""

import os
import re
import shutil
import subprocess
import sys

import gtlib
import exportlib
from exportlib import ht_bytes

ROWS = 20000
t = gtlib.Case('export-sqlite3')
SQLITE = shutil.which('sqlite3')
HT = shutil.which('heaptrack_print')
GO = shutil.which('go')
t.check(SQLITE, 'sqlite3 is installed (Debian package sqlite3)')
t.check(HT, 'heaptrack_print is installed (Debian package heaptrack)')
t.check(GO, 'go is installed (Debian package golang-go)')
if not SQLITE:
    t.finish()

# ---- the recording and its report
root = os.environ.get('MEMTRACE_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..', '..'))
script = t.path('workload.sql')
subprocess.run(['sh', os.path.join(root, 'tools', 'sqlite-workload.sh'), '-n', str(ROWS), '-o', script],
               check=True)
rec = t.path('sqlite3.mtrace')
with open(script, 'rb') as stdin:
    p = subprocess.run([t.memtrace, 'record', '-o', rec, '--', SQLITE, ':memory:'], stdin=stdin,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
if not t.eq(p.returncode, 0, f'memtrace record sqlite3: exit status ({p.stderr.decode()[-300:]!r})'):
    t.finish()
proc = t.only_process(t.report(rec)) or {'totals': {}, 'sites': []}
tot = proc['totals']


def leaf(site):
    fr = site.get('frames') or [{}]
    return fr[0].get('name') or fr[0].get('function')


# heaptrack_print groups by the allocating frame's function, file and line
by_line = {}
for s in proc['sites']:
    fr = (s.get('frames') or [{}])[0]
    key = (leaf(s), fr.get('file'), fr.get('line') if fr.get('file') else None)
    by_line[key] = by_line.get(key, 0) + s['allocations']
by_leaf = {}
for s in proc['sites']:
    v = by_leaf.setdefault(leaf(s), [0, 0, 0, 0])
    for k, key in enumerate(('allocations', 'allocated_bytes', 'leaked_allocations', 'leaked_bytes')):
        v[k] += s.get(key, 0)
rows_sites = [s for s in proc['sites'] if s['allocations'] == ROWS]
t.eq(len(rows_sites), 3, f'the report: three sites of {ROWS} calls (printf and its text value, per row)')
row_leaves = {leaf(s) for s in rows_sites}
t.eq(len(row_leaves), 2, f'the report: two allocating frames among them, malloc\'s and realloc\'s ({row_leaves})')
t.check(all(name and re.fullmatch(r'libsqlite3\.so\.0\+0x[0-9a-f]+', name) for name in row_leaves),
        f'the report: they have no name in the stripped libsqlite3 ({row_leaves})')


def export(fmt, name):
    out = t.path(name)
    rc, _, se = t.run([t.memtrace, 'export', '-f', fmt, '-o', out, rec], what='memtrace export')
    return out if t.eq(rc, 0, f'export {fmt}: exit status ({se.strip()[-300:]!r})') else None


# ---- heaptrack_print: totals, and its top call sites by allocating function
f = export('heaptrack', 'sqlite3.heaptrack')
if f and HT:
    # its built-in suppressions (glibc's nss) would hide some leaks
    rc, so, se = t.run([HT, '--disable-builtin-suppressions', '-n', '30', f], timeout=120, what='heaptrack_print')
    if t.eq(rc, 0, f'heaptrack_print: exit status ({se.strip()[-300:]!r})'):
        t.check(not re.search(r'failed|out of bounds|corrupt', so + se), f'heaptrack_print complains: {se[-300:]!r}')
        for key, pat, want in (('calls', r'^calls to allocation functions: (\d+) ', str(tot.get('allocations'))),
                               ('peak', r'^peak heap memory consumption: (\S+)$', ht_bytes(tot.get('peak_bytes', -1))),
                               ('leaked', r'^total memory leaked: (\S+)$',
                                ht_bytes(tot.get('leaked_bytes', 0) + tot.get('runtime_held_bytes', 0))),
                               ('temporary', r'^temporary memory allocations: (\d+) ',
                                str(tot.get('temporary_allocations')))):
            m = re.search(pat, so, re.M)
            if key == 'temporary' and m and exportlib.ht_first_row_after_free(f):
                # the file's first row freed after another free: one more
                want = (want, str(tot.get('temporary_allocations') + 1))
                t.check(m.group(1) in want, f'heaptrack_print: temporary = the report\'s {want}, got {m.group(1)}')
                continue
            t.eq(m and m.group(1), want, f'heaptrack_print: {key} = the report\'s')
        sec = so.split('MOST CALLS TO ALLOCATION FUNCTIONS\n', 1)[-1].split('\nPEAK MEMORY CONSUMERS', 1)[0]
        entries = re.findall(r'^(\d+) calls to allocation functions with \S+ peak consumption from\n(.+)\n'
                             r'(?:  at (.+):(\d+)\n)?', sec, re.M)
        t.check(len(entries) >= 10, f'heaptrack_print: its top call sites ({len(entries)})')
        seen = set()
        for n, name, file, line in entries:
            key = (name, file or None, int(line) if line else None)
            t.check(key not in seen, f'heaptrack_print: {key} twice')
            seen.add(key)
            t.eq(int(n), by_line.get(key), f'heaptrack_print: calls from {key} = the report\'s')
        t.check(row_leaves <= {k[0] for k in seen}, 'heaptrack_print: the frames of the per-row sites each '
                'have an entry')

# ---- go tool pprof: every allocating function's figures by sample index
f = export('pprof', 'sqlite3.pb.gz')
if f and GO:
    for d in ('home', 'gocache', 'pprof'):
        os.makedirs(t.path(d), exist_ok=True)
    env = {'HOME': t.path('home'), 'GOCACHE': t.path('gocache'), 'PPROF_TMPDIR': t.path('pprof'),
           'GOPROXY': 'off', 'GOTOOLCHAIN': 'local', 'GOFLAGS': ''}
    for k, index in enumerate(('alloc_objects', 'alloc_space', 'inuse_objects', 'inuse_space')):
        rc, so, se = t.run([GO, 'tool', 'pprof', f'-sample_index={index}', '-unit=B', '-nodecount=100000',
                            '-nodefraction=0', '-top', f], env=env, timeout=120, what='go tool pprof')
        if not t.eq(rc, 0, f'pprof -top -sample_index={index}: exit status ({se.strip()[-300:]!r})'):
            continue
        flat = {}
        for line in so.splitlines():
            m = re.match(r'\s*(\d+)B?\s+[\d.e+-]+%\s+[\d.e+-]+%\s+\d+B?\s+[\d.e+-]+%\s+(\S+)', line)
            if m and int(m.group(1)):
                flat[m.group(2)] = flat.get(m.group(2), 0) + int(m.group(1))
        want = {name: v[k] for name, v in by_leaf.items() if v[k]}
        t.eq(flat, want, f'pprof -top -sample_index={index}: flat by function = the report\'s sites by first frame')

# ---- massif: the peak snapshot and the last (what was never freed)
f = export('massif', 'sqlite3.massif')
if f:
    snaps = open(f).read().split('snapshot=')[1:]
    heaps = [int(re.search(r'^mem_heap_B=(\d+)$', s, re.M).group(1)) for s in snaps]
    peak = [h for s, h in zip(snaps, heaps) if 'heap_tree=peak' in s]
    t.eq(peak, [tot.get('peak_bytes')], 'massif: one peak snapshot, of the report\'s peak')
    t.eq(max(heaps or [0]), tot.get('peak_bytes'), 'massif: no snapshot above the peak')
    t.eq(heaps[-1] if heaps else None, tot.get('leaked_bytes', 0) + tot.get('runtime_held_bytes', 0),
         'massif: the last snapshot holds what was never freed')

t.finish()
