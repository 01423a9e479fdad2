"""query-save: `memtrace query --save DB` writes every table, and writes it
only where a file may be written.

  test_save.py GT_RESIDENT

gt-resident (resident.c) makes the run's only two mapping calls, an mmap
and a munmap of 48 MiB, and holds still for 150 ms plateaus, so the recorder
samples its memory many times.  The saved file (read with Python's sqlite3
module) must hold, table by table, the rows `memtrace query` shows over the
recording itself: the memory and mmaps tables included (they used to be
created empty).  Then the places a save must not go: a directory (it used
to be removed and replaced by the database), a symbolic link (neither it
nor its target may change), a FIFO; and an existing regular file is
replaced by a new one of mode 0600.
"""

import json
import os
import sqlite3
import stat
import sys

import gtlib
from gtlib import stderr_lines

t = gtlib.Case('query-save')
prog = sys.argv[1]
MIB = 1 << 20
TABLES = ('processes', 'sites', 'frames', 'allocations', 'memory', 'mmaps')


def live(rec, sql):
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'json', rec, sql], what='memtrace query')
    if not t.eq(rc, 0, f'memtrace query {sql!r}: exit status (stderr {se.strip()!r})'):
        return None
    return json.loads(so)


def refused(rec, path, label, what):
    """A save to PATH fails with one line naming PATH and WHAT it is."""
    rc, so, se = t.run([t.memtrace, 'query', '--save', path, rec])
    t.eq(rc, 1, f'{label}: exit status of query --save')
    lines = stderr_lines(se)
    t.eq(len(lines), 1, f'{label}: lines on stderr ({lines})')
    if lines:
        t.check(lines[0].startswith('memtrace: error:') and path in lines[0] and what in lines[0],
                f'{label}: the error names {path!r} and says it is {what!r}: {lines[0]!r}')
    t.eq([f for f in os.listdir(t.tmp) if '.tmp' in f], [], f'{label}: no temporary file left')


rec, _ = t.record([prog])
db = t.path('saved.db')
rc, so, se = t.run([t.memtrace, 'query', '--save', db, rec])
t.eq(rc, 0, f'query --save: exit status (stderr {se.strip()!r})')
if os.path.exists(db):
    t.eq(stat.S_IMODE(os.stat(db).st_mode), 0o600, 'mode of a new saved file')
    con = sqlite3.connect(db)
    for table in TABLES:
        want = live(rec, f'SELECT * FROM {table}')
        cur = con.execute(f'SELECT * FROM {table}')
        cols = [d[0] for d in cur.description]
        got = [dict(zip(cols, r)) for r in cur.fetchall()]
        if want is not None:
            t.eq(len(got), len(want), f'saved {table}: rows (the recording has {len(want)})')
            t.check(got == want, f'saved {table}: the rows memtrace query shows '
                    f'(first saved {got[:1]}, first shown {want[:1]})')
    # (beside malloc's moves of the program break, glibc's choice)
    maps = [r for r in con.execute("SELECT kind, length FROM mmaps WHERE kind != 'brk' ORDER BY s")]
    t.eq(maps, [('mmap', 4 * MIB), ('mmap', 48 * MIB), ('munmap', 48 * MIB)],
         'saved mmaps: the shared 4 MiB, the 48 MiB mapping and its unmapping (resident.c)')
    n = con.execute('SELECT count(*) FROM memory').fetchone()[0]
    t.check(n >= 10, f'saved memory: samples of a run with 600 ms of plateaus ({n})')
    con.close()
else:
    t.fail(f'query --save wrote no {db}')

# an existing file is replaced, by a file of mode 0600
old = t.path('old.db')
with open(old, 'w') as f:
    f.write('not a database\n')
os.chmod(old, 0o644)
rc, so, se = t.run([t.memtrace, 'query', '--save', old, rec, 'SELECT count(*) AS n FROM mmaps'])
t.eq(rc, 0, f'query --save over a file: exit status (stderr {se.strip()!r})')
t.eq(stat.S_IMODE(os.stat(old).st_mode), 0o600, 'mode of the file saved over another')
t.eq(sqlite3.connect(old).execute("SELECT count(*) FROM mmaps WHERE kind != 'brk'").fetchone()[0], 3,
     'the file saved over another holds the mapping calls')

# what is no regular file is refused and left as it was
d = t.path('adir')
os.mkdir(d)
refused(rec, d, 'a directory', 'directory')
t.check(os.path.isdir(d), 'the directory is still there')
target = t.path('target.db')
link = t.path('link.db')
os.symlink(target, link)
refused(rec, link, 'a symbolic link', 'symbolic link')
t.check(os.path.islink(link) and not os.path.exists(target),
        'the link is still there and its target was not created')
fifo = t.path('fifo')
os.mkfifo(fifo)
refused(rec, fifo, 'a FIFO', 'FIFO')
rc, so, se = t.run([t.memtrace, 'query', '--save', t.path('no/such/dir.db'), rec])
t.eq(rc, 1, 'query --save into a missing directory: exit status')
t.check(len(stderr_lines(se)) == 1 and 'no/such/dir.db' in se,
        f'query --save into a missing directory: one line naming it ({se.strip()!r})')

t.finish()
