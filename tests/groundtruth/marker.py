"""Markers set by the program; see marker.c."""


def run(t, prog):
    for how in ('record', 'shim'):
        if how == 'record':
            rec, _ = t.record([prog])
        else:
            rec = t.path('shim.mtrace')
            rc, so, se = t.run([prog], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': rec})
            t.eq(rc, 0, f'standalone run (stderr {se.strip()[-300:]!r})')
        rep = t.report(rec)
        p = t.only_process(rep)
        if p is None:
            return
        m = p.get('markers', [])
        t.eq([(x.get('value'), x.get('text')) for x in m], [(1, 'one'), (2, 'two')], f'{how}: markers')
        if len(m) == 2:
            gap = m[1]['time_s'] - m[0]['time_s']
            t.check(0.045 <= gap < 5, f'{how}: "two" comes 50 ms after "one" (gap {gap:.3f} s)')
            t.check(0 <= m[0]['time_s'] <= p.get('duration_s', 0) + 0.01,
                    f'{how}: marker time within the run ({m[0]["time_s"]} of {p.get("duration_s")})')
        t.check_site(t.site(p, 'before'), f'{how} before', allocations=3, allocated_bytes=33)
        t.check_site(t.site(p, 'middle'), f'{how} middle', allocations=2, allocated_bytes=44)
