"""Deep recursions; see deep.c."""
from gtlib import marker_line

SRC = 'deep.c'
MAX_FRAMES = 128  # the shim's stack depth limit (MT_MAX_FRAMES in src/format/codec.h)
BPF_MAX_FRAMES = 127  # the BPF unwinder's (MTB_MAX_FRAMES in bpf/memtrace.h)


def run(t, prog):
    _, p = t.record_process([prog])
    if p is None:
        return
    t.check_no_loss(p)
    check_sites(t, p)


def run_bpf(t, prog):
    """The bpf axis: the kernel unwinds the same whole stacks from the unwind
    tables (no frame pointers here); the one deeper than its limit is cut at
    BPF_MAX_FRAMES frames, marked "[truncated]" and counted as such."""
    _, p = t.record_process([prog], opts=['--backend=bpf'])
    if p is None:
        return
    t.eq(p.get('backend'), 'bpf', 'backend')
    lost = p.get('lost_by_kind', {})
    t.eq(lost.get('stack_truncated'), 1, 'lost_by_kind.stack_truncated: the depth-200 stack')
    t.eq({k: v for k, v in lost.items() if k != 'stack_truncated' and v}, {}, 'no other loss')
    t.eq(p['totals'].get('unmatched_frees'), 0, 'totals "unmatched_frees"')
    check_sites(t, p, truncated=True)


def check_sites(t, p, truncated=False):
    """The figures and frames of the three sites; TRUNCATED: the deep one
    ends with the "[truncated]" marker after BPF_MAX_FRAMES frames."""
    t.check_totals(p, allocations=3, allocated_bytes=505 + 560 + 700, frees=0, leaked_allocations=3,
                   leaked_bytes=505 + 560 + 700, peak_bytes=505 + 560 + 700)
    t.eq(len(p.get('sites', [])), 3, 'number of sites')
    leaf, rec_line = marker_line(SRC, 'site:deep_leaf'), marker_line(SRC, 'call:recurse')
    for d in (5, 60, 200):
        size = 500 + d
        s = t.site(p, 'deep_leaf', pred=lambda x: x.get('min_size') == size, desc=f'deep_leaf ({size} bytes)')
        t.check_site(s, f'depth {d}', allocations=1, allocated_bytes=size, leaked_allocations=1)
        if s is None:
            continue
        names = [f.get('function') for f in s['frames']]
        if d + 3 <= MAX_FRAMES:
            want = [(('deep_leaf', SRC, leaf)), ('descend', SRC, marker_line(SRC, 'call:leaf'))] + \
                   [('descend', SRC, rec_line)] * d + [('main', SRC, marker_line(SRC, f'call:d{d}'))]
            t.check_frames(s, f'depth {d}', want)
        elif truncated:
            t.eq(len(names), BPF_MAX_FRAMES + 1, f'depth {d}: frames (the limit, then the marker)')
            t.eq(names[-1], '[truncated]', f'depth {d}: the last frame is the truncation marker')
            t.eq(names[0], 'deep_leaf', f'depth {d}: frames[0].function')
            t.eq(set(names[1:-1]), {'descend'}, f'depth {d}: functions of frames[1..] (a cut stack)')
            t.eq([f.get('line') for f in s['frames'][2:-1]], [rec_line] * (len(s['frames']) - 3),
                 f'depth {d}: lines of frames[2..]')
        else:
            t.check(MAX_FRAMES - 8 <= len(names) <= MAX_FRAMES,
                    f'depth {d}: {len(names)} frames, expected the stack cut at about {MAX_FRAMES}')
            t.eq(names[0], 'deep_leaf', f'depth {d}: frames[0].function')
            t.eq(set(names[1:]), {'descend'}, f'depth {d}: functions of frames[1..] (a cut stack)')
            if len(s['frames']) > 2:
                t.eq([f.get('line') for f in s['frames'][2:]], [rec_line] * (len(s['frames']) - 2),
                     f'depth {d}: lines of frames[2..]')
