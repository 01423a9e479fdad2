"""C++ names folded and text fitted to a width; see names.cpp."""
import fcntl
import os
import pty
import re
import struct
import subprocess
import termios

from gtlib import marker_line

SRC = 'names.cpp'
LEAKED = {'grow': 1000, 'less': 300, 'lambda': 201, 'descend': 700}
# a tree line's figures: "-> 45.43% (1.00 KB, 1x)"
FIGURES = re.compile(r'-> (-?[0-9.]+% \([^)]*\))')


def text(t, rec, *args, env=None):
    rc, so, se = t.run([t.memtrace, 'report', *args, rec], env=env, what='memtrace report')
    t.eq(rc, 0, f'exit status of memtrace report {" ".join(args)} (stderr: {se.strip()[-300:]!r})')
    return so


def too_long(out, width):
    return [len(line) for line in out.split('\n') if len(line) > width]


def run(t, prog):
    rec, _ = t.record([prog])
    rep = t.report(rec)
    p = t.only_process(rep)
    if p is None:
        return
    t.check_totals(p, allocations=5, allocated_bytes=sum(LEAKED.values()), frees=0,
                   leaked_allocations=5, leaked_bytes=sum(LEAKED.values()))
    # the JSON keeps every name whole
    names = {f.get('function') or '' for s in p['sites'] for f in s['frames']}
    longest = max(names, key=len)
    t.check(len(longest) > 1000 and 'std::__cxx11::basic_string<char' in longest,
            f'the JSON has the whole C++ names (longest: {len(longest)} columns)')
    grow = [n for n in names if n.startswith('gt::Table<std::map<')]
    t.eq(len(grow), 1, 'the JSON names gt::Table<...>::grow with its template arguments')

    # at 80 columns: every line fits, names folded, the deep chain shortened
    for args in (['--leaks'], ['--summary'], ['--peak', '--top-down'], ['--functions'],
                 ['--callers', 'main']):
        out = text(t, rec, *args, '--width', '80')
        t.eq(too_long(out, 80), [], f'report {" ".join(args)} --width 80: lines longer than 80')
        t.check('std::__cxx11' not in out, f'report {" ".join(args)} --width 80: template arguments folded')
    leaks = text(t, rec, '--leaks', '--width', '80')
    for want in ('gt::Table<>::grow(unsigned long)', 'bool gt::operator< <>(gt::Box<> const&,',
                 'gt::each<>(int)::{lambda(int)#1}::operator()(int)', 'void gt::descend<>(int)'):
        t.check(want in leaks, f'report --leaks --width 80 shows {want!r}')
    folded = re.search(r'-> \.\.\. (\d+) frames folded', leaks)
    if t.check(folded, 'report --leaks: the 128-frame chain of descend is shortened, the count said'):
        # 128 frames (the recorder's limit): descend's allocating frame,
        # then a chain of the 127 levels above it, four of them shown
        t.eq(int(folded.group(1)), 127 - 4, 'frames folded in the chain of descend')
    t.check(leaks.count('void gt::descend<>(int)') <= 8, 'the chain of descend takes a few lines')
    t.check(f'{SRC}:{marker_line(SRC, "site:descend")}' in leaks, 'the allocating frame of descend is shown')

    # whole names with --full-names; the same nodes with the same figures
    full = text(t, rec, '--leaks', '--full-names', '--width', '0')
    t.check(grow[0] in full, 'report --leaks --full-names shows the whole name of grow')
    t.check(max(len(line) for line in full.split('\n')) > 1000, 'report --full-names: lines of whole names')
    t.eq(FIGURES.findall(leaks), FIGURES.findall(full), 'figures of the tree at 80 columns and whole')
    t.eq(leaks.count('\n-> ') + leaks.count(' -> '), full.count('\n-> ') + full.count(' -> '),
         'tree nodes at 80 columns and whole')
    t.check('leaked: 2.20 KB in 5 allocations' in leaks, 'the tree\'s total')

    # the default width: unlimited in a pipe, $COLUMNS when set, the
    # terminal's on a terminal
    piped = text(t, rec, '--leaks', env={'COLUMNS': ''})
    t.check(too_long(piped, 80), 'report --leaks into a pipe: lines left whole')
    t.check('std::__cxx11' not in piped, 'report --leaks into a pipe: names folded')
    t.eq(too_long(text(t, rec, '--leaks', env={'COLUMNS': '60'}), 60), [],
         'report --leaks with COLUMNS=60: lines longer than 60')
    on_tty = terminal_report(t, rec, 50)
    t.check('-> 100.00% (2.20 KB, 5x): malloc' in on_tty, f'report on a terminal: {on_tty[:200]!r}')
    t.eq(too_long(on_tty, 50), [], 'report on a 50-column terminal: lines longer than 50')

    rc, _, se = t.run([t.memtrace, 'report', '--width', '5', rec])
    t.eq(rc, 2, f'--width 5: a usage error ({se.strip()!r})')


def terminal_report(t, rec, cols):
    """`memtrace report --leaks REC` on a pseudo-terminal COLS wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 24, cols, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # "\n" as written, not "\r\n"
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    env = dict(os.environ)
    env.pop('COLUMNS', None)
    p = subprocess.Popen([t.memtrace, 'report', '--leaks', rec], stdout=slave,
                         stderr=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b''
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    t.eq(p.wait(timeout=60), 0, 'exit status of memtrace report on a terminal')
    return out.decode(errors='replace')
