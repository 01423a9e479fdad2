"""replay.py - the figures of a ground-truth program, from its events.

Where a program's events interleave (reallocs that free one site's block
and allocate another's, frees in a different order), its figures are
easier to get right by replaying the events the program makes, listed in
its NAME.py in the order its NAME.c makes them, than by hand:

    ev = [('alloc', 'do_a', 'a0', 100), ('realloc', 'do_b', 'a0', 'b0', 200),
          ('free', 'b0')]
    totals, sites = replay(ev)

Figures as memtrace reports them (man/memtrace-report.1): a realloc is one
allocation (of its site) and one free (of the old block's site); the peak is
the first moment live bytes are highest, and each site's peak figures are
what it had live then.  Temporaries are not computed: the programs are
written to have none.
"""


def replay(events):
    live = {}    # key -> (site, size)
    sites = {}   # site -> figures
    cur = peak = count = peak_count = 0
    peak_live = {}

    def site(name):
        return sites.setdefault(name, dict(allocations=0, allocated_bytes=0, frees=0))

    def alloc(s, key, size):
        nonlocal cur, count
        live[key] = (s, size)
        f = site(s)
        f['allocations'] += 1
        f['allocated_bytes'] += size
        cur += size
        count += 1

    def free(key):
        nonlocal cur, count
        s, size = live.pop(key)
        site(s)['frees'] += 1
        cur -= size
        count -= 1

    for e in events:
        if e[0] == 'alloc':
            alloc(e[1], e[2], e[3])
        elif e[0] == 'free':
            free(e[1])
        elif e[0] == 'realloc':
            free(e[2])
            alloc(e[1], e[3], e[4])
        else:
            raise ValueError(e)
        if cur > peak:
            peak, peak_count = cur, count
            peak_live = dict(live)
    for s, f in sites.items():
        f['leaked_allocations'] = sum(1 for v in live.values() if v[0] == s)
        f['leaked_bytes'] = sum(v[1] for v in live.values() if v[0] == s)
        f['peak_allocations'] = sum(1 for v in peak_live.values() if v[0] == s)
        f['peak_bytes'] = sum(v[1] for v in peak_live.values() if v[0] == s)
    totals = dict(
        allocations=sum(f['allocations'] for f in sites.values()),
        frees=sum(f['frees'] for f in sites.values()),
        allocated_bytes=sum(f['allocated_bytes'] for f in sites.values()),
        peak_bytes=peak, peak_allocations=peak_count,
        leaked_allocations=len(live), leaked_bytes=sum(v[1] for v in live.values()),
        temporary_allocations=0, unmatched_frees=0)
    return totals, sites
