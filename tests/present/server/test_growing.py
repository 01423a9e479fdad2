"""A recording still being written, served: `memtrace server` shows what
it holds so far and loads it again as it grows.

  test_growing.py PHASES

PHASES (phases.c) allocates in two steps and waits between them until the
test says go: 100 allocations, 50 frees, 100,000 bytes first; 400
allocations, 350 frees, 700,000 bytes and 50 blocks (50,000 bytes) leaked
in the end.  The server is started on the file while `memtrace record` is
writing it.  Phase one must show in the server while the program waits
(the file is not finished: /list says it is growing), and the whole run
once it ends: the figures of phase one exactly, then the final ones, equal
to `memtrace report --json` of the finished file, under a higher generation.
The page of the recording, open in Chromium (tests/present/browser/growing.js)
while the program waits, shows phase one and then draws the whole run again
on its own.
"""

import json
import os
import subprocess
import sys
import time

import exportlib
import gtlib
import serverlib

phases = sys.argv[1]
t = gtlib.Case('server-growing')
go, rec = t.path('go'), t.path('growing.mtrace')


def get(port, path):
    try:
        with serverlib.OPENER.open(f'http://127.0.0.1:{port}{path}', timeout=60) as r:
            return r.status, json.loads(r.read())
    except Exception as x:  # an answer that is not 200 is a figure that is not there yet
        return None, str(x)


def snapshot(port):
    """(/list's entry, the process's totals) now, or (entry, None)."""
    st, listing = get(port, '/list')
    entry = listing[0] if st == 200 and listing else {}
    if entry.get('state') != 'ready':
        return entry, None
    st, summary = get(port, '/data/0/summary')
    procs = summary.get('processes', []) if st == 200 else []
    return entry, procs[0]['totals'] if len(procs) == 1 else None


def wait_for(port, allocations, what, timeout=60):
    """Polls until the server shows ALLOCATIONS allocations; the last
    (entry, totals) seen.  The counts seen on the way never go down."""
    deadline, seen = time.time() + timeout, []
    entry, totals = {}, None
    while time.time() < deadline:
        entry, totals = snapshot(port)
        if totals:
            seen.append(totals['allocations'])
            if totals['allocations'] >= allocations:
                break
        time.sleep(0.1)
    t.check(seen == sorted(seen), f'{what}: the allocations shown never go down ({seen[-20:]})')
    t.check(totals is not None and totals['allocations'] == allocations,
            f'{what}: the server shows {allocations} allocations '
            f'(last seen: {totals and totals["allocations"]}, {entry})')
    return entry, totals


recorder = subprocess.Popen([t.memtrace, 'record', '-q', '-o', rec, '--', phases, go],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
serverlib.SERVERS.append(recorder)  # never outlives the test
deadline = time.time() + 30
while time.time() < deadline and not (os.path.exists(rec) and os.path.getsize(rec) > 0):
    time.sleep(0.02)
t.check(os.path.exists(rec), 'memtrace record made its file')

proc, port = serverlib.start(t, [rec])
if proc is None:
    t.finish()

# ---- phase one, while the program waits: the file is not finished ----
entry, totals = wait_for(port, 100, 'phase one')
if totals:
    t.eq((totals['allocations'], totals['frees'], totals['allocated_bytes'],
          totals['leaked_allocations'], totals['leaked_bytes']),
         (100, 50, 100000, 50, 50000), 'phase one: allocations, frees, bytes, live blocks and bytes')
t.eq(entry.get('growing'), True, f'/list: the recording is growing ({entry})')
first_gen = entry.get('generation', 0)
t.check(first_gen >= 1, f'/list: a generation ({entry})')
t.eq(recorder.poll(), None, 'the program was still running (waiting) then')

# ---- phase two and the end: the page of the recording, open in Chromium,
# creates the go file and must draw the grown recording on its own ----
facts = exportlib.browser(t, 'growing.js', f'http://127.0.0.1:{port}', go,
                          t.path('gui-growing.png'))
if facts is None:
    open(go, 'w').close()  # (the failure is said: the rest goes on)
else:
    t.eq(facts.get('state'), 'ready', 'the page: drawn')
    t.eq(facts.get('first'), 100, 'the page: phase one\'s 100 allocations')
    t.eq(facts.get('last'), 400, 'the page: drawn again with the 400 of the whole run, on its own')
try:
    _, err = recorder.communicate(timeout=60)
    t.eq(recorder.returncode, 0, f'memtrace record: exit status ({err.strip()[-300:]!r})')
except subprocess.TimeoutExpired:
    t.fail('memtrace record did not end')
entry, totals = wait_for(port, 400, 'the end')
rep = t.report(rec)
want = t.only_process(rep)['totals'] if rep else {}
if totals:
    t.eq((totals['allocations'], totals['frees'], totals['allocated_bytes'],
          totals['leaked_allocations'], totals['leaked_bytes']),
         (400, 350, 700000, 50, 50000), 'the end: allocations, frees, bytes, leaked blocks and bytes')
    t.eq(totals, want, 'the end: the server\'s totals are the report\'s')
t.check(entry.get('generation', 0) > first_gen,
        f'/list: a later generation ({first_gen} then {entry.get("generation")})')
# the last load may still say growing if it read the file before the exit
# record came: the next look loads it again
deadline = time.time() + 30
while entry.get('growing') and time.time() < deadline:
    time.sleep(0.2)
    entry, _ = snapshot(port)
t.eq(entry.get('growing'), False, f'/list: the finished recording is no longer growing ({entry})')
t.eq(entry.get('file_size'), os.path.getsize(rec), '/list: the size of the whole file')

serverlib.stop(t, proc, sanitizer=False)
t.finish()
