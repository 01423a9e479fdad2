"""A program run under another name than its executable's (a link to it, as
git runs git-upload-pack through /usr/lib/git-core/git): the report's
header keeps the name it ran under, argv[0], and gives the executable after
it; run under its own name, the header is the executable and its arguments
as before.

Usage: argv0.py PROG (any program that exits 0: gt-peak)"""
import os


def header(t, rec):
    rc, so, se = t.run([t.memtrace, 'report', rec], what='memtrace report')
    t.eq(rc, 0, f'memtrace report: exit status (stderr {se.strip()[-300:]!r})')
    return so.splitlines()[0] if so else ''


def run(t, prog):
    real = os.path.realpath(prog)
    link = t.path('renamed-prog')
    os.symlink(real, link)
    rec, _ = t.record([link, 'arg1'], out=t.path('renamed.mtrace'))
    p = t.only_process(t.report(rec))
    if p is not None:
        t.eq(p.get('argv'), [link, 'arg1'], 'argv of the program run through a link')
        t.eq(os.path.realpath(p.get('exe') or ''), real, 'exe: the link\'s target')
        t.eq(header(t, rec), f'process {p["pid"]} (renamed-prog): {link} arg1 (running {p.get("exe")})',
             'the header: the name it ran under, its arguments, then the executable')
    rec, _ = t.record([real, 'arg1'], out=t.path('plain.mtrace'))
    p = t.only_process(t.report(rec))
    if p is not None:
        t.eq(header(t, rec), f'process {p["pid"]} ({os.path.basename(real)}): {p.get("exe")} arg1',
             'the header of the program run under its own name: the executable and its arguments')
