"""Markers set by the program; see marker.c."""
from gtlib import records


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
        # the order of things, never how long they took (that depends on
        # the machine's load): "two" after "one", both within the run
        if len(m) == 2:
            t.check(0 <= m[0]['time_s'] < m[1]['time_s'],
                    f'{how}: "two" ({m[1]["time_s"]} s) comes after "one" ({m[0]["time_s"]} s)')
            t.check(m[0]['time_s'] <= p.get('duration_s', -1) + 1e-6,
                    f'{how}: marker time within the run ({m[0]["time_s"]} of {p.get("duration_s")})')
        if how == 'shim':
            # the stream itself: the 3 x 11 bytes before "one", the
            # 2 x 22 between "one" and "two" (ALLOC: tsdelta, size, ...)
            seq = [f[1] if typ == 1 else f[2].decode() for typ, f in records(rec) if typ in (1, 8)]
            own = [x for x in seq if x in (11, 22, 'one', 'two')]
            t.eq(own, [11, 11, 11, 'one', 22, 22, 'two'], f'{how}: allocations and markers in order')
        t.check_site(t.site(p, 'before'), f'{how} before', allocations=3, allocated_bytes=33)
        t.check_site(t.site(p, 'middle'), f'{how} middle', allocations=2, allocated_bytes=44)
