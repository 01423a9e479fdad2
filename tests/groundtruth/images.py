"""The images of a wrapper chain, as the reports show them: a shell script
that execs env, which execs gt-peak (peak.c, its figures exact), is three
images of one pid (sh, env, gt-peak), recorded without --follow-forks.

The text report shows gt-peak's image alone, with its figures, then names
sh and env on a line each (image number, name, allocations, the exec that
replaced it); --image N or NAME shows the ones it names in full,
--all-images every one; the JSON report lists all three with their image
numbers and "main" on gt-peak's.  export --image picks the image of a
one-process format (massif).

The preload axis records with the default backend (the shim); the bpf axis
(run_bpf, gt-images-bpf) with --backend=bpf, where gt-peak's totals are
exact (its stacks differ: no frame pointers).

Usage: images.py PROG (gt-peak)"""
import json
import os
import re

import peak


def chain_script(t, prog):
    path = t.path('wrapped.sh')
    with open(path, 'w') as f:
        f.write(f'#!/bin/sh\nexec env "{prog}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def text(t, rec, *args, expect_rc=0):
    rc, so, se = t.run([t.memtrace, 'report', *args, rec], what='memtrace report')
    t.eq(rc, expect_rc, f'report {" ".join(args)}: exit status (stderr {se.strip()[-300:]!r})')
    return so, se


def headers(so):
    return [ln for ln in so.splitlines() if ln.startswith('process ')]


def check_chain(t, prog, label, opts, exact):
    rec, _ = t.record([chain_script(t, prog)], opts=opts, out=t.path(f'{label}.mtrace'))
    procs = t.processes(t.report(rec), 3)
    if len(procs) != 3:
        return
    t.eq([p.get('name') for p in procs], ['sh', 'env', 'gt-peak'], f'{label}: the images, in start order')
    t.eq([p.get('image') for p in procs], [1, 2, 3], f'{label}: their "image" numbers')
    t.eq([p.get('main') for p in procs], [False, False, True], f'{label}: "main" on gt-peak\'s alone')
    pid = procs[2].get('pid')
    t.eq({p.get('pid') for p in procs}, {pid}, f'{label}: one pid')

    # query's process column numbers them from 0
    rc, so, se = t.run([t.memtrace, 'query', '--format', 'json', rec,
                        'select process, exe from processes order by process'], what='memtrace query')
    rows = json.loads(so) if rc == 0 else []
    t.eq([(r.get('process'), r.get('exe')) for r in rows], [(p['image'] - 1, p['exe']) for p in procs],
         f'{label}: query\'s process is the image number less 1 ({se.strip()!r})')

    # the default text: gt-peak alone, with its figures, the others named
    so, _ = text(t, rec)
    t.eq(headers(so), [h for h in headers(so) if h.startswith(f'process {pid} (gt-peak, main): ')],
         f'{label}: the text report\'s only process is gt-peak\'s')
    t.eq(len(headers(so)), 1, f'{label}: one process in full ({headers(so)})')
    main_part, _, others = so.partition('\nalso recorded (')
    t.check('allocations:     14 (262 KB)' in main_part and
            'leaked:          54.0 KB in 5 allocations' in main_part,
            f'{label}: gt-peak\'s totals in the text report ({main_part[:600]!r})')
    lines = [ln.strip() for ln in others.splitlines()[1:] if ln.strip()]
    t.eq(len(lines), 2, f'{label}: one line for each other image ({lines})')
    for n, p, then in ((1, procs[0], 'env'), (2, procs[1], os.path.basename(prog))):
        line = next((ln for ln in lines if ln.startswith(f'image {n}: ')), '')
        allocs = p.get('totals', {}).get('allocations')
        t.check(line.startswith(f'image {n}: process {pid} ({p.get("name")}): {p.get("exe")}, '
                                f'{allocs:,} allocation'),
                f'{label}: image {n} named with its {allocs} allocations ({line!r})')
        t.check(re.search(r', replaced by exec of \S*' + re.escape(then) + '$', line),
                f'{label}: image {n} replaced by exec of {then} ({line!r})')

    # --image: by number or by name, in full and alone
    for sel, name in (('2', 'env'), ('env', 'env'), ('/usr/bin/env', 'env'), ('1', 'sh')):
        so, _ = text(t, rec, '--image', sel)
        t.eq([h.split(':')[0] for h in headers(so)], [f'process {pid} ({name})'],
             f'{label}: --image {sel} shows {name}\'s image alone')
        t.check('also recorded' not in so, f'{label}: --image {sel} names no other image')
        rep = t.report(rec, ['--image', sel])
        t.eq([p.get('name') for p in t.processes(rep)], [name], f'{label}: --image {sel} --json')
    main = t.only_process(t.report(rec, ['--image', 'gt-peak', '--pid', str(pid)]))
    if exact:
        peak.check_process(t, main, f'{label} --image gt-peak')
    elif main:
        t.check_totals(main, label=f'{label} --image gt-peak totals', **peak.TOTALS)
        t.check_no_loss(main, label)
    so, _ = text(t, rec, '--all-images')
    t.eq([h.split(':')[0] for h in headers(so)],
         [f'process {pid} (sh)', f'process {pid} (env)', f'process {pid} (gt-peak, main)'],
         f'{label}: --all-images shows every image in full, in start order')
    _, se = text(t, rec, '--image', '9', expect_rc=1)
    t.check('has no image 9' in se, f'{label}: --image 9 names no image ({se.strip()!r})')
    _, se = text(t, rec, '--image', 'env', '--pid', str(pid + 1), expect_rc=1)
    t.check(f"has no image named 'env' of process {pid + 1}" in se, f'{label}: --image env --pid other ({se!r})')
    _, se = text(t, rec, '--image', '1', '--all-images', expect_rc=2)

    # export: the one process of massif, the main one unless --image says
    for args, cmd in (((), os.path.basename(prog)), (('--image', 'env'), 'env ')):
        out = t.path(f'{label}.massif')
        rc, _, se = t.run([t.memtrace, 'export', '-f', 'massif', '-o', out, *args, rec], what='memtrace export')
        t.eq(rc, 0, f'{label}: export massif {args}: exit status ({se.strip()!r})')
        with open(out) as f:
            cmdline = next((ln for ln in f if ln.startswith('cmd: ')), '')
        t.check(cmd in cmdline, f'{label}: export massif {args} holds {cmd.strip()} ({cmdline.strip()!r})')
    rc, _, se = t.run([t.memtrace, 'export', '-f', 'massif', '--image', 'nosuch', rec], what='memtrace export')
    t.check(rc == 1 and "has no image named 'nosuch'" in se, f'{label}: export --image nosuch ({rc}, {se!r})')


def run(t, prog):
    check_chain(t, prog, 'shim', (), True)


def run_bpf(t, prog):
    check_chain(t, prog, 'bpf', ('--backend=bpf',), False)
