"""`memtrace diff` of two runs of grow.c (K = 3, then K = 10); see grow.c
for why every signed figure is what it is.  The text leaves out what did
not change (no "0 B (0x)" line) and counts it; a copy of the program under
another name, with the same build ID or another, matches site by site."""
import json
import os
import re
import shutil

SRC = 'grow.c'

# site -> the signed figures NEW - BASE
WANT = {
    'leak_grows': dict(allocations=7, allocated_bytes=7000, frees=0, leaked_allocations=7,
                       leaked_bytes=7000, temporary_allocations=0),
    'steady': dict(allocations=0, allocated_bytes=0, frees=0, leaked_allocations=0, leaked_bytes=0,
                   temporary_allocations=0),
    'leak_shrinks': dict(allocations=-7, allocated_bytes=-350, frees=0, leaked_allocations=-7,
                         leaked_bytes=-350, temporary_allocations=0),
    'keep_one': dict(allocations=0, allocated_bytes=0, frees=0, leaked_allocations=0, leaked_bytes=0,
                     temporary_allocations=0),
}
BASE = {'leak_grows': (3, 3000), 'steady': (5, 1500), 'leak_shrinks': (17, 850), 'keep_one': (1, 700)}
NEW = {'leak_grows': (10, 10000), 'steady': (5, 1500), 'leak_shrinks': (10, 500), 'keep_one': (1, 700)}


def leaf(site):
    fr = site.get('frames') or [{}]
    return fr[0].get('function')


def run(t, prog):
    base, _ = t.record([prog, '3'], out=t.path('base.mtrace'))
    new, _ = t.record([prog, '10'], out=t.path('new.mtrace'))
    rc, so, se = t.run([t.memtrace, 'diff', '--leaks', '--json', base, new], what='memtrace diff')
    t.eq(rc, 0, f'diff --json: exit status (stderr {se[-300:]!r})')
    doc = json.loads(so) if rc == 0 else {}
    t.eq(doc.get('diff'), {'base': base, 'new': new}, 'diff member names both recordings')
    p = (doc.get('processes') or [{}])[0]
    tot = p.get('totals', {})
    t.eq((tot.get('allocations'), tot.get('leaked_allocations'), tot.get('leaked_bytes')), (0, 0, 6650),
         'totals: new - base (allocations, leaked_allocations, leaked_bytes)')
    t.eq((tot.get('diff', {}).get('base', {}).get('leaked_bytes'),
          tot.get('diff', {}).get('new', {}).get('leaked_bytes')), (3850, 10500), 'totals.diff: each side')
    sites = {leaf(s): s for s in p.get('sites', [])}
    t.eq(sorted(k for k in sites if k in WANT), sorted(WANT), 'every site of the program is matched once')
    for fn, want in WANT.items():
        s = sites.get(fn, {})
        for k, v in want.items():
            t.eq(s.get(k), v, f'{fn}: {k} (new - base)')
        d = s.get('diff', {})
        t.eq((d.get('base', {}).get('allocations'), d.get('base', {}).get('allocated_bytes')), BASE[fn],
             f'{fn}: diff.base (allocations, bytes)')
        t.eq((d.get('new', {}).get('allocations'), d.get('new', {}).get('allocated_bytes')), NEW[fn],
             f'{fn}: diff.new (allocations, bytes)')
    order = [leaf(s) for s in p.get('sites', []) if leaf(s) in WANT]
    t.eq(order[0] if order else None, 'leak_grows', 'ranked by growth of leaked bytes: leak_grows first')
    t.eq(order[-1] if order else None, 'leak_shrinks', '... and the shrinking leak last')
    # the text tree: signed figures, the unchanged sites left out
    rc, so, _ = t.run([t.memtrace, 'diff', '--leaks', base, new], what='memtrace diff')
    t.eq(rc, 0, 'diff (text): exit status')
    t.check('leaks, new minus base: +6.65 KB' in so, f'text: the whole change ({so[:400]!r})')
    t.check('+7.00 KB (+7x): leak_grows' in so, 'text: leak_grows +7,000 B in 7 blocks')
    t.check('-350 B (-7x): leak_shrinks' in so, 'text: leak_shrinks -350 B in 7 blocks')
    t.check('steady' not in so and 'keep_one' not in so, 'text: unchanged sites are not in the tree')
    unchanged(t, base, new, doc)
    # --leaks=lost: what the leak scan found lost on each side; K = 10
    # "held" keeps its blocks in its arrays (still reachable): nothing lost
    held, _ = t.record([prog, '10', 'held'], out=t.path('held.mtrace'))
    rc, so, se = t.run([t.memtrace, 'diff', '--leaks=lost', '--json', base, held], what='memtrace diff --leaks=lost')
    tot = ((json.loads(so) if rc == 0 else {}).get('processes') or [{}])[0].get('totals', {})
    # (under an emulator no scan runs: every leaked block counts, said)
    t.eq((tot.get('diff', {}).get('base', {}).get('leaked_bytes'), tot.get('diff', {}).get('new', {}).get('leaked_bytes'),
          tot.get('leaked_bytes')), (3850, 10500, 6650) if t.emulated else (3850, 0, -3850),
         f'diff --leaks=lost: lost on each side, and the change ({se[-200:]!r})')
    t.check(t.emulated == ('no leak scan classified' in se), f'diff --leaks=lost: a side without a scan is named ({se!r})')
    # the same recording against itself: nothing changed
    rc, so, _ = t.run([t.memtrace, 'diff', '--json', base, base], what='memtrace diff')
    doc = json.loads(so) if rc == 0 else {}
    p = (doc.get('processes') or [{}])[0]
    t.check(p.get('sites') and all(s.get('allocations') == 0 and s.get('leaked_bytes') == 0
                                   for s in p['sites']), 'a recording against itself: every site 0')
    # usage errors
    rc, _, se = t.run([t.memtrace, 'diff', base], what='memtrace diff')
    t.eq(rc, 2, 'one recording: usage error (2)')
    t.check('BASE NEW' in se, f'... saying two are needed ({se.strip()!r})')
    rc, _, se = t.run([t.memtrace, 'diff', base, t.path('missing.mtrace')], what='memtrace diff')
    t.eq(rc, 1, 'a missing recording: exit 1')
    t.check('missing.mtrace' in se and len(se.strip().splitlines()) == 1, f'... one line naming it ({se!r})')
    suppressions(t, base, new)
    flamegraph(t, base, new)
    renamed(t, prog, base)


ZERO_LINE = re.compile(r'-> 0 B \(0x\)')


def unchanged(t, base, new, doc):
    """The sites none of whose leak figures moved are counted on the last
    line of the text, and shown, at 0, with --unchanged."""
    sites = (doc.get('processes') or [{}])[0].get('sites', [])
    same = [s for s in sites if not (s.get('leaked_bytes') or s.get('leaked_allocations'))]
    t.check(len(same) >= 2, f'steady and keep_one among the unchanged sites ({len(same)})')
    rc, so, _ = t.run([t.memtrace, 'diff', '--leaks', base, new], what='memtrace diff')
    t.check(f'({len(same)} unchanged call sites not shown: --unchanged shows them)' in so,
            f'text: the {len(same)} unchanged sites counted ({so[-300:]!r})')
    t.check(not ZERO_LINE.search(so), f'text: no "0 B (0x)" line ({so!r})')
    rc, so, _ = t.run([t.memtrace, 'diff', '--leaks', '--unchanged', base, new], what='memtrace diff')
    t.eq(rc, 0, 'diff --unchanged: exit status')
    t.check('0 B (0x): steady' in so and '0 B (0x): keep_one' in so and 'unchanged call site' not in so,
            f'--unchanged: steady and keep_one shown at 0, none left out ({so!r})')


def other_build_id(src, dst):
    """DST: a copy of SRC whose GNU build ID note holds other bytes (a
    rebuild of the same code, as far as any reader can tell)."""
    data = bytearray(open(src, 'rb').read())
    at = -1
    for m in re.finditer(rb'GNU\x00', data):
        head = bytes(data[m.start() - 12:m.start()])
        if len(head) == 12 and (head[0:4] == b'\x04\x00\x00\x00' and head[8:12] == b'\x03\x00\x00\x00' or
                                head[0:4] == b'\x00\x00\x00\x04' and head[8:12] == b'\x00\x00\x00\x03'):
            size = int.from_bytes(head[4:8], 'little' if head[0] == 4 else 'big')
            at = m.end()
            for i in range(at, at + size):
                data[i] ^= 0x5a
            break
    with open(dst, 'wb') as f:
        f.write(data)
    os.chmod(dst, 0o755)
    return at >= 0


def renamed(t, prog, base):
    """gt-grow copied as app2 (the same build ID) and as app3 (another: a
    rebuild under another name), run with K = 10: every site of the
    program matches its own in BASE (K = 3), with the figures of the two
    runs, and the text has no "0 B (0x)" line (unmatched sites of the same
    frames, one's -X and the other's +X, merged in the tree)."""
    app2 = t.path('app2')
    shutil.copy2(prog, app2)
    app3 = t.path('app3')
    t.check(other_build_id(prog, app3), 'gt-grow has a GNU build ID note to change')
    for copy in (app2, app3):
        name = os.path.basename(copy)
        rec, _ = t.record([copy, '10'], out=t.path(f'{name}.mtrace'))
        rc, so, se = t.run([t.memtrace, 'diff', '--leaks', '--json', base, rec], what='memtrace diff')
        t.eq(rc, 0, f'{name}: diff --json: exit status ({se[-300:]!r})')
        p = (json.loads(so).get('processes') or [{}])[0] if rc == 0 else {}
        sites = [s for s in p.get('sites', []) if leaf(s) in WANT]
        t.eq(sorted(leaf(s) for s in sites), sorted(WANT), f'{name}: every site of the program matched once')
        for s in sites:
            d = s.get('diff', {})
            got = ((d.get('base', {}).get('allocations'), d.get('base', {}).get('allocated_bytes')),
                   (d.get('new', {}).get('allocations'), d.get('new', {}).get('allocated_bytes')))
            t.eq(got, (BASE[leaf(s)], NEW[leaf(s)]), f'{name}: {leaf(s)} matched: (base, new) figures')
        rc, so, _ = t.run([t.memtrace, 'diff', '--leaks', base, rec], what='memtrace diff')
        t.check('leaks, new minus base: +6.65 KB' in so and '+7.00 KB (+7x): leak_grows' in so,
                f'{name}: text: the known change ({so[:500]!r})')
        t.check(not ZERO_LINE.search(so), f'{name}: text: no "0 B (0x)" line ({so!r})')
        # allocated bytes: steady and keep_one allocate as much in both runs
        rc, so, _ = t.run([t.memtrace, 'diff', base, rec], what='memtrace diff')
        t.check('allocated, new minus base: +6.65 KB' in so and 'steady' not in so and
                not ZERO_LINE.search(so), f'{name}: text (allocated): steady not shown, no "0 B (0x)" line ({so!r})')


def flamegraph(t, base, new):
    """export --format svg --base: widths from NEW, red where a frame grew,
    blue where it shrank, the change in each frame's title."""
    import re
    out = t.path('diff.svg')
    rc, _, se = t.run([t.memtrace, 'export', '--format', 'svg', '--weight', 'leaked', '--base', base,
                       '-o', out, new], what='export svg --base')
    t.eq(rc, 0, f'export --base: exit status ({se.strip()!r})')
    svg = open(out).read() if rc == 0 else ''
    frames = {m.group(1).split('\n')[0]: (m.group(1), m.group(2)) for m in re.finditer(
        r'<g class="f"[^>]*><title>(.*?)</title><rect[^>]*fill="rgb\(([0-9,]*)\)"', svg, re.S)}
    title, fill = frames.get('leak_grows', ('', '0,0,0'))
    r, g, b = map(int, fill.split(','))
    t.check('10,000 bytes' in title and '+7,000 since the base' in title,
            f'leak_grows: its width is NEW\'s 10,000 B leaked, +7,000 since the base ({title!r})')
    t.check(r == 255 and g < 100 and b < 100, f'leak_grows: deep red, the largest change ({fill})')
    title, fill = frames.get('leak_shrinks', ('', '0,0,0'))
    r, g, b = map(int, fill.split(','))
    t.check('500 bytes' in title and '-350 since the base' in title, f'leak_shrinks: -350 ({title!r})')
    t.check(b == 255 and r < 255 and r == g, f'leak_shrinks: blue, shrank ({fill})')
    t.check('steady' not in frames, 'steady leaks nothing in either run: no frame')
    html_flamegraph(t, base, new)
    rc, _, se = t.run([t.memtrace, 'export', '--format', 'folded', '--base', base, new], what='export')
    t.eq(rc, 2, '--base with another format than svg or html: usage error')


def html_flamegraph(t, base, new):
    """export --format html --base: the page embeds, in its data's "diff",
    the sites of both runs matched by their frames, each with NEW's figures
    and BASE's (base_*), which its flamegraph colours by change."""
    import re
    out = t.path('diff.html')
    rc, _, se = t.run([t.memtrace, 'export', '--format', 'html', '--weight', 'leaked', '--base', base,
                       '-o', out, new], what='export html --base')
    t.eq(rc, 0, f'export html --base: exit status ({se.strip()!r})')
    page = open(out).read() if rc == 0 else ''
    m = re.search(r'<script type="application/json" id="memtrace-data">(.*?)</script>', page, re.S)
    data = json.loads(m.group(1)) if m else {}
    diff = data.get('diff') or {}
    t.eq(diff.get('base'), base, 'the data names the base recording')
    fields = {k: i for i, k in enumerate(diff.get('site_fields', []))}
    frames = diff.get('frames', [])
    got = {}
    for s in diff.get('sites', []):
        idx = s[fields['frames']]
        name = frames[idx[0]][0] if idx else ''
        b, n = got.get(name, (0, 0))
        got[name] = (b + s[fields['base_leaked_bytes']], n + s[fields['leaked_bytes']])
    t.eq(got.get('leak_grows'), (3000, 10000), 'html diff: leak_grows leaked 3,000 B in BASE, 10,000 in NEW')
    t.eq(got.get('leak_shrinks'), (850, 500), 'html diff: leak_shrinks leaked 850 B in BASE, 500 in NEW')
    t.check('red grew since' in page and 'blue shrank' in page, 'the page says how it colours a diff')
    rc, _, _ = t.run([t.memtrace, 'export', '--format', 'html', '-o', t.path('plain.html'), new],
                     what='export html')
    plain = open(t.path('plain.html')).read() if rc == 0 else ''
    m = re.search(r'<script type="application/json" id="memtrace-data">(.*?)</script>', plain, re.S)
    t.check(m and 'diff' not in json.loads(m.group(1)), 'without --base, no diff in the data')


def suppressions(t, base, new):
    """--suppressions (LeakSanitizer's syntax) on report and diff: a
    suppressed site's leaks leave the leak figures, counted apart."""
    def supp(name, text):
        path = t.path(name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def leaks(path, s):
        rc, so, se = t.run([t.memtrace, 'report', '--json', '--suppressions', s, path], what='report')
        p = (json.loads(so).get('processes') or [{}])[0] if rc == 0 else {}
        tot = p.get('totals', {})
        return rc, (tot.get('leaked_bytes'), tot.get('leaked_allocations'),
                    tot.get('suppressed_bytes'), tot.get('suppressed_allocations')), se
    by_function = supp('function.supp', '# a comment, then a blank line\n\nleak:leak_grows\n')
    rc, got, _ = leaks(base, by_function)
    t.eq(got, (850, 17, 3000, 3), 'suppressed by function: leaked and suppressed (bytes, blocks)')
    rc, got, _ = leaks(base, supp('module.supp', 'leak:*gt-grow$\n'))
    t.eq(got, (0, 0, 3850, 20), 'suppressed by module (a * pattern anchored at the end): every leak')
    rc, got, _ = leaks(base, supp('file.supp', 'leak:grow.c\n'))
    t.eq(got, (0, 0, 3850, 20), 'suppressed by source file: every leak')
    rc, got, _ = leaks(base, supp('none.supp', 'leak:^grows\n'))
    t.eq(got, (3850, 20, 0, 0), 'an anchored pattern that matches no frame: nothing suppressed')
    rc, _, se = leaks(base, supp('bad.supp', 'leak:x\nrace:leak_grows\n'))
    t.eq(rc, 1, 'a line that is not leak:PATTERN: exit 1')
    t.check('bad.supp:2' in se, f'... naming the file and line ({se.strip()!r})')
    rc, so, _ = t.run([t.memtrace, 'diff', '--leaks', '--json', '--suppressions', by_function, base, new],
                      what='diff')
    p = (json.loads(so).get('processes') or [{}])[0] if rc == 0 else {}
    s = {leaf(x): x for x in p.get('sites', [])}
    t.eq((s.get('leak_grows', {}).get('leaked_bytes'), s.get('leak_shrinks', {}).get('leaked_bytes')), (0, -350),
         'diff --suppressions: the suppressed site leaks nothing on either side')
    # calls: leak_grows' +7 and leak_shrinks' -7 cancel out under malloc,
    # which still changed (the whole tree was folded: "0: 1 more call site
    # changed by less than 0.50% each")
    rc, so, _ = t.run([t.memtrace, 'diff', '--frequency', base, new], what='memtrace diff')
    t.eq(rc, 0, 'diff --frequency (text): exit status')
    t.check('frequency, new minus base: 0' in so, f'text: no change in calls in all ({so[-600:]!r})')
    t.check('-> +7 calls (+7.00 KB): leak_grows' in so and '-> -7 calls (-350 B): leak_shrinks' in so,
            f'text: the calls that moved, leak_grows +7 and leak_shrinks -7 ({so[-600:]!r})')
    t.check('changed by less than' not in so, 'text: nothing folded')
