"""record's leak gate (--fail-on-leak, --leak-exit-code, --suppressions) on
grow.c, whose leaks are known: with K = 3 it leaks 3 x 1,000 B from
leak_grows and 17 x 50 B from leak_shrinks (3,850 B in 20 blocks); with
"clean" nothing; with K = 99 it fails on its own (exit 3)."""


def run(t, prog):
    def gate(args, opts=(), want=None, what=''):
        rec = t.path('gate.mtrace')
        rc, so, se = t.run([t.memtrace, 'record', '-q', '-o', rec, *opts, '--', prog, *args], what='record')
        t.eq(rc, want, f'{what}: exit status (stderr {se[-300:]!r})')
        return se

    se = gate(['3'], ['--fail-on-leak'], 23, 'leaking, default gate')
    # (under an emulator no scan runs: every leaked block counts)
    lost = 'leaked' if t.emulated else 'definitely and indirectly lost'
    t.check(f'3.85 KB {lost} in 20 allocations' in se,
            f'the gate says how much leaked, by the leak scan ({se[:200]!r})')
    # the same blocks kept in the program's arrays: still reachable, which
    # the gate does not count where a scan ran (LeakSanitizer's rule) ...
    se = gate(['3', 'held'], ['--fail-on-leak'], 23 if t.emulated else 0, 'blocks still reachable at the end')
    # ... and counts where none did
    se = gate(['3', 'held'], ['--fail-on-leak', '--no-scan'], 23, 'still reachable, no scan')
    t.check('3.85 KB leaked in 20 allocations' in se, f'without a scan the gate counts every block ({se[:200]!r})')
    t.check('leak_grows' in se and 'leak_shrinks' in se, 'the gate prints the leak tree on stderr')
    gate(['3', 'clean'], ['--fail-on-leak'], 0, 'a clean run')
    gate(['3'], ['--fail-on-leak=3850'], 0, 'leaks of 3,850 B under a threshold of 3,850')
    gate(['3'], ['--fail-on-leak=3849'], 23, 'leaks of 3,850 B over a threshold of 3,849')
    gate(['3'], ['--fail-on-leak', '--leak-exit-code', '99'], 99, '--leak-exit-code 99')
    supp = t.path('all.supp')
    with open(supp, 'w') as f:
        f.write('# both leaking sites\nleak:leak_grows\nleak:^leak_shr*$\n')
    gate(['3'], ['--fail-on-leak', '--suppressions', supp], 0, 'every leak suppressed')
    part = t.path('part.supp')
    with open(part, 'w') as f:
        f.write('leak:leak_grows\n')
    se = gate(['3'], ['--fail-on-leak=849', '--suppressions', part], 23, 'one site suppressed, 850 B left')
    t.check(f'850 B {lost} in 17 allocations' in se and 'leak_grows' not in se,
            f'... the suppressed site is not in the report ({se[:300]!r})')
    gate(['99'], ['--fail-on-leak'], 3, "a program failing on its own keeps its status")
    gate(['3'], [], 0, 'no gate: a leaking program exits 0')
    rc, _, se = t.run([t.memtrace, 'record', '--suppressions', supp, '--', prog, '3'], what='record')
    t.eq(rc, 2, '--suppressions without --fail-on-leak: usage error')
    rc, _, se = t.run([t.memtrace, 'record', '--fail-on-leak', '--suppressions', t.path('none.supp'), '--',
                       prog, '3'], what='record')
    t.check(rc == 2 and 'none.supp' in se, f'a missing suppressions file: named, before the run ({rc}, {se!r})')
