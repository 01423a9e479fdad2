"""server-query: the server's SQL, /data/<id>/query?sql=... and the "where"
parameter, on recordings of gt-peak and gt-temporary.

gt-peak (peak.c): 14 allocations, 5 of them leaked (54000 bytes); site_a
(100000), site_b (50000) and site_c (90000) are its only blocks of 50000
bytes or more.  The server runs with --timeout 4: a statement's budget is
half of it, 2 s.

  - answers: JSON (columns and rows) and CSV;
  - refusals: writes, ATTACH, PRAGMA, extension loading (403 naming them),
    bad SQL (400 with SQLite's words), more than 100,000 rows (400);
  - a runaway statement (a recursive CTE without end) is stopped by its
    time budget with 408, and, while it runs, other requests (a summary,
    another statement) are answered: they finish before it does;
  - where=SQL gives the report of the equivalent bytehound filter.
"""

import csv
import io
import json
import sys
import threading
import time
import urllib.error
import urllib.parse

import gtlib
import serverlib

t = gtlib.Case('server-query')
peak, _ = t.record([sys.argv[1]], out=t.path('peak.mtrace'))
temp, _ = t.record([sys.argv[2]], out=t.path('temporary.mtrace'))
proc, port = serverlib.start(t, [peak, temp], opts=['--timeout', '4'])
if proc is None:
    t.finish()
BASE = f'http://127.0.0.1:{port}'


def get(path, **params):
    """(status, content type, body as text) of GET PATH?PARAMS."""
    url = BASE + path + ('?' + urllib.parse.urlencode(params) if params else '')
    try:
        with serverlib.OPENER.open(url, timeout=120) as r:
            return r.status, r.headers.get('Content-Type', ''), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get('Content-Type', ''), e.read().decode()


def query(sql, rec=0, **params):
    return get(f'/data/{rec}/query', sql=sql, **params)


# ---- answers ----
st, ty, body = query('SELECT count(*) AS n, sum(size) AS b FROM allocations WHERE free_s IS NULL')
t.eq((st, json.loads(body) if st == 200 else body),
     (200, {'columns': ['n', 'b'], 'rows': [[5, 54000]]}), 'query: leaks of gt-peak')
st, ty, body = query('SELECT size FROM allocations WHERE size >= 50000 ORDER BY id', format='csv')
t.eq((st, ty.split(';')[0]), (200, 'text/csv'), 'query format=csv: status and type')
t.eq(list(csv.reader(io.StringIO(body))), [['size'], ['100000'], ['50000'], ['90000']],
     'query format=csv: rows')
st, ty, body = query("SELECT count(*) FROM frames WHERE function = 'site_b'")
t.eq((st, json.loads(body)['rows'] if st == 200 else body), (200, [[1]]), 'query: frames')

# ---- refusals ----
for sql, status, says in (
        ('DELETE FROM sites', 403, 'writing'),
        ('CREATE TEMP TABLE x(y)', 403, 'writing'),
        ("ATTACH 'other.db' AS o", 403, 'ATTACH'),
        ('PRAGMA table_info(sites)', 403, 'PRAGMA'),
        ("SELECT load_extension('/tmp/x')", 403, 'loading extensions'),
        ('SELEC 1', 400, 'syntax error'),
        ('SELECT nosuch FROM allocations', 400, 'no such column: nosuch'),
        ('SELECT 1; SELECT 2', 400, 'one statement'),
        ('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100001)'
         ' SELECT x FROM c', 400, 'more than 100000 rows')):
    st, ty, body = query(sql)
    t.eq(st, status, f'query {sql!r}: status')
    t.check(says in body, f'query {sql!r}: says {says!r} ({body!r})')
# the tables are still whole after all that
st, ty, body = query('SELECT count(*) FROM sites')
t.check(st == 200 and json.loads(body)['rows'][0][0] > 0, 'the sites table is intact')
st, ty, body = get('/data/0/query')
t.eq(st, 400, 'query without sql: status')

# ---- a runaway statement, and other requests meanwhile ----
order = []
runaway = {}


def run_away():
    runaway['answer'] = query('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)'
                              ' SELECT count(*) FROM c')
    order.append('runaway')


th = threading.Thread(target=run_away)
th.start()
# let the runaway statement start (it runs 2 s), then ask two other things
time.sleep(0.5)
other = get('/data/0/summary')
order.append('summary')
other2 = query('SELECT count(*) FROM allocations', rec=1)
order.append('query')
th.join(60)
t.eq(other[0], 200, 'a summary while the runaway runs')
t.eq(other2[0], 200, 'another statement while the runaway runs')
t.eq(order, ['summary', 'query', 'runaway'], 'the other requests end before the runaway one')
st, ty, body = runaway.get('answer', (None, '', ''))
t.eq(st, 408, 'the runaway statement: status')
t.check('time budget' in body, f'the runaway statement: says why ({body!r})')

# ---- where= beside bytehound's filters ----
for where, filt in (('size >= 50000', {'size_min': '50000'}),
                    ('free_s IS NULL', {'lifetime': 'only_leaked'})):
    a = get('/data/0/report', where=where)
    b = get('/data/0/report', **filt)
    t.check(a[0] == 200 and a == b, f'report where={where!r} equals {filt}: {a[0]} {b[0]}')
a = get('/data/0/allocations', where='size >= 50000')
t.eq((a[0], json.loads(a[2]).get('total_count') if a[0] == 200 else a[2]), (200, 3),
     'allocations where=size >= 50000')
st, ty, body = get('/data/0/report', where='nosuch > 1')
t.eq(st, 400, 'where with a bad column: status')
t.check('no such column: nosuch' in body, f'where with a bad column: says so ({body!r})')
st, ty, body = get('/data/0/report', where='size > 1 AND site_id IN (SELECT 1 FROM pragma_table_info(\'sites\'))')
t.eq(st, 403, f'where with a PRAGMA function: refused ({body!r})')

t.finish()
