"""export-folded: folded stacks (flamegraph.pl's input) of gt-peak and
gt-temporary, by every --weight, against the report of the same recording
and the figures peak.c and temporary.c derive."""

import exportlib

t, progs = exportlib.setup('export-folded')
peak, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
tmp, _ = t.record([progs['temporary']], out=t.path('temporary.mtrace'))


def folded(rec, *args):
    """{stack: weight} of the folded export; checks each line's form."""
    out = exportlib.export(t, rec, 'folded', *args)
    stacks = {}
    for line in (out or b'').decode().splitlines():
        stack, _, w = line.rpartition(' ')
        if not t.check(stack and w.isdigit() and int(w) > 0, f'folded {args}: bad line {line!r}'):
            continue
        t.check(stack not in stacks, f'folded {args}: stack twice: {stack}')
        stacks[stack] = int(w)
    return stacks


def leaf_total(stacks, fn):
    return sum(w for s, w in stacks.items() if s.split(';')[-1] == fn)


rep = t.report(peak)
proc = t.processes(rep, 1)[0] if rep else {'totals': {}}
tot = proc['totals']

s = folded(peak)
t.eq(sum(s.values()), tot.get('allocated_bytes'), 'weight bytes: sum = allocated bytes of the report')
for fn, want in (('many_blocks', 10000), ('site_a', 100000), ('site_b', 50000), ('site_c', 90000),
                 ('site_e', 11999)):
    t.eq(leaf_total(s, fn), want, f'weight bytes: {fn}')
t.check(any(st.endswith(';main;site_a') for st in s), 'site_a is called from main, outermost first')

s = folded(peak, '--weight', 'allocations')
t.eq(sum(s.values()), tot.get('allocations'), 'weight allocations: sum')
t.eq(leaf_total(s, 'many_blocks'), 10, 'weight allocations: many_blocks')

s = folded(peak, '--weight', 'leaked')
t.eq(sum(s.values()), tot.get('leaked_bytes'), 'weight leaked: sum')
t.eq(leaf_total(s, 'site_b') + leaf_total(s, 'many_blocks'), 54000, 'weight leaked: own sites')
t.eq(leaf_total(s, 'site_a'), 0, 'weight leaked: site_a was freed')

s = folded(peak, '--weight', 'peak')
t.eq(sum(s.values()), tot.get('peak_bytes'), 'weight peak: sum = peak of the report')
t.eq(leaf_total(s, 'many_blocks'), 6000, 'weight peak: many_blocks at the peak')
t.eq(leaf_total(s, 'site_a'), 100000, 'weight peak: site_a at the peak')
t.eq(leaf_total(s, 'site_c'), 0, 'weight peak: site_c came later')

# filters apply to exports as to reports
s = folded(peak, '--weight', 'leaked', '--size-min', '50000')
t.eq(s and sum(s.values()), 50000, 'weight leaked, --size-min 50000: site_b alone')

rt = t.report(tmp)
s = folded(tmp, '--weight', 'temporary')
if rt:
    t.eq(sum(s.values()), t.processes(rt, 1)[0]['totals']['temporary_allocations'], 'weight temporary: sum')
for fn, want in (('solo', 5), ('inner', 3), ('thr_block', 1)):
    t.eq(leaf_total(s, fn), want, f'weight temporary: {fn}')
t.check(not any(st.startswith('_start') and 'thr_block' in st for st in s),
        'the thread\'s stack starts at its own entry, not at _start')

t.finish()
