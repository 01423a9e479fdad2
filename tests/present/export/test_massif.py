"""export-massif: valgrind massif's out file, read back by ms_print
(valgrind 3.19), against `memtrace report --json` of the same recording and
the figures peak.c derives: the peak snapshot holds 156000 bytes (site_a
100000, site_b 50000, many_blocks 6000, nothing of site_c and site_e), the
last one what leaked (54000: site_b 50000, many_blocks 4000).
"""

import re
import shutil
import subprocess

import exportlib

t, progs = exportlib.setup('export-massif')
peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
MS = shutil.which('ms_print')
t.check(MS, 'ms_print is installed (Debian package valgrind)')


def parse(text, what):
    """(header {desc, cmd, time_unit}, [snapshot]) of a massif file; a
    snapshot is {n, time, heap, tree, nodes: [(depth, bytes, label)]}."""
    head, snaps, cur = {}, [], None
    for line in text.splitlines():
        if line.startswith('#') or not line.strip():
            continue
        m = re.fullmatch(r'(desc|cmd|time_unit): ?(.*)', line)
        if m and not snaps:
            head[m.group(1)] = m.group(2)
            continue
        m = re.fullmatch(r'(snapshot|time|mem_heap_B|mem_heap_extra_B|mem_stacks_B|heap_tree)=(.*)', line)
        if m:
            if m.group(1) == 'snapshot':
                cur = {'n': int(m.group(2)), 'nodes': []}
                snaps.append(cur)
            elif cur is not None:
                cur[m.group(1)] = m.group(2)
            continue
        m = re.fullmatch(r'( *)n(\d+): (\d+) (.*)', line)
        if t.check(m and cur is not None, f'{what}: unexpected line {line!r}') and m:
            cur['nodes'].append((len(m.group(1)), int(m.group(3)), m.group(4)))
    for s in snaps:
        for k in ('time', 'mem_heap_B', 'mem_heap_extra_B', 'mem_stacks_B'):
            t.check(re.fullmatch(r'\d+', s.get(k, '')), f'{what}: snapshot {s["n"]}: {k}={s.get(k)!r}')
        s['time'] = int(s.get('time') or -1)
        s['heap'] = int(s.get('mem_heap_B') or -1)
        s['tree'] = s.get('heap_tree')
    return head, snaps


def leaves(snap):
    """{function: bytes} of the tree's first level (the allocating
    functions): its nodes at depth 1."""
    out = {}
    for depth, b, label in snap['nodes']:
        m = re.fullmatch(r'0x[0-9A-F]+: (\S+) \(.*\)', label)
        if depth == 1 and m:
            out[m.group(1)] = out.get(m.group(1), 0) + b
    return out


def ms_print(path, what):
    if not MS:
        return None
    p = subprocess.run([MS, path], capture_output=True, text=True, timeout=120)
    if not t.eq(p.returncode, 0, f'{what}: exit status of ms_print (stderr {p.stderr[-300:]!r})'):
        return None
    t.eq(p.stderr.strip(), '', f'{what}: ms_print says nothing on stderr')
    return p.stdout


def export(rec, name, *args):
    """The parsed export (header, snapshots, path), checked for what
    ms_print and massif-visualizer rely on."""
    path = t.path(name)
    out = exportlib.export(t, rec, 'massif', *args, out=path)
    if out is None:
        return None
    head, snaps = parse(out.decode(), name)
    t.eq(head.get('time_unit'), 'ms', f'{name}: time_unit')
    t.check(head.get('cmd'), f'{name}: a cmd: line')
    t.eq([s['n'] for s in snaps], list(range(len(snaps))), f'{name}: snapshots numbered 0, 1, ...')
    times = [s['time'] for s in snaps]
    t.eq(times, sorted(times), f'{name}: snapshot times never go back')
    t.check(2 <= len(snaps) <= 110, f'{name}: {len(snaps)} snapshots (a few dozen at most)')
    t.eq(sum(s['tree'] == 'peak' for s in snaps), 1 if any(s['heap'] for s in snaps) else 0,
         f'{name}: one peak snapshot where the heap was ever used')
    for s in snaps:
        if s['tree'] in ('detailed', 'peak'):
            t.check(s['nodes'] and s['nodes'][0][1] <= s['heap'],
                    f'{name}: snapshot {s["n"]}: the tree\'s root is within the heap')
    return head, snaps, path


def proc_totals(rep, pid=None):
    return exportlib.totals_of(t, rep, pid)


def same_as_report(ex, tot, what):
    """The peak snapshot and the last one against the report's totals."""
    if not ex:
        t.fail(f'{what}: no export to compare')
        return
    snaps = ex[1]
    pk = [s for s in snaps if s['tree'] == 'peak']
    t.eq(pk[0]['heap'] if pk else 0, tot.get('peak_bytes'), f'{what}: the peak snapshot is the peak')
    t.eq(max(s['heap'] for s in snaps), tot.get('peak_bytes'), f'{what}: no snapshot above the peak')
    t.eq(snaps[-1]['heap'], tot.get('leaked_bytes'), f'{what}: the last snapshot is what leaked')
    t.eq(snaps[-1]['tree'], 'detailed', f'{what}: the last snapshot has its tree')
    t.check(ms_print(ex[2], what) is not None, f'{what}: ms_print reads it')


# ---- gt-peak
rep = t.report(peak)
tot = proc_totals(rep)
ex = export(peak, 'peak.massif')
same_as_report(ex, tot, 'gt-peak')
if ex:
    head, snaps, path = ex
    t.check(head.get('cmd', '').endswith('gt-peak'), f'cmd: is the program ({head.get("cmd")!r})')
    pk = [s for s in snaps if s['tree'] == 'peak']
    pk = pk[0] if pk else {'heap': None, 'nodes': [], 'n': None, 'time': -1}
    t.eq(pk['heap'], 156000, 'gt-peak: peak snapshot mem_heap_B=156000')
    t.check(pk['time'] >= 290, f'gt-peak: the peak came after the 300 ms sleep ({pk["time"]} ms)')
    t.eq(leaves(pk), {'site_a': 100000, 'site_b': 50000, 'many_blocks': 6000},
         'gt-peak: the peak tree: site_a, site_b, many_blocks, nothing of site_c, site_e')
    t.check(any(re.fullmatch(r'0x[0-9A-F]+: main \(peak\.c:\d+\)', lb) for d, b, lb in pk['nodes'] if d == 2),
            'gt-peak: the allocating functions are called from main (peak.c:LINE)')
    t.check(not any('_start' in lb for d, b, lb in pk['nodes']), 'gt-peak: the start-up below main is left out')
    t.eq(snaps[-1]['heap'], 54000, 'gt-peak: last snapshot: 54000 bytes leaked')
    t.eq(leaves(snaps[-1]), {'site_b': 50000, 'many_blocks': 4000}, 'gt-peak: last snapshot tree: the leaks')
    t.eq(snaps[0]['heap'], 0, 'gt-peak: nothing live at the start')
    t.check(sum(s['tree'] == 'detailed' for s in snaps) >= 2, 'gt-peak: detailed snapshots along the way')
    t.check(len(snaps) >= 40, f'gt-peak: snapshots spread over the 600 ms run ({len(snaps)})')
    # the 300 ms of nothing, then the plateau of 156000 until free(a)
    t.check(all(s['heap'] == 0 for s in snaps if s['time'] < 280), 'gt-peak: empty heap during the sleep')
    held = [s['heap'] for s in snaps if pk['time'] < s['time'] <= pk['time'] + 280]
    t.check(len(held) >= 10 and set(held) == {156000},
            f'gt-peak: 156000 bytes held through the second sleep of 300 ms ({len(held)} snapshots)')

    out = ms_print(path, 'gt-peak') or ''
    # the graph: its top row is the peak (152.3 KB of 1024), drawn with '#'
    graph = [l for l in out.splitlines() if re.match(r'^ *[\d.]*[\^|]', l)]
    t.check(graph and re.match(r'^ *152\.3\^', graph[0]), f'ms_print: the graph goes up to 152.3 KB '
            f'({graph[:1]})')
    t.check(graph and '#' in graph[0], 'ms_print: the peak column (#) reaches the top of the graph')
    m = re.search(r'Detailed snapshots: \[(.*)\]', out)
    t.check(m and f'{pk["n"]} (peak)' in m.group(1), f'ms_print: snapshot {pk["n"]} is the peak '
            f'({m.group(0) if m else None})')
    t.check(re.search(r'\(100,000B\) 0x[0-9A-F]+: site_a \(peak\.c:42\)', out),
            'ms_print: the peak tree shows site_a with 100,000 bytes at peak.c:42')
    t.check(re.search(r'\(50,000B\) 0x[0-9A-F]+: site_b \(peak\.c:48\)', out),
            'ms_print: the peak tree shows site_b with 50,000 bytes at peak.c:48')
    t.check(re.search(r'^ +\d+ +[\d,]+ +156,000 +156,000 +0 +0$', out, re.M),
            'ms_print: the table lists a snapshot of 156,000 bytes')

# ---- gt-temporary: a peak of a few hundred bytes, reached at once
rt = t.report(tmp)
same_as_report(export(tmp, 'temporary.massif'), proc_totals(rt), 'gt-temporary')

# ---- filters: the snapshots hold the matched allocations
for args, want_peak, want_leak in ((['--lifetime', 'only_leaked'], 54000, 54000),
                                   (['--size-min', '50000'], 150000, 50000)):
    r = t.report(peak, args)
    tr = proc_totals(r)
    t.eq((tr.get('peak_bytes'), tr.get('leaked_bytes')), (want_peak, want_leak), f'report {args}')
    same_as_report(export(peak, 'filtered.massif', *args), tr, f'gt-peak {args}')

# nothing matched: an empty process
r = t.report(peak, ['--size-min', '1000000000'])
ex = export(peak, 'empty.massif', '--size-min', '1000000000')
same_as_report(ex, proc_totals(r), 'no allocation matched')
t.check(ex and all(s['heap'] == 0 for s in ex[1]), 'no allocation matched: every snapshot is empty')

# ---- several processes: --pid chooses, the first by default
multi, rm, pids = exportlib.record_multi(t, progs)
for pid in pids:
    same_as_report(export(multi, f'multi-{pid}.massif', '--pid', str(pid)), proc_totals(rm, pid),
                   f'multi-process, --pid {pid}')
if pids:
    same_as_report(export(multi, 'first.massif'), proc_totals(rm, pids[0]), 'multi-process, no --pid: the first')

# ---- a truncated recording: what it holds, as the report reads it
cut = exportlib.truncated_copy(t, peak)
if cut:
    same_as_report(export(cut, 'truncated.massif'), proc_totals(t.report(cut)), 'truncated recording')

exportlib.check_no_temporary_files(t)
t.finish()
