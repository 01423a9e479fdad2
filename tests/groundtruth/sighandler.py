"""A signal handler allocating at 1 kHz while main churns; see sighandler.c.

Usage: sighandler.py [shim] PROG; its bpf axis (run_bpf) checks the stacks
through the signal frame."""
from gtlib import marker_line, parse_kv

SRC = 'sighandler.c'


def run(t, *args):
    """run(t, PROG) under memtrace record; run(t, 'shim', PROG) under the
    standalone shim, whose thread compresses its full buffer with the lock
    held, so that many signals come while it holds it."""
    if args[0] == 'shim':
        prog = args[1]
        rec = t.path('shim.mtrace')
        rc, out, se = t.run([prog], env={'LD_PRELOAD': t.shim, 'MEMTRACE_OUTPUT': rec})
        t.eq(rc, 0, f'exit status under the standalone shim (stderr {se.strip()[-300:]!r})')
    else:
        prog = args[0]
        rec, out = t.record([prog])
    kv = parse_kv(out)
    n, c = kv.get('churn'), kv.get('calls')
    if not t.check(isinstance(n, int) and isinstance(c, int) and c >= 500,
                   f'the program printed its counts ({out!r})'):
        return
    t.note(f'{c} handler runs during {n} churn_once() calls')
    p = t.only_process(t.report(rec))
    if p is None:
        return
    t.check_no_loss(p)

    def total(fn, key):
        return sum(s.get(key, 0) for s in t.sites_of(p, fn))

    # A handler's stack runs through the signal frame into whatever it
    # interrupted, so one function has many sites: add them up.
    moved = sum(300 + (i & 1) * 300 for i in range(c))
    want = {
        'churn_once': dict(allocations=n, allocated_bytes=32 * n, frees=n, leaked_allocations=0),
        'handler_temp': dict(allocations=c, allocated_bytes=64 * c, frees=c, leaked_allocations=0,
                             temporary_allocations=c),
        'handler_keep': dict(allocations=c, allocated_bytes=200 * c, frees=0, leaked_allocations=c,
                             leaked_bytes=200 * c),
        'handler_move': dict(allocations=c, allocated_bytes=moved, frees=c, leaked_allocations=0),
    }
    for fn, figures in want.items():
        for key, v in figures.items():
            t.eq(total(fn, key), v, f'{fn}: "{key}" summed over its {len(t.sites_of(p, fn))} sites')
    for fn in ('handler_temp', 'handler_keep', 'handler_move'):
        for s in t.sites_of(p, fn)[:3]:
            t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)),
                                   ('on_alarm', SRC, marker_line(SRC, 'call:' + fn))])
    foreign = t.foreign_sites(p, prog)
    t.check_totals(p, extra=foreign, allocations=n + 3 * c, frees=n + 2 * c, leaked_allocations=c,
                   leaked_bytes=200 * c)
    t.check_sites_sum_to_totals(p)


def run_bpf(t, prog):
    """The bpf axis: the handler's allocations, their stacks unwound in the
    kernel through the signal frame (__restore_rt, whose ucontext holds the
    interrupted registers) into the code the signal interrupted, down to
    main.  Counts are not the shim's: a signal that lands inside main's own
    malloc or free makes the handler's calls nested in that call for the
    BPF backend, which leaves them to it (and so does not count them)."""
    rec, out = t.record([prog], opts=['--backend=bpf'])
    kv = parse_kv(out)
    c = kv.get('calls')
    if not t.check(isinstance(c, int) and c >= 500, f'the program printed its counts ({out!r})'):
        return
    p = t.only_process(t.report(rec))
    if p is None:
        return
    through = set()  # functions the handler's stacks run through, past on_alarm
    for fn in ('handler_temp', 'handler_keep', 'handler_move'):
        sites = t.sites_of(p, fn)
        total = sum(s.get('allocations', 0) for s in sites)
        t.check(0 < total <= c, f'{fn}: {total} allocations recorded, of {c} handler runs')
        for s in sites:
            t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)),
                                   ('on_alarm', SRC, marker_line(SRC, 'call:' + fn))])
            names = [f.get('function') for f in s.get('frames') or []]
            if t.check('main' in names[2:], f'{fn}: the stack runs through the signal frame '
                                            f'down to main: {names}'):
                through.update(names[2:names.index('main', 2)])
    # main's loop spends its time in churn_once (and the malloc and free it
    # calls): of 3 x 500 stacks, some were interrupted there
    t.check('churn_once' in through, f'stacks through the interrupted churn_once: {sorted(map(str, through))}')
