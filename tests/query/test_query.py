"""query: `memtrace query` over every ground-truth program, against
`memtrace report --json` of the same recording.

  test_query.py GT_PROGRAM... [GT_DL_MODULE]

Each program is recorded (fork with --follow-forks, so that a recording of
several processes is covered; cull with --cull-temporary, so that culled
allocations are), and then, process by process:
  - every total of the report equals its column of the processes table;
  - every site of the report (all its figures and all its frames) is a row
    of the sites table with those frames, and no other row is there;
  - the allocations table adds up to the same figures, site by site:
    count, bytes, leaked count and bytes (free_s NULL), temporaries and
    frees (less what culling kept out of the stream, which has no rows).
Then, on gt-peak (peak.c's header gives its figures): a database saved with
--save read back by the sqlite3 program, statements from standard input,
--format csv and json, --where-only, and bad statements (one line naming
the problem, exit 1).
"""

import csv
import io
import json
import os
import shutil
import subprocess
import sys

import gtlib

t = gtlib.Case('query')
args = sys.argv[1:]
progs = {os.path.basename(a)[3:] if os.path.basename(a).startswith('gt-') else a: a
         for a in args if not a.endswith('.so')}
gt_dl = next((a for a in args if a.endswith('.so')), None)

# how each program is run: (its arguments, record options)
HOW = {
    'fork': ([], ['--follow-forks']),
    'cull': ([], ['--cull-temporary']),
    'dlopen': ([gt_dl] if gt_dl else [], []),
    'sigkill': (['self'], []),
}

SITE_KEYS = ('allocations', 'allocated_bytes', 'frees', 'leaked_allocations', 'leaked_bytes',
             'peak_bytes', 'peak_allocations', 'temporary_allocations', 'culled_allocations',
             'min_size', 'max_size', 'runtime_held_allocations', 'runtime_held_bytes')
TOTAL_KEYS = ('allocations', 'frees', 'allocated_bytes', 'peak_bytes', 'peak_allocations',
              'leaked_allocations', 'leaked_bytes', 'temporary_allocations', 'unmatched_frees',
              'culled_allocations', 'runtime_held_allocations', 'runtime_held_bytes')


def query(rec, sql, *opts, expect_rc=0):
    """Rows of SQL (a list of dicts, from --format json)."""
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'json', *opts, rec, sql],
                       what='memtrace query')
    if not t.eq(rc, expect_rc, f'exit status of memtrace query {sql!r} (stderr {se.strip()!r})'):
        return []
    try:
        return json.loads(so)
    except ValueError as x:
        t.fail(f'memtrace query {sql!r}: not JSON ({x}): {so[:200]!r}')
        return []


def frames_key(frames):
    return tuple((f.get('function'), f.get('file'), f.get('line'), f.get('module'),
                  int(f['address'], 16), bool(f.get('inlined'))) for f in frames)


def check_recording(name, rec):
    rep = t.report(rec)
    if not rep:
        return
    # processes by their place in the report (an exec'd image is a process
    # of its own with the same pid)
    procs = query(rec, 'SELECT * FROM processes ORDER BY process')
    t.eq([(q['process'], q['pid']) for q in procs], [(i, p['pid']) for i, p in enumerate(rep['processes'])],
         f'{name}: processes, in the report\'s order')
    # sites and their frames, by process
    sites = query(rec, 'SELECT * FROM sites ORDER BY id')
    frames = query(rec, 'SELECT * FROM frames ORDER BY site_id, depth')
    t.eq(len({s['id'] for s in sites}), len(sites), f'{name}: site ids are unique')
    fr_of = {}
    for f in frames:
        fr_of.setdefault(f['site_id'], []).append(
            (f['function'], f['file'], f['line'], f['module'], f['address'], bool(f['inlined'])))
    # what the allocations table says of each site
    rows = {r['site_id']: r for r in query(
        rec, 'SELECT site_id, count(*) AS n, sum(size) AS bytes,'
             ' sum(free_s IS NULL) AS leaked, total(CASE WHEN free_s IS NULL THEN size END)'
             ' AS leaked_bytes, sum(temporary) AS temporary, count(free_s) AS frees,'
             ' min(size) AS min_size, max(size) AS max_size'
             ' FROM allocations GROUP BY site_id')}
    for pi, p in enumerate(rep['processes']):
        pid = p['pid']
        q = procs[pi] if pi < len(procs) else {}
        what = f'{name}: process {pi} (pid {pid})'
        for k in TOTAL_KEYS:
            t.eq(q.get(k), p['totals'][k], f'{what}: total {k}')
        t.eq(q.get('lost_events'), p['lost_events'], f'{what}: lost_events')
        t.eq(q.get('exe'), p['exe'], f'{what}: exe')
        t.eq(q.get('backend'), p['backend'], f'{what}: backend')
        t.eq(json.loads(q.get('argv') or 'null'), p['argv'], f'{what}: argv')
        t.eq(round(q.get('duration_s') or 0, 6), round(p['duration_s'], 6), f'{what}: duration_s')
        st = p.get('exit_status')
        t.eq((q.get('exit_status'), q.get('signal')),
             (None, None) if st is None else (st, None) if st >= 0 else (None, -st),
             f'{what}: exit_status and signal')
        want = sorted(((frames_key(s['frames']), tuple(s[k] for k in SITE_KEYS), s['allocator'],
                        s['allocator_object']) for s in p['sites']), key=repr)
        mine = [s for s in sites if s['process'] == pi]
        got = sorted(((tuple(fr_of.get(s['id'], [])), tuple(s[k] for k in SITE_KEYS),
                       s['allocator'], s['allocator_object']) for s in mine), key=repr)
        t.eq(len(got), len(want), f'{what}: number of sites')
        t.check(got == want, f'{what}: the sites table (figures and frames) differs from the '
                f'report\'s sites; first differences: '
                f'{[x for x in got if x not in want][:2]} vs {[x for x in want if x not in got][:2]}')
        # the allocations table adds up to the site figures
        totals = dict.fromkeys(('n', 'bytes', 'leaked', 'leaked_bytes', 'temporary', 'frees'), 0)
        for s in mine:
            r = rows.get(s['id'], {'n': 0, 'bytes': 0, 'leaked': 0, 'leaked_bytes': 0,
                                   'temporary': 0, 'frees': 0})
            culled = s['culled_allocations']
            t.eq(r['n'], s['allocations'] - culled, f'{what}: site {s["id"]}: rows')
            # a block never freed is a leak, or held by the C/C++ runtime
            t.eq(r['leaked'], s['leaked_allocations'] + s['runtime_held_allocations'],
                 f'{what}: site {s["id"]}: rows never freed')
            t.eq(int(r['leaked_bytes']), s['leaked_bytes'] + s['runtime_held_bytes'],
                 f'{what}: site {s["id"]}: bytes never freed')
            t.eq(r['frees'], s['frees'] - culled, f'{what}: site {s["id"]}: freed rows')
            if not culled:
                t.eq(r['bytes'] or 0, s['allocated_bytes'], f'{what}: site {s["id"]}: bytes')
                t.eq(r['temporary'] or 0, s['temporary_allocations'],
                     f'{what}: site {s["id"]}: temporary rows')
                if r['n']:
                    t.eq((r['min_size'], r['max_size']), (s['min_size'], s['max_size']),
                         f'{what}: site {s["id"]}: sizes')
            for k in totals:
                totals[k] += int(r[k] or 0)
        tot = p['totals']
        t.eq(totals['n'], tot['allocations'] - tot['culled_allocations'], f'{what}: rows in all')
        t.eq(totals['leaked'], tot['leaked_allocations'] + tot['runtime_held_allocations'],
             f'{what}: rows never freed in all')
        t.eq(totals['leaked_bytes'], tot['leaked_bytes'] + tot['runtime_held_bytes'],
             f'{what}: bytes never freed in all')
        if not tot['culled_allocations']:
            t.eq(totals['bytes'], tot['allocated_bytes'], f'{what}: bytes in all')
            t.eq(totals['temporary'], tot['temporary_allocations'], f'{what}: temporaries in all')
    # site ids: every allocation's site is a row of sites, every frame's too
    orphans = query(rec, 'SELECT (SELECT count(*) FROM allocations WHERE site_id NOT IN'
                         ' (SELECT id FROM sites)) AS a, (SELECT count(*) FROM frames WHERE'
                         ' site_id NOT IN (SELECT id FROM sites)) AS f')
    t.eq(orphans, [{'a': 0, 'f': 0}], f'{name}: allocations and frames name sites that exist')


for name, path in sorted(progs.items()):
    extra, opts = HOW.get(name, ([], []))
    rec, _ = t.record([path, *extra], opts=opts, out=t.path(name + '.mtrace'), expect_rc=None)
    if os.path.exists(rec):
        check_recording(name, rec)
    else:
        t.fail(f'{name}: no recording')

# ---- the command itself, on gt-peak: 14 allocations of its own sites ----
peak = t.path('peak.mtrace')
if 'peak' in progs and os.path.exists(peak):
    own = ('many_blocks', 'site_a', 'site_b', 'site_c', 'site_e')
    sql = ("SELECT f.function AS fn, count(*) AS n, sum(a.size) AS bytes,"
           " sum(a.free_s IS NULL) AS leaked FROM allocations a JOIN frames f"
           " ON f.site_id = a.site_id AND f.depth = 0"
           " WHERE f.function IN ('many_blocks', 'site_a', 'site_b', 'site_c', 'site_e')"
           " GROUP BY fn ORDER BY fn")
    want = [['many_blocks', 10, 10000, 4], ['site_a', 1, 100000, 0], ['site_b', 1, 50000, 1],
            ['site_c', 1, 90000, 0], ['site_e', 1, 11999, 0]]
    t.eq([[r['fn'], r['n'], r['bytes'], r['leaked']] for r in query(peak, sql)], want,
         'gt-peak: its own sites by function')

    # bounds on id narrow the virtual table's scan: the same rows as a scan
    # that SQLite filters itself (+id uses no index)
    for cond in ('id = 3', 'id BETWEEN 2 AND 4', 'id > 12', 'id >= 14', 'id < 1.5', 'id <= 0',
                 "id = 'x'", 'id > 5 AND id < 3', 'id = 2.5', 'id IN (1, 14, 99)', 'id > -1e300'):
        fast = query(peak, f'SELECT id, size FROM allocations WHERE {cond} ORDER BY id')
        slow = query(peak, f'SELECT id, size FROM allocations WHERE {cond.replace("id", "+id")}'
                           ' ORDER BY +id')
        t.eq(fast, slow, f'allocations WHERE {cond}')
    t.eq([r['id'] for r in query(peak, 'SELECT id FROM allocations WHERE id BETWEEN 2 AND 4')],
         [2, 3, 4], 'ids 2 to 4')

    # CSV
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'csv', peak, sql])
    t.eq(rc, 0, 'query --format csv: exit status')
    t.eq(list(csv.reader(io.StringIO(so))),
         [['fn', 'n', 'bytes', 'leaked']] + [[str(x) for x in r] for r in want],
         'query --format csv: rows')

    # the table format: a header, a rule, the rows
    rc, so, se = t.run([t.memtrace, 'query', peak, sql])
    lines = so.splitlines()
    t.eq(rc, 0, 'query (table): exit status')
    t.eq(lines[0].split(), ['fn', 'n', 'bytes', 'leaked'], 'query (table): header')
    t.eq([ln.split() for ln in lines[2:]], [[str(x) for x in r] for r in want], 'query (table): rows')

    # statements from standard input, two of them, one over two lines
    p = subprocess.run([t.memtrace, 'query', '--format', 'csv', peak],
                       input="SELECT count(*) AS n FROM allocations;\nSELECT sum(size)\n"
                             " AS b FROM allocations WHERE free_s IS NULL;\n",
                       capture_output=True, text=True, timeout=60)
    t.eq((p.returncode, p.stdout.split()), (0, ['n', '14', 'b', '54000']),
         'query: statements from standard input')
    # a failing statement on standard input stops the run, exit 1
    p = subprocess.run([t.memtrace, 'query', peak],
                       input="SELECT count(*) FROM allocations;\nSELECT nosuch FROM allocations;\n"
                             "SELECT 'not reached';\n",
                       capture_output=True, text=True, timeout=60)
    t.eq(p.returncode, 1, 'query: a bad statement on standard input: exit status')
    t.check('not reached' not in p.stdout, 'query: stops at the first bad statement')
    t.check('no such column: nosuch' in p.stderr, f'query: names the column: {p.stderr!r}')

    # bad statements: one line naming the problem, exit 1
    for bad, says in (('SELEC 1', 'syntax error'), ('SELECT * FROM nosuch', 'no such table: nosuch'),
                      ('SELECT size FROM allocations WHERE', 'incomplete input')):
        rc, so, se = t.run([t.memtrace, 'query', peak, bad])
        t.eq(rc, 1, f'query {bad!r}: exit status')
        t.eq(len(se.strip().splitlines()), 1, f'query {bad!r}: one line ({se!r})')
        t.check(says in se, f'query {bad!r}: says {says!r} ({se!r})')
    rc, so, se = t.run([t.memtrace, 'query', t.path('nosuch.mtrace'), 'SELECT 1'])
    t.eq(rc, 1, 'query of a missing file: exit status')
    t.check('nosuch.mtrace' in se, f'query of a missing file names it ({se!r})')
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'xml', peak, 'SELECT 1'])
    t.eq(rc, 2, 'query --format xml: usage error')

    # --where-only: the allocations a condition matches (site_b's block)
    rows = query(peak, 'size >= 50000 AND free_s IS NULL', '--where-only')
    t.eq([(r['size'], r['free_s']) for r in rows], [(50000, None)], '--where-only')
    rc, so, se = t.run([t.memtrace, 'query', '--where-only', peak, '1); DROP TABLE sites; (1'])
    t.eq(rc, 1, '--where-only with two statements: exit status')

    # on a terminal: a prompt, statements as they are typed, history (the
    # up arrow brings the last statement back), Ctrl-D ends
    import pty
    import select
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(t.memtrace, [t.memtrace, 'query', '--format', 'csv', peak])
    seen = b''

    def read_until(token, limit=30):
        global seen
        import time
        end = time.time() + limit
        while token not in seen and time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    break
        return token in seen

    t.check(read_until(b'memtrace> '), f'the prompt ({seen[-200:]!r})')
    os.write(fd, b'SELECT count(*) * 1000 + 7 AS x\r')
    t.check(read_until(b'...> '), f'a continuation prompt for an unfinished statement ({seen[-200:]!r})')
    os.write(fd, b'FROM allocations;\r')
    t.check(read_until(b'14007'), f'the statement ran at its semicolon ({seen[-200:]!r})')
    seen = seen.split(b'14007', 1)[-1]
    read_until(b'memtrace> ')
    seen = b''
    os.write(fd, b'\x1b[A\r')  # up arrow: the same statement again
    t.check(read_until(b'14007'), f'history: the up arrow brings it back ({seen[-200:]!r})')
    seen = seen.split(b'14007', 1)[-1]
    read_until(b'memtrace> ')
    os.write(fd, b'SELECT nosuch;\r')
    t.check(read_until(b'no such column'), f'a bad statement at the prompt is reported ({seen[-200:]!r})')
    # Ctrl-D only once the next prompt is up: between statements the
    # terminal is in cooked mode, where the kernel would take it
    seen = seen.split(b'no such column', 1)[-1]
    read_until(b'memtrace> ')
    os.write(fd, b'\x04')
    import time
    status = None
    for _ in range(300):
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(st)
            break
        time.sleep(0.1)
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    t.eq(status, 0, 'the prompt ends on Ctrl-D with status 0')
    os.close(fd)

    # --save: an ordinary SQLite file, read back by the sqlite3 program
    db = t.path('peak.db')
    rc, so, se = t.run([t.memtrace, 'query', '--save', db, peak])
    t.eq(rc, 0, f'query --save: exit status ({se.strip()!r})')
    if shutil.which('sqlite3') and os.path.exists(db):
        p = subprocess.run(['sqlite3', '-csv', db, sql.replace(' AS fn', ' AS fn')],
                           capture_output=True, text=True, timeout=60)
        t.eq([r for r in csv.reader(io.StringIO(p.stdout))],
             [[str(x) for x in r] for r in want], 'sqlite3 reads the saved database')
        p = subprocess.run(['sqlite3', db, 'SELECT count(*) FROM allocations;'
                            ' SELECT count(*) FROM sites; SELECT leaked_bytes FROM processes'],
                           capture_output=True, text=True, timeout=60)
        n_sites = query(peak, 'SELECT count(*) AS n FROM sites')
        t.eq(p.stdout.split(), ['14', str(n_sites[0]['n'] if n_sites else -1), '54000'],
             'sqlite3: the saved tables')
    else:
        t.fail('no sqlite3 program (tools/setup.sh installs it) or no saved file')

t.finish()
