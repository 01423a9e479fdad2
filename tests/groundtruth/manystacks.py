"""More distinct stacks than the BPF backend's stack map holds; see
manystacks.c."""
from gtlib import marker_line

SRC = 'manystacks.c'
LEVELS = 12
COUNT = 1 << LEVELS
BYTES = 16 * COUNT + COUNT * (COUNT - 1) // 2  # 8,452,096


def run(t, prog, opts=()):
    _, p = t.record_process([prog], opts=list(opts))
    if p is None:
        return
    t.check_no_loss(p)
    t.check_totals(p, allocations=COUNT, allocated_bytes=BYTES, frees=0, leaked_allocations=COUNT,
                   leaked_bytes=BYTES, peak_bytes=BYTES)
    sites = [s for s in p.get('sites', []) if (s.get('frames') or [{}])[0].get('function') == 'leaf']
    t.eq(len(sites), COUNT, 'sites whose innermost frame is leaf')
    by_size = {s.get('min_size'): s for s in sites}
    missing = [n for n in range(16, 16 + COUNT) if n not in by_size]
    t.eq(missing[:5], [], f'sizes 16..4111 without a site of their own ({len(missing)} of {COUNT})')
    leaf_line = marker_line(SRC, 'site:leaf')
    bad = []
    for i in range(COUNT):
        s = by_size.get(16 + i)
        if s is None:
            continue
        names = [f.get('function') for f in s.get('frames', [])]
        # leaf, the branches chosen by bits 11..0, main; step is inlined
        # into each caller and named as a frame of its own
        want = ['leaf']
        for k in range(LEVELS - 1, -1, -1):
            want += ['step', 'branch_b' if (i >> k) & 1 else 'branch_a']
        want += ['step', 'main']
        if names[:len(want)] != want or s.get('allocations') != 1 or s['frames'][0].get('line') != leaf_line:
            bad.append((i, names[:len(want) + 1], s.get('allocations')))
    t.eq(bad[:3], [], f'sites whose frames or count are wrong ({len(bad)} of {COUNT})')


def run_bpf(t, prog):
    """The BPF backend with a stack map of 512: the recorder reads and
    empties it whenever the programs have filled half of it, so that none
    of the 4096 stacks is lost (before, all but the first 512 were: the
    kernel never replaces a stack in its map)."""
    run(t, prog, ['--backend=bpf', '--max-stacks', '512'])
