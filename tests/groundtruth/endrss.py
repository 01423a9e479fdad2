"""Resident memory at the end is a sample taken at the process's exit, not
the last periodic one; see endrss.c.  The bpf axis (run_bpf) records the
same program through the BPF backend, which stops it at its exit too."""

MIB32 = 32 << 20


def check(t, opts, label):
    rec, out = t.record([t.prog], opts=['--rss-interval', '5000', *opts])
    t.check('endrss: touched' in out, f'{label}: the program ran to its end (stdout {out!r})')
    p = t.only_process(t.report(rec))
    if p is None:
        return
    mem = p.get('memory') or {}
    t.check(mem.get('samples', 0) >= 2, f'{label}: a sample at the start and one at the exit ({mem})')
    t.check((mem.get('rss_anon_bytes') or 0) >= MIB32,
            f'{label}: anonymous memory resident at the end holds the 32 MiB written last '
            f'({mem.get("rss_anon_bytes")})')
    t.check((mem.get('end_s') or 0) >= 0.2,
            f'{label}: the end\'s sample is taken after the 200 ms the mapping stays untouched '
            f'({mem.get("end_s")})')
    t.check((mem.get('peak_rss_bytes') or 0) >= MIB32,
            f'{label}: the resident peak holds the 32 MiB ({mem.get("peak_rss_bytes")})')


def run(t, prog):
    t.prog = prog
    check(t, [], 'shim')


def run_bpf(t, prog):
    t.prog = prog
    check(t, ['--backend=bpf'], 'bpf')
