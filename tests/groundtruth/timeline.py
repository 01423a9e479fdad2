"""Allocations at moments the program measures itself; see timeline.c.

Every recorded time must lie within the program's own clock readings around
the call, as the report gives it from the same start as the markers: times
right to half the recording's time step (2^20 ns by default, rounded to the
nearest: 0.52 ms, under the 1 ms the timeline needs; the coarse clock used
before moved in 4 ms steps), under `memtrace record` and standalone."""
import json

N = 200
# half the recording's time step (2^19 ns, 0.524 ms), the conversion of the
# CPU's counter to ns until its rate is measured over the run (the first is
# over 50 us: 0.1%, 20 us over the first 20 ms) and the report's rounding
SLACK = 0.000624


def parse(out):
    spread, summit = {}, None
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == 'spread':
            spread[int(f[1])] = (int(f[2]) * 1e-9, int(f[3]) * 1e-9)
        elif f and f[0] == 'summit':
            summit = [int(x) * 1e-9 for x in f[1:5]]
        elif f and f[0] == 'marker':
            m1 = int(f[2]) * 1e-9
    return m1, spread, summit


def check(t, rec, out, how):
    m1, spread, summit = parse(out)
    if not t.check(len(spread) == N and summit, f'{how}: the program printed its clock readings'):
        return
    p = t.only_process(t.report(rec))
    if p is None:
        return
    t.check_totals(p, label=f'{how} totals', allocations=N + 1, allocated_bytes=1000 * N + (1 << 20),
                   frees=N + 1, leaked_allocations=0, peak_bytes=1000 * N + (1 << 20),
                   peak_allocations=N + 1)
    t.check_no_loss(p, how)
    marks = {m.get('text'): m.get('time_s') for m in p.get('markers', [])}
    if not t.check('spread' in marks and 'summit' in marks, f'{how}: markers "spread" and "summit" '
                   f'({sorted(marks)})'):
        return
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'json', rec,
                        'SELECT alloc_s FROM allocations WHERE size = 1000 ORDER BY id'])
    times = [r['alloc_s'] for r in json.loads(so)] if rc == 0 else []
    if not t.eq(len(times), N, f'{how}: allocations of 1000 bytes in the query (stderr {se[-200:]!r})'):
        return
    bad = []
    for i, at in enumerate(times):
        lo, hi = spread[i][0] - m1 - SLACK, spread[i][1] + SLACK
        if not lo <= at - marks['spread'] <= hi:
            bad.append(f'#{i}: {(at - marks["spread"]) * 1e3:.4f} ms after the marker, '
                       f'expected {lo * 1e3:.4f} to {hi * 1e3:.4f}')
    t.check(not bad, f'{how}: each of the {N} spread allocations recorded within the program\'s own '
            f'clock readings around it ({len(bad)} outside: {bad[:3]})')
    # (each end off by up to SLACK)
    t.check(times[-1] - times[0] >= 0.0199 - 2 * SLACK,
            f'{how}: the spread allocations span {(times[-1] - times[0]) * 1e3:.3f} ms, by '
            f'construction at least 19.9 (less the time step)')
    s0, s1, p0, p1 = summit
    pt = p.get('totals', {}).get('peak_time_s')
    if t.check(isinstance(pt, (int, float)), f'{how}: peak_time_s is a number ({pt!r})'):
        lo, hi = p0 - s1 - SLACK, p1 - s0 + SLACK
        d = pt - marks['summit']
        t.check(lo <= d <= hi, f'{how}: the peak at {d * 1e3:.4f} ms after the "summit" marker, '
                f'expected {lo * 1e3:.4f} to {hi * 1e3:.4f} (the program\'s clock around its malloc)')


def run(t, prog):
    rec, out = t.record([prog])
    check(t, rec, out, 'record')
    rec = t.path('shim.mtrace')
    rc, out, se = t.run([prog], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': rec})
    if t.eq(rc, 0, f'standalone run (stderr {se.strip()[-300:]!r})'):
        check(t, rec, out, 'shim')
