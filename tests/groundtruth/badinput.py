"""`memtrace report` on bad input: missing, empty, truncated, corrupted and
foreign files.  Runtime errors exit 1 with exactly one line on stderr,
"memtrace: error: ..."; a truncated recording (a crash cut it) is reported
with "truncated": true, exit 0 and one "memtrace: warning: ..." line;
usage errors exit 2.  Never a crash (exit >= 128 or a negative status).

Usage: badinput.py MODE CHUNKY_PROG, MODE one of
  basic          every case but the one below
  corrupt-middle bytes flipped inside a chunk that other chunks follow
"""
import os

from gtlib import chunks, marker_line, stderr_lines


def report_both(t, path, label, want_rc, level='error', mention=None):
    """Runs report --json and the text report on PATH; checks the exit
    status and the single stderr line.  Returns the JSON stdout."""
    out = None
    for args in (['--json'], []):
        rc, so, se = t.run([t.memtrace, 'report', *args, path])
        what = f'{label}: memtrace report {" ".join(args + [os.path.basename(path)])}'
        if rc is None:
            continue
        t.check(0 <= rc < 128, f'{what}: crashed (exit status {rc}); stderr {se[-300:]!r}')
        t.eq(rc, want_rc, f'{what}: exit status (stderr {se.strip()[-300:]!r})')
        lines = stderr_lines(se)
        if want_rc == 0 and level is None:
            t.eq(lines, [], f'{what}: stderr')
        else:
            t.eq(len(lines), 1, f'{what}: number of lines on stderr ({lines})')
            if lines:
                t.check(lines[0].startswith(f'memtrace: {level}:'),
                        f'{what}: stderr starts with "memtrace: {level}:": {lines[0]!r}')
                if mention:
                    t.check(mention in lines[0], f'{what}: the message names {mention!r}: {lines[0]!r}')
        if args:
            out = so
    return out


def make_recording(t, prog):
    rec, _ = t.record([prog])
    try:
        ch = chunks(rec)
    except Exception as x:  # the layout of format.h is part of what is tested
        t.fail(f'chunk layout of {rec}: {x}')
        return None, None
    t.note(f'the recording has {len(ch)} chunks: {ch}')
    t.check(len(ch) >= 3, f'the recording of chunky has at least 3 chunks (three phases 700 ms apart, and '
            f'memtrace record writes at least every 250 ms), got {len(ch)}')
    rep = t.report(rec)
    p = t.only_process(rep)
    s = t.site(p, 'early') if p else None
    t.check_site(s, 'intact recording: early', allocations=100, leaked_allocations=100, allocated_bytes=20000)
    s = t.site(p, 'middle') if p else None
    t.check_site(s, 'intact recording: middle', allocations=100, leaked_allocations=100, allocated_bytes=25000)
    s = t.site(p, 'late') if p else None
    t.check_site(s, 'intact recording: late', allocations=100, leaked_allocations=100, allocated_bytes=30000)
    t.eq(rep.get('truncated') if rep else None, False, 'intact recording: "truncated"')
    return rec, ch


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)
    return path


def flip(data, off, n=16):
    b = bytearray(data)
    for i in range(off, off + n):
        b[i] ^= 0xA5
    return bytes(b)


def run_basic(t, prog):
    rec, ch = make_recording(t, prog)
    if rec is None or len(ch) < 2:
        return
    data = open(rec, 'rb').read()

    missing = t.path('no-such-recording.mtrace')
    report_both(t, missing, 'missing file', 1, mention=missing)
    empty = write(t.path('empty.mtrace'), b'')
    report_both(t, empty, 'empty file', 1, mention=empty)
    report_both(t, '/bin/ls', 'foreign file', 1, mention='/bin/ls')
    report_both(t, t.tmp, 'directory', 1, mention=t.tmp)
    badver = write(t.path('version.mtrace'), data[:8] + bytes([99]) + data[9:])
    report_both(t, badver, 'unsupported format version', 1, mention=badver)
    half_header = write(t.path('header.mtrace'), data[:10])
    report_both(t, half_header, 'incomplete file header', 1, mention=half_header)

    # Cut in the middle of the last chunk: what the earlier chunks hold is
    # reported, as a truncated recording.
    off, ln = ch[-1]
    cut = write(t.path('cut-last.mtrace'), data[:off + ln // 2])
    so = report_both(t, cut, 'cut inside the last chunk', 0, level='warning', mention=cut)
    check_truncated(t, so, 'cut inside the last chunk')
    # ... or inside the header of the last chunk
    cut = write(t.path('cut-last-header.mtrace'), data[:off + 10])
    so = report_both(t, cut, 'cut inside the last chunk header', 0, level='warning', mention=cut)
    check_truncated(t, so, 'cut inside the last chunk header')

    # Cut inside the first chunk: nothing complete is left.
    off, ln = ch[0]
    cut = write(t.path('cut-first.mtrace'), data[:off + ln // 2])
    report_both(t, cut, 'cut inside the first chunk', 1, mention=cut)

    # Bytes flipped inside the first chunk (its checksum no longer matches).
    off, ln = ch[0]
    bad = write(t.path('corrupt-first.mtrace'), flip(data, off + 24 + (ln - 24) // 2, min(16, ln - 24)))
    report_both(t, bad, 'bytes flipped in the first chunk', 1, mention=bad)

    # Usage errors
    rc, so, se = t.run([t.memtrace, 'report', '--gt-no-such-option', rec])
    t.eq(rc, 2, 'memtrace report --gt-no-such-option: exit status')
    lines = stderr_lines(se)
    t.check(lines and lines[0].startswith('memtrace: error:') and '--gt-no-such-option' in lines[0],
            f'unknown option: first stderr line is "memtrace: error: ..." naming it: {lines}')
    rc, so, se = t.run([t.memtrace, 'report'])
    t.eq(rc, 2, 'memtrace report without a file: exit status')


def check_truncated(t, so, label):
    import json
    try:
        rep = json.loads(so or '')
    except ValueError:
        t.fail(f'{label}: the JSON report does not parse')
        return
    t.eq(rep.get('truncated'), True, f'{label}: "truncated"')
    p = t.only_process(rep)
    s = t.site(p, 'early') if p else None
    t.check_site(s, f'{label}: early (written long before the cut)', allocations=100, allocated_bytes=20000,
                 leaked_allocations=100)
    if s:
        t.eq(s['frames'][0].get('line'), marker_line('chunky.c', 'site:early'), f'{label}: early: line')
    late = t.sites_of(p, 'late') if p else []
    t.check(sum(x.get('allocations', 0) for x in late) <= 100, f'{label}: at most 100 late allocations')


def run_corrupt_middle(t, prog):
    rec, ch = make_recording(t, prog)
    if rec is None or len(ch) < 3:
        return
    data = open(rec, 'rb').read()
    mid = len(ch) // 2
    off, ln = ch[mid]
    t.note(f'flipping bytes inside chunk {mid} of {len(ch)} (offset {off}, {ln} bytes)')
    bad = write(t.path('corrupt-middle.mtrace'), flip(data, off + 24 + (ln - 24) // 2, min(16, ln - 24)))
    report_both(t, bad, 'bytes flipped in a chunk in the middle', 1, mention=bad)


def run(t, mode, prog):
    if mode == 'corrupt-middle':
        run_corrupt_middle(t, prog)
    else:
        run_basic(t, prog)
