"""Sampled recording (record --sample) against sites whose allocations are
known; see sampled.c.

At the default mean (512 KiB) each site's estimated calls and bytes must be
within 10% of the truth and the bytes in use at the exit within 15% (the
targets of the sampled mode).  Each estimate's spread (one standard
deviation) is 1 to 5% here (sampled.c says why the sizes are what they
are): eight seeds gave every figure within 8%, no bias beyond 1%.  The seed
is fixed (MEMTRACE_SAMPLE_SEED) so that the run is the same every time;
one whose figures all fall within 3% of the truth, so that an estimator
biased by a few percent fails.  --sample=0 records every call, exactly.
"""
import os
import re
import signal

from gtlib import marker_line

SRC = 'sampled.c'
MEAN = 512 * 1024
SEED = {'MEMTRACE_SAMPLE_SEED': '3'}

# site: (calls, bytes), mixed's from the program's own line
TRUTH = {
    'temps': (10_000_000, 640_000_000),
    'pages': (200_000, 819_200_000),
    'big': (1_000, 1_048_576_000),
    'grower': (40_000, 1_015_808_000),
    'leaky': (1_000_000, 256_000_000),
}
LEAKED = 256_000_000


def truth_of(t, out, d=1):
    """Each site's (calls, bytes) in a run of the program divided by D:
    TRUTH's, and mixed's from calls=N bytes=B, which the program prints."""
    truth = {fn: (c // d, b // d) for fn, (c, b) in TRUTH.items()}
    kv = dict(w.split('=', 1) for w in out.split() if '=' in w)
    if t.check('calls' in kv and 'bytes' in kv, f'gt-sampled prints calls= and bytes=: {out!r}'):
        truth['mixed'] = int(kv['calls']), int(kv['bytes'])
    return truth


def near_sites(t, p, truth, within, label, calls=True):
    """Each site of P within WITHIN of TRUTH: its bytes, and its calls."""
    for fn, (ncalls, nbytes) in truth.items():
        s = t.site(p, fn)
        if s is None:
            continue
        if calls:
            near(t, s.get('allocations'), ncalls, within, f'{label}{fn}: estimated calls')
        near(t, s.get('allocated_bytes'), nbytes, within, f'{label}{fn}: estimated bytes')


def pprof_period(path):
    """Profile.period (field 12, a varint) of the gzipped profile PATH."""
    import gzip
    b = gzip.open(path).read()
    i = 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7f) << shift
            shift += 7
            if c < 0x80:
                return v
    while i < len(b):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            v = varint()
            if field == 12:
                return v
        elif wire == 2:
            n = varint()  # (not i += varint(): i would be read before the call)
            i += n
        else:
            return None
    return None


def near(t, got, want, within, what):
    if not t.check(isinstance(got, int), f'{what}: {got!r} is a number'):
        return
    t.check(abs(got - want) <= within * want,
            f'{what}: {got:,} is {100 * (got - want) / want:+.1f}% from the truth {want:,} '
            f'(at most {within:.0%})')


def check_sampled(t, p, truth):
    t.eq(p.get('sampled'), {'mean_bytes': MEAN}, 'sampled: the mean of the recording')
    tot = p.get('totals', {})
    t.eq(tot.get('unmatched_frees'), 0, 'unmatched frees (every sampled block\'s free is recorded)')
    near_sites(t, p, truth, 0.10, '')
    for fn in truth:
        s = t.site(p, fn)
        if s is not None:
            t.check_frames(s, fn, [(fn, SRC, marker_line(SRC, 'site:' + fn)), ('main', SRC, None)])
    # a block freed after other calls is no temporary: the calls left out
    # in between say they came (a free of no block, figures.c)
    for fn in ('pages', 'mixed'):
        s = t.site(p, fn)
        if s is not None:
            t.eq(s.get('temporary_allocations'), 0, f'{fn}: temporary allocations (freed later)')
    s = t.site(p, 'temps')
    if s is not None:
        near(t, s.get('temporary_allocations'), 10_000_000, 0.10, 'temps: estimated temporaries')
    # in use at the exit: leaky's blocks alone, and what the scan calls them
    near(t, tot.get('leaked_bytes'), LEAKED, 0.15, 'estimated bytes in use at the exit')
    near(t, tot.get('leaked_allocations'), 1_000_000, 0.15, 'estimated blocks in use at the exit')
    s = t.site(p, 'leaky')
    if s is not None:
        near(t, s.get('leaked_bytes'), LEAKED, 0.15, 'leaky: estimated bytes leaked')
        # the unsampled blocks are roots: never a false leak, and leaky's
        # blocks, which nothing points at, are lost all the same
        near(t, s.get('definite_bytes'), LEAKED, 0.15, 'leaky: estimated bytes definitely lost')


def run_bpf(t, prog):
    """The BPF backend, sampled in the kernel: an eighth of the program at
    an eighth of the mean (as many samples as the shim's case has; its
    probes trap on every call).  Its draws cannot be seeded: the bounds are
    four spreads, 20%."""
    import bpflib
    why = bpflib.bpf_unavailable()
    if why:
        t.fail(f'BPF unavailable: {why}')
        return
    rec, out = t.record([prog, '8'], opts=['--backend=bpf', '--sample=64K'], timeout=300)
    truth = truth_of(t, out, 8)
    p = t.only_process(t.report(rec))
    if p is None:
        return
    t.eq(p.get('backend'), 'bpf', 'the backend')
    t.eq(p.get('sampled'), {'mean_bytes': 64 * 1024}, 'sampled: the mean of the recording')
    t.eq(p.get('totals', {}).get('unmatched_frees'), 0, 'unmatched frees')
    near_sites(t, p, truth, 0.20, 'bpf ')
    for fn in ('pages', 'mixed'):
        s = t.site(p, fn)
        if s is not None:
            t.eq(s.get('temporary_allocations'), 0, f'bpf {fn}: temporary allocations (freed later)')
    near(t, p.get('totals', {}).get('leaked_bytes'), LEAKED // 8, 0.20,
         'bpf: estimated bytes in use at the exit')
    attach_sampled(t, prog, truth)


def attach_sampled(t, prog, truth):
    """memtrace -p PID --sample: the kernel's own figures (its maps, the
    report attach prints) and the recording it writes (-o), both estimates
    of the same eighth of the program."""
    import subprocess
    p = subprocess.Popen([prog, '8', 'wait'], stdout=subprocess.PIPE, text=True)
    try:
        t.eq(p.stdout.readline().strip(), 'ready', 'gt-sampled waits for SIGUSR1')
        out = t.path('attach.mtrace')
        m = subprocess.Popen([t.memtrace, '-p', str(p.pid), '--sample=64K', '--interval', '0',
                              '--no-scan', '-o', out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        line = m.stderr.readline()
        t.check('attached' in line, f'memtrace -p says when it is attached ({line!r})')
        p.send_signal(signal.SIGUSR1)
        p.wait(timeout=120)
        so, se = m.communicate(timeout=120)
        t.eq(m.returncode, 0, f'memtrace -p --sample (stderr {se[-400:]!r})')
        # the maps' figures: "~leaked: 32.0 MB in 125,000 allocations"
        got = re.search(r'~leaked: [\d.]+ \w?B in ([\d,]+) allocations', so)
        if t.check(got is not None, f'attach prints its leaks as an estimate (~leaked): {so[-600:]!r}'):
            near(t, int(got.group(1).replace(',', '')), 1_000_000 // 8, 0.20,
                 'attach: estimated blocks leaked (the kernel\'s maps)')
        rep = t.report(out)
        q = t.only_process(rep)
        if q is None:
            return
        t.eq(q.get('sampled'), {'mean_bytes': 64 * 1024}, 'attach -o: sampled, the mean')
        near_sites(t, q, truth, 0.20, 'attach -o ', calls=False)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def run(t, prog):
    rec = t.path('rec.mtrace')
    rc, out, err = t.run([t.memtrace, 'record', '-o', rec, '--sample', '--', prog], env=SEED,
                         timeout=300, what='memtrace record --sample')
    t.eq(rc, 0, f'memtrace record --sample (stderr {err[-300:]!r})')
    # the scan's line counts the sampled blocks alone, and says so
    t.check('leak scan of process ' in err and
            '(its sampled blocks alone: the report estimates the whole)' in err,
            f'the leak scan\'s line says it counts the sampled blocks alone: {err[-500:]!r}')
    truth = truth_of(t, out)
    size = os.path.getsize(rec) if os.path.exists(rec) else None
    t.check(size is not None and size < 2_000_000,
            f'a sampled recording of 11 million allocations is small: {size} bytes (under 2 MB)')
    p = t.only_process(t.report(rec))
    if p is not None:
        check_sampled(t, p, truth)
    # the text says every figure is an estimate
    rc, txt, se = t.run([t.memtrace, 'report', rec], what='memtrace report')
    t.check(rc == 0 and 'sampled:         one allocation per 512 KiB allocated' in txt
            and 'allocations:     ~' in txt and '  ~' in txt.split('MOST CALLS')[-1],
            f'the text report says the figures are estimates (~): {txt[:600]!r} {se[-200:]!r}')

    # the exports and diff say so too: pprof's period is the mean (its
    # values are estimates already, as Go's heap profiles' are)
    pb = t.path('s.pb.gz')
    rc, _, se = t.run([t.memtrace, 'export', '-f', 'pprof', '-o', pb, rec], what='memtrace export')
    if t.eq(rc, 0, f'export -f pprof (stderr {se[-300:]!r})'):
        t.eq(pprof_period(pb), MEAN, 'pprof: period (Profile field 12) is the mean')
    rc, txt, se = t.run([t.memtrace, 'diff', rec, rec], what='memtrace diff')
    t.check(rc == 0 and '(sampled: every figure of a sampled recording is an estimate)' in txt,
            f'diff says the figures are estimates: {txt[:300]!r}')

    # --sample=0: every call, exactly (as without the option)
    rec0, out0 = t.record([prog], opts=['--sample=0'], out=t.path('all.mtrace'), timeout=300)
    p = t.only_process(t.report(rec0))
    exact = truth_of(t, out0)
    if p is not None:
        t.eq(p.get('sampled'), None, '--sample=0: not sampled')
        for fn, (calls, nbytes) in exact.items():
            t.check_site(t.site(p, fn), f'--sample=0 {fn}', allocations=calls, allocated_bytes=nbytes)

    # what --sample refuses, in one line each
    for opts, says in ((['--sample=lots'], "--sample takes a mean in bytes"),
                       (['--sample=2T'], "at most 1T"),
                       (['--sample', '--cull-temporary'], 'cannot go together')):
        rc, _, se = t.run([t.memtrace, 'record', '-o', t.path('x.mtrace'), *opts, '--', prog],
                          what='memtrace record')
        first = se.strip().splitlines()[0] if se.strip() else ''
        t.check(rc == 2 and says in first and first.startswith('memtrace: error:'),
                f'record {" ".join(opts)}: exit 2, an error line saying {says!r}: {rc} {se!r}')
