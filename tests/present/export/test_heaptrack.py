"""export-heaptrack: heaptrack's data file, read back by heaptrack_print
(heaptrack 1.4), whose figures must be memtrace's own (`memtrace report
--json` of the same recording, through the same filters) and the ones
peak.c and temporary.c derive.

heaptrack_print prints bytes in units of 1000 with two decimals (156000 ->
"156.00K", below 1000 plain "418B"): expected figures are formatted the same
way and compared as text.  `-l FILE` would take FILE as the value of -l:
leaks are asked for with --print-leaks=1.

Temporary allocations: heaptrack counts a free that directly follows its
allocation in the file; memtrace, one that is the thread's next event.
They differ where another thread allocated in between (thr_block in
temporary.c, when the stream holds the events in that order), which the
file cannot express; the test works out from the file whether that
happened and expects heaptrack's count to be short by exactly that.
"""

import gzip
import os
import re
import shutil
import subprocess

import exportlib
from exportlib import ht_bytes

t, progs = exportlib.setup('export-heaptrack')
peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))
HT = shutil.which('heaptrack_print')
t.check(HT, 'heaptrack_print is installed (Debian package heaptrack)')


def sections(text):
    """{section title: [(label line, function)]} of heaptrack_print's
    output: each entry is a label line and, on the next line, the function
    of the call site (merged by function)."""
    out, cur, lines = {}, None, text.splitlines()
    for i, line in enumerate(lines):
        if line in ('MOST CALLS TO ALLOCATION FUNCTIONS', 'PEAK MEMORY CONSUMERS', 'MEMORY LEAKS',
                    'MOST TEMPORARY ALLOCATIONS'):
            cur = out.setdefault(line, [])
        elif line.startswith('total runtime:'):
            cur = None
        elif cur is not None and line.endswith(' from') and i + 1 < len(lines):
            cur.append((line, lines[i + 1]))
    return out


def entries(secs, title, pattern):
    """{function: match groups} of the entries of section TITLE."""
    out = {}
    for label, fn in secs.get(title, []):
        m = re.fullmatch(pattern, label)
        if t.check(m, f'{title}: unexpected entry {label!r}') and m:
            t.check(fn not in out, f'{title}: {fn} twice')
            out[fn] = m.groups()
    return out


def ht_print(path, what, leaks=False):
    """heaptrack_print's summary and sections of PATH, or None."""
    if not HT:
        return None
    argv = [HT] + (['--print-leaks=1'] if leaks else []) + [path]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if not t.eq(p.returncode, 0, f'{what}: exit status of heaptrack_print (stderr {p.stderr[-300:]!r})'):
        return None
    t.check(not re.search(r'failed|out of bounds|corrupt', p.stderr + p.stdout),
            f'{what}: heaptrack_print complains: {(p.stderr + p.stdout)[-300:]!r}')
    s = {'text': p.stdout, 'sections': sections(p.stdout)}
    for key, pat in (('calls', r'^calls to allocation functions: (\d+) '),
                     ('temporary', r'^temporary memory allocations: (\d+) '),
                     ('peak', r'^peak heap memory consumption: (\S+)$'),
                     ('leaked', r'^total memory leaked: (\S+)$'),
                     ('runtime', r'^total runtime: ([\d.]+)s\.$')):
        m = re.search(pat, p.stdout, re.M)
        if t.check(m, f'{what}: heaptrack_print printed no {key!r} line'):
            s[key] = m.group(1)
    for key in ('calls', 'temporary'):
        if key in s:
            s[key] = int(s[key])
    t.check('suppressed leaks:' not in p.stdout, f'{what}: heaptrack suppressed some leaks')
    return s


def follows(lines, size_hex):
    """Whether a '-' of a row of SIZE_HEX bytes (an 'a SIZE TRACE' line)
    directly follows a '+' of such a row: a temporary to heaptrack."""
    rows = [l for l in lines if l.startswith('a ')]
    sized = {format(i, 'x') for i, l in enumerate(rows) if l.split()[1] == size_hex}
    ev = [l for l in lines if l[:2] in ('+ ', '- ')]
    return any(ev[i][0] == '+' and ev[i][2:] in sized and ev[i + 1][0] == '-' and
               ev[i + 1][2:] in sized for i in range(len(ev) - 1))


def export(rec, name, *args):
    path = t.path(name)
    return path if exportlib.export(t, rec, 'heaptrack', *args, out=path) is not None else None


def totals_of(rep, pid=None):
    return exportlib.totals_of(t, rep, pid)


def same_as_report(s, tot, what, temporary=True):
    """heaptrack_print's summary S against the report's totals TOT."""
    if not s:
        t.fail(f'{what}: no heaptrack_print output to compare')
        return
    t.eq(s.get('calls'), tot.get('allocations'), f'{what}: calls to allocation functions = allocations')
    t.eq(s.get('peak'), ht_bytes(tot.get('peak_bytes', -1)), f'{what}: peak heap memory consumption')
    # heaptrack has no word for blocks the runtime holds until exit: its
    # "leaked" is every block never freed
    t.eq(s.get('leaked'), ht_bytes(tot.get('leaked_bytes', -1) + tot.get('runtime_held_bytes', 0)),
         f'{what}: total memory leaked (leaked and runtime-held)')
    if temporary:
        t.eq(s.get('temporary'), tot.get('temporary_allocations'), f'{what}: temporary allocations')


# ---- gt-peak: the file itself, then heaptrack_print's reading of it
rep = t.report(peak)
tot = totals_of(rep)
proc = t.processes(rep, 1)[0] if rep else {}
f = export(peak, 'peak.heaptrack')
if f:
    lines = open(f).read().splitlines()
    t.eq(lines[0] if lines else None, 'v 10400 3', 'first line: heaptrack 1.4, file format 3')
    bad = [l for l in lines if l[:1] in 'itac+-' and not re.fullmatch(r'[itac+-]( [0-9a-f]+)+', l)]
    t.eq(bad[:3], [], 'number lines are lower-case hex only (upper case crashes heaptrack)')
    t.eq(sum(l.startswith('+ ') for l in lines), 14, '14 "+" lines: the allocations of gt-peak')
    t.eq(sum(l.startswith('- ') for l in lines), 9, '9 "-" lines: its frees')

s = ht_print(f, 'gt-peak') if f else None
same_as_report(s, tot, 'gt-peak')
if s:
    # peak.c's own figures
    t.eq(s.get('calls'), 14, 'gt-peak: 14 calls')
    t.eq(s.get('peak'), '156.00K', 'gt-peak: peak 156000 bytes')
    t.eq(s.get('leaked'), '54.00K', 'gt-peak: leaked 54000 bytes')
    t.eq(s.get('temporary'), 0, 'gt-peak: no temporary (each free follows another event)')
    # the recorder's memory samples become heaptrack's 'R' lines (pages, of
    # the page size its 'I' line gives): heaptrack's peak RSS is the report's
    mem = proc.get('memory') or {}
    t.check(mem.get('samples', 0) >= 10, f'gt-peak (0.6 s): memory sampled every 10 ms ({mem.get("samples")})')
    m = re.search(r'^peak RSS \(including heaptrack overhead\): (\S+)$', s['text'], re.M)
    t.eq(m and m.group(1), ht_bytes(mem.get('peak_rss_bytes', -1)), 'gt-peak: heaptrack\'s peak RSS')
    runtime = float(s.get('runtime', -1))
    t.check(abs(runtime - proc.get('duration_s', -9)) <= 0.011,
            f'gt-peak: total runtime {runtime} s is the duration {proc.get("duration_s")} s (c lines)')
    peaks = entries(s['sections'], 'PEAK MEMORY CONSUMERS', r'(\S+) peak memory consumed over (\d+) calls from')
    t.eq(peaks.get('site_a'), ('100.00K', '1'), 'peak section: site_a had 100000 bytes live at the peak')
    t.eq(peaks.get('site_b'), ('50.00K', '1'), 'peak section: site_b had 50000 bytes live at the peak')
    t.eq(peaks.get('many_blocks'), ('6.00K', '10'), 'peak section: many_blocks had 6000 at the peak')
    t.check('site_c' not in peaks and 'site_e' not in peaks, 'peak section: site_c, site_e came later')
    calls = entries(s['sections'], 'MOST CALLS TO ALLOCATION FUNCTIONS',
                    r'(\d+) calls to allocation functions with (\S+) peak consumption from')
    t.eq(calls.get('many_blocks', ('',))[0], '10', 'calls section: many_blocks made 10 calls')
    t.check(re.search(r'^site_b\n  at \S*peak\.c:48$', s['text'], re.M),
            'site_b is shown with its file and line (peak.c:48)')
    t.check(re.search(r'^    main\n      at \S*peak\.c:\d+$', s['text'], re.M),
            'the call tree goes on to main, with its line')

s = ht_print(f, 'gt-peak --print-leaks=1', leaks=True) if f else None
if s:
    leaks = entries(s['sections'], 'MEMORY LEAKS', r'(\S+) leaked over (\d+) calls from')
    t.eq(leaks.get('site_b'), ('50.00K', '1'), 'leaks section: site_b leaked 50000 bytes')
    t.eq(leaks.get('many_blocks'), ('4.00K', '10'), 'leaks section: many_blocks leaked 4000 of its 10 calls')
    t.check('site_a' not in leaks, 'leaks section: site_a was freed')

# compressed: heaptrack picks the reader by the suffix
for suffix, opener in (('.gz', gzip.open), ('.zst', None)):
    fz = export(peak, 'peak.heaptrack' + suffix)
    if not fz:
        continue
    head = open(fz, 'rb').read(4)
    t.check(head[:2] == b'\x1f\x8b' if suffix == '.gz' else head == b'\x28\xb5\x2f\xfd',
            f'{suffix}: the file is {suffix[1:]}-compressed')
    if opener:
        t.eq(opener(fz, 'rt').read(), open(f).read() if f else None, f'{suffix}: holds the plain file')
    same_as_report(ht_print(fz, f'gt-peak{suffix}'), tot, f'gt-peak{suffix}')

# ---- filters: the export holds the matched allocations, as the report,
# temporaries included: with --size-min 50000 the frees of many[4] and
# many[5] (left out) lie between site_c's allocation and free, which is
# therefore no temporary.
for args in (['--lifetime', 'only_leaked'], ['--size-min', '50000']):
    r = t.report(peak, args)
    fl = export(peak, 'filtered.heaptrack', *args)
    s = ht_print(fl, f'gt-peak {args}') if fl else None
    same_as_report(s, totals_of(r), f'gt-peak {args}', temporary=False)
    # the exporter writes site_c's free before its '+' when the two lie
    # within a millisecond; further apart (a preempted process) the free
    # directly follows and heaptrack counts one temporary more
    extra = 1 if fl and follows(open(fl).read().splitlines(), format(90000, 'x')) else 0
    t.note(f'{args}: site_c\'s free {"directly follows" if extra else "does not directly follow"} its allocation')
    t.eq(s and s.get('temporary'), totals_of(r).get('temporary_allocations', -99) + extra,
         f'gt-peak {args}: temporary allocations (the report\'s, or one more when site_c\'s free follows)')
r = t.report(peak, ['--lifetime', 'only_leaked'])
t.eq(totals_of(r).get('allocations'), 5, 'only_leaked: the 5 leaked blocks of gt-peak')
t.eq(totals_of(r).get('peak_bytes'), 54000, 'only_leaked: they peak at 54000 bytes together')
r = t.report(peak, ['--size-min', '50000'])
t.eq(totals_of(r).get('peak_bytes'), 150000, '--size-min 50000: a and b live together')

# an export that matches nothing: an empty process
r = t.report(peak, ['--size-min', '1000000000'])
fl = export(peak, 'empty.heaptrack', '--size-min', '1000000000')
s = ht_print(fl, 'empty') if fl else None
same_as_report(s, totals_of(r), 'no allocation matched')
t.eq(s and s.get('calls'), 0, 'no allocation matched: 0 calls')

# ---- gt-temporary: 9 of its own temporaries (solo 5, inner 3, thr_block 1)
rt = t.report(tmp)
tt = totals_of(rt)
pt = t.processes(rt, 1)[0] if rt else None
thr = t.site(pt, 'thr_block')
f = export(tmp, 'temporary.heaptrack')
if f and thr:
    # is thr_block's free (60 bytes: row "a 3c ...") right after its allocation?
    adjacent = follows(open(f).read().splitlines(), '3c')
    t.note(f'thr_block\'s free {"directly follows" if adjacent else "does not directly follow"} '
           'its allocation in the file')
    s = ht_print(f, 'gt-temporary')
    same_as_report(s, tt, 'gt-temporary', temporary=False)
    want = tt.get('temporary_allocations', -99) - (0 if adjacent else thr['temporary_allocations'])
    t.eq(s and s.get('temporary'), want,
         'gt-temporary: heaptrack\'s temporaries = the report\'s, less an interleaved thr_block')
    temps = entries(s['sections'] if s else {}, 'MOST TEMPORARY ALLOCATIONS',
                    r'(\d+) temporary allocations of (\d+) allocations in total \(.*\) from')
    t.eq(temps.get('solo'), ('5', '5'), 'temporary section: solo 5 of 5')
    t.eq(temps.get('inner'), ('3', '3'), 'temporary section: inner 3 of 3')
    t.check('outer' not in temps and 'first' not in temps and 'second' not in temps,
            'temporary section: outer, first, second have none')
# the thread's temporaries alone: now nothing lies between alloc and free
r = t.report(tmp, ['--lifetime', 'only_temporary'])
fl = export(tmp, 'only_temporary.heaptrack', '--lifetime', 'only_temporary')
s = ht_print(fl, 'gt-temporary only_temporary') if fl else None
same_as_report(s, totals_of(r), 'gt-temporary --lifetime only_temporary')
t.eq(s and s.get('temporary'), 9, 'only_temporary: the 9 temporaries of temporary.c')

# ---- gt-cxx: C++ names (spaces, '::', parentheses) go through the sized
# strings of file format 3; operator new's frames are not in the stacks
cxx, _ = t.record([progs['cxx']], out=t.path('cxx.mtrace'))
rc = t.report(cxx)
fx = export(cxx, 'cxx.heaptrack')
s = ht_print(fx, 'gt-cxx') if fx else None
same_as_report(s, totals_of(rc), 'gt-cxx')
if s:
    # and libstdc++'s emergency pool, allocated before main, held until exit
    held = totals_of(rc)
    hn, hb = held.get('runtime_held_allocations'), held.get('runtime_held_bytes', 0)
    t.eq(hn, 1, 'gt-cxx: one block held by the runtime (libstdc++\'s emergency pool)')
    t.eq((s.get('calls'), s.get('peak'), s.get('leaked'), s.get('temporary')),
         (9 + 1, ht_bytes(6496 + hb), ht_bytes(4144 + hb), 5),
         f'gt-cxx: 9 calls, peak 6496, leaked 4144, 5 temporary (cxx.cpp), and the pool ({hb} bytes)')
    peaks = entries(s['sections'], 'PEAK MEMORY CONSUMERS', r'(\S+) peak memory consumed over (\d+) calls from')
    t.eq(peaks.get('gt::make_ints()'), ('4.00K', '1'), 'gt-cxx: gt::make_ints() had 4000 bytes at the peak')
    t.eq(peaks.get('gt::make_doubles()'), ('2.40K', '1'), 'gt-cxx: gt::make_doubles() had 2400 at the peak')
    t.check('operator new' not in s['text'], 'gt-cxx: no operator new frame')

# ---- several processes: one per file, --pid chooses, the first by default
multi, rm, pids = exportlib.record_multi(t, progs)
for pid in pids:
    fm = export(multi, f'multi-{pid}.heaptrack', '--pid', str(pid))
    tp = totals_of(rm, pid)
    s = ht_print(fm, f'--pid {pid}') if fm else None
    # gt-temporary's thread temporary is the case shown above
    same_as_report(s, tp, f'multi-process, --pid {pid}', temporary=tp.get('temporary_allocations') != 9)
    t.check(s and s['text'].count('Debuggee command was:') == 1, f'--pid {pid}: one process in the file')
if pids:
    p = subprocess.run([t.memtrace, 'export', '--format', 'heaptrack', '-o', t.path('first.ht'), multi],
                       capture_output=True, text=True)
    t.eq(p.returncode, 0, 'multi-process without --pid: exit status')
    t.check(f'pid {pids[0]}' in p.stderr, f'multi-process without --pid: says it took pid {pids[0]}: '
            f'{p.stderr.strip()!r}')
    same_as_report(ht_print(t.path('first.ht'), 'first process'), totals_of(rm, pids[0]),
                   'multi-process without --pid: the first process')
p = subprocess.run([t.memtrace, 'export', '--format', 'heaptrack', '--pid', '1', '-o', t.path('none.ht'), multi],
                   capture_output=True, text=True)
t.eq(p.returncode, 1, f'--pid of no process: exit status (stderr {p.stderr.strip()!r})')
t.check(not os.path.exists(t.path('none.ht')), '--pid of no process: no file written')

# ---- --pid of an exec chain: its programs share the pid; the file holds
# the one the chain led to (gt-peak, the main one), not sh
chain, _ = t.record(['/bin/sh', '-c', f'exec "{progs["peak"]}"'], out=t.path('chain.mtrace'))
rch = t.report(chain)
cpids = {p['pid'] for p in t.processes(rch)} if rch else set()
if t.eq(len(cpids), 1, 'exec chain: sh and gt-peak share one pid'):
    cpid = cpids.pop()
    p = subprocess.run([t.memtrace, 'export', '--format', 'heaptrack', '--pid', str(cpid), '-o',
                        t.path('chain.ht'), chain], capture_output=True, text=True)
    t.eq(p.returncode, 0, f'exec chain --pid {cpid}: exit status ({p.stderr.strip()!r})')
    t.check(f'exporting pid {cpid} (gt-peak, image 2), the main one of 2 (--image chooses another)'
            in p.stderr, f'exec chain --pid: says which program: {p.stderr!r}')
    s = ht_print(t.path('chain.ht'), 'exec chain --pid')
    t.eq((s or {}).get('calls'), 14, 'exec chain --pid: gt-peak\'s 14 calls (peak.c), not sh\'s')
    t.eq((s or {}).get('peak'), '156.00K', 'exec chain --pid: gt-peak\'s peak')

# ---- a truncated recording: what it holds, as the report reads it
cut = exportlib.truncated_copy(t, peak)
if cut:
    rc_rep = t.report(cut)
    fc = export(cut, 'truncated.heaptrack')
    same_as_report(ht_print(fc, 'truncated') if fc else None, totals_of(rc_rep), 'truncated recording')

# ---- a binary without symbols: each frame without a name is a function
# of its own, named gt-peak+0xOFFSET as in the report (unnamed, heaptrack
# took every such frame of a module for one function and counted all 14
# calls under the first one's address)
srec, snames = exportlib.stripped_peak(t, progs)
fs = export(srec, 'stripped.heaptrack') if srec else None
s = ht_print(fs, 'stripped gt-peak', leaks=True) if fs else None
if s and snames:
    calls = entries(s['sections'], 'MOST CALLS TO ALLOCATION FUNCTIONS',
                    r'(\d+) calls to allocation functions with (\S+) peak consumption from')
    leaks = entries(s['sections'], 'MEMORY LEAKS', r'(\S+) leaked over (\d+) calls from')
    for fn, (n, _, _, leaked) in exportlib.PEAK_OWN.items():
        name = snames.get(fn)
        t.eq(calls.get(name, ('',))[0], str(n), f'stripped gt-peak: calls from {name} (in {fn})')
        t.eq(leaks.get(name, ('0B',))[0], ht_bytes(leaked), f'stripped gt-peak: leaked from {name} (in {fn})')
    t.eq(len(calls), len(exportlib.PEAK_OWN), f'stripped gt-peak: one entry per call site ({sorted(calls)})')

exportlib.check_no_temporary_files(t)
t.finish()
