"""exportlib - what the export tests share.

Each test_NAME.py is run as `python3 test_NAME.py GT_PEAK GT_TEMPORARY GT_CXX`
(the ground-truth programs of tests/groundtruth, whose figures their sources'
header comments derive).  It records them with gtlib.Case.record, exports with
`memtrace export`, reads the export back with its real consumer and asserts
the figures, then ends with t.finish().
"""

import json
import os
import shutil
import struct
import subprocess
import sys

import gtlib


def build_id(path):
    """The GNU build-id of ELF file PATH, in hex, from its PT_NOTE segments."""
    data = open(path, 'rb').read()
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    for i in range(phnum):
        ptype, _, off, _, _, filesz = struct.unpack_from('<IIQQQQ', data, phoff + i * phentsize)
        if ptype != 4:  # PT_NOTE
            continue
        pos = off
        while pos + 12 <= off + filesz:
            namesz, descsz, ntype = struct.unpack_from('<III', data, pos)
            name = data[pos + 12:pos + 12 + namesz]
            dpos = pos + 12 + (namesz + 3) // 4 * 4
            if ntype == 3 and name.rstrip(b'\0') == b'GNU':
                return data[dpos:dpos + descsz].hex()
            pos = dpos + (descsz + 3) // 4 * 4
    return None


def setup(name):
    """(case, {'peak': path, 'temporary': path, 'cxx': path}) from argv."""
    t = gtlib.Case(name)
    progs = dict(zip(('peak', 'temporary', 'cxx'), sys.argv[1:4]))
    return t, progs


def export(t, rec, fmt, *args, out=None, expect_rc=0):
    """`memtrace export --format FMT ARGS REC [-o OUT]`; returns the output
    (bytes) of a successful export, or None after recording a failure."""
    argv = [t.memtrace, 'export', '--format', fmt, *args, rec]
    if out:
        argv[2:2] = ['-o', out]
    p = subprocess.run(argv, capture_output=True, timeout=300)
    if p.returncode != expect_rc:
        t.fail(f'{" ".join(argv)}: exit status {p.returncode}, expected {expect_rc}; '
               f'stderr: {p.stderr.decode(errors="replace").strip()[-400:]!r}')
        return None
    if out:
        with open(out, 'rb') as f:
            return f.read()
    return p.stdout


def site_by_function(t, proc, fn):
    """The site of the JSON report PROC whose first frame is function FN."""
    for s in proc.get('sites', []):
        if s.get('frames') and s['frames'][0].get('function') == fn:
            return s
    t.fail(f'no site whose first frame is {fn}')
    return None


BROWSER = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'present', 'browser')


def browser(t, script, *args):
    """Runs tests/present/browser/SCRIPT (Playwright driving Debian's chromium) with
    node; returns the facts it prints as JSON, or None after a failure that
    says what is missing."""
    node = shutil.which('node')
    if not t.check(node, 'node is not installed: the browser checks need node and chromium '
                   '(tools/setup.sh installs them)'):
        return None
    if not t.check(os.path.exists(os.path.join(BROWSER, 'node_modules', 'playwright-core')),
                   f'playwright-core is not installed in {BROWSER}/node_modules (run npm ci there)'):
        return None
    if not t.check(os.path.exists(os.environ.get('MEMTRACE_CHROMIUM', '/usr/bin/chromium')),
                   '/usr/bin/chromium is not installed: the browser checks need it'):
        return None
    env = dict(os.environ, NODE_PATH=os.path.join(BROWSER, 'node_modules'))
    p = subprocess.run([node, os.path.join(BROWSER, script), *args], cwd=BROWSER, env=env,
                       capture_output=True, text=True, timeout=180)
    if not t.check(p.returncode == 0, f'node {script}: exit status {p.returncode}: {p.stderr.strip()[-1500:]}'):
        return None
    return json.loads(p.stdout)


def totals_of(t, rep, pid=None):
    """The totals of the report REP's process PID, or of its first process."""
    procs = [p for p in t.processes(rep) if pid is None or p['pid'] == pid]
    return procs[0]['totals'] if procs else {}


def record_multi(t, progs):
    """gt-peak and gt-temporary run one after the other by sh, recorded with
    --follow-forks: (recording, its JSON report, the pids in it)."""
    multi, _ = t.record(['sh', '-c', f'{progs["peak"]}; {progs["temporary"]}'], opts=['--follow-forks'],
                        out=t.path('multi.mtrace'))
    rm = t.report(multi)
    pids = [p['pid'] for p in t.processes(rm)]
    t.check(len(pids) == 3, f'sh, gt-peak and gt-temporary recorded ({pids})')
    return multi, rm, pids


def truncated_copy(t, rec):
    """A copy of the recording REC cut in the middle of its last chunk, or
    None after a failure (REC must have two chunks at least)."""
    try:
        ch = gtlib.chunks(rec)
    except (OSError, RuntimeError) as x:
        ch = []
        t.fail(f'cannot read the chunks of {rec}: {x}')
    if len(ch) < 2:
        t.fail(f'gt-peak\'s recording has {len(ch)} chunks: cannot cut one off')
        return None
    cut = t.path('truncated.mtrace')
    with open(rec, 'rb') as src, open(cut, 'wb') as dst:
        dst.write(src.read(ch[-1][0] + ch[-1][1] // 2))
    return cut


def check_no_temporary_files(t):
    """An export writes FILE.tmp and renames it: none may be left behind."""
    for name in os.listdir(t.tmp):
        if '.tmp' in name:
            t.fail(f'a temporary file was left behind: {name}')


def page_frames(proc, site):
    """The frame indices, leaf first, of SITE (a dict of the report page's
    site_fields) of process PROC of the page's data: its "stack" node walked
    up the tree of "stacks" (or its "frames" list, as a diff's sites hold)."""
    if 'stack' not in site:
        return list(site.get('frames') or [])
    out, node, stacks = [], site['stack'], proc.get('stacks', [])
    while node is not None and node >= 0:
        out.append(stacks[node][0])
        node = stacks[node][1]
    return out


# gt-peak's own call sites by construction (peak.c): function -> (calls,
# bytes allocated, blocks leaked, bytes leaked)
PEAK_OWN = {'many_blocks': (10, 10000, 4, 4000), 'site_a': (1, 100000, 0, 0),
            'site_b': (1, 50000, 1, 50000), 'site_c': (1, 90000, 0, 0), 'site_e': (1, 11999, 0, 0)}


def stripped_peak(t, progs):
    """gt-peak copied and stripped of its symbols (strip, binutils), then
    recorded: its frames have no names, so memtrace calls them
    gt-peak+0xOFFSET.  Returns (recording, {function of PEAK_OWN: the name
    of its allocating frame}), the function found from the offset in the
    symbol table of the original (nm), not from memtrace; or (None, {})
    after a failure."""
    exe = t.path('gt-peak')
    shutil.copy(progs['peak'], exe)
    rc, _, se = t.run(['strip', exe], what='strip')
    if not t.check(rc == 0, f'strip gt-peak (binutils): exit status {rc}, {se.strip()[-200:]!r}'):
        return None, {}
    rc, so, se = t.run(['nm', '-S', progs['peak']], what='nm')
    if not t.check(rc == 0, f'nm -S gt-peak: exit status {rc}, {se.strip()[-200:]!r}'):
        return None, {}
    ranges = {}
    for line in so.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] in PEAK_OWN:
            ranges[f[3]] = (int(f[0], 16), int(f[0], 16) + int(f[1], 16))
    t.eq(sorted(ranges), sorted(PEAK_OWN), 'nm -S gt-peak: the functions of peak.c')
    rec, _ = t.record([exe], out=t.path('stripped.mtrace'))
    rep = t.report(rec)
    names = {}
    for p in t.processes(rep) if rep else []:
        for s in p.get('sites', []):
            fr = (s.get('frames') or [{}])[0]
            if fr.get('function') or not fr.get('offset') or fr.get('module') != exe:
                continue
            off = int(fr['offset'], 16)
            for fn, (lo, hi) in ranges.items():
                if lo <= off < hi:
                    t.check(fn not in names, f'stripped gt-peak: one call site in {fn}')
                    names[fn] = fr.get('name')
    t.eq(sorted(names), sorted(PEAK_OWN), 'stripped gt-peak: a call site in each function of peak.c, unnamed')
    t.eq(len(set(names.values())), len(names), f'stripped gt-peak: distinct names {names}')
    return rec, names


def linked_peak(t, progs):
    """A symbolic link named peak-link to gt-peak, in the case's directory."""
    link = t.path('peak-link')
    if not os.path.lexists(link):
        os.symlink(os.path.realpath(progs['peak']), link)
    return link


def ht_bytes(n):
    """N bytes as heaptrack_print writes them."""
    b, i = float(n), 0
    while i < 4 and abs(b) > 1000:
        b /= 1000
        i += 1
    return f'{n}B' if i == 0 else f'{b:.2f}{"BKMGT"[i]}'


def ht_first_row_after_free(path):
    """1 if the heaptrack file PATH frees a block of its first row ('- 0')
    right after another free, else 0: heaptrack counts that free as
    temporary whatever it is, and the file cannot say otherwise where the
    line after the previous allocation is a temporary's (man
    memtrace-export: heaptrack's temporaries may be memtrace's plus one)."""
    prev = None
    with open(path) as f:
        for line in f:
            if line[:2] not in ('+ ', '- '):
                continue
            if line == '- 0\n' and prev == '-':
                return 1
            prev = line[0]
    return 0
