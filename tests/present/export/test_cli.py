"""export-cli: `memtrace export`'s command line: --help, usage errors (exit 2)
and runtime errors (exit 1), each one line naming the option or file at
fault; -o writes the file whole or not at all."""

import os

import exportlib

t, progs = exportlib.setup('export-cli')
rec, _ = t.record([progs['peak']], out=t.path('peak.mtrace'))
FORMATS = ('heaptrack', 'folded', 'svg', 'pprof', 'massif', 'gprof2dot', 'speedscope', 'json', 'html')

rc, so, se = t.run([t.memtrace, 'export', '--help'])
t.eq(rc, 0, 'export --help: exit status')
for f in FORMATS:
    t.check(f'  {f} ' in so, f'export --help lists the format {f}')
t.check('--lifetime' in so and '--function-regex' in so, 'export --help lists the filters')
rc, so, _ = t.run([t.memtrace, '--help'])
t.check('export' in so, 'memtrace --help lists export')


def one_error(argv, rc_want, needle, what):
    rc, so, se = t.run(argv)
    t.eq(rc, rc_want, f'{what}: exit status')
    lines = [ln for ln in se.splitlines() if ln.startswith('memtrace: error:')]
    t.check(len(lines) == 1 and needle in lines[0], f'{what}: one error line naming {needle!r}, got {se!r}')
    t.eq(so, '', f'{what}: nothing on standard output')


M = t.memtrace
one_error([M, 'export', rec], 2, '--format', 'no --format')
one_error([M, 'export', '--format', 'png', rec], 2, 'png', 'unknown format')
one_error([M, 'export', '--format', 'folded'], 2, 'recording', 'no file')
one_error([M, 'export', '--format', 'folded', '--weight', 'heavy', rec], 2, '--weight', 'bad weight')
one_error([M, 'export', '--format', 'folded', '--size-max', '-3', rec], 2, '--size-max', 'bad filter')
one_error([M, 'export', '--format', 'folded', '--bogus', rec], 2, '--bogus', 'unknown option')
one_error([M, 'export', '--format', 'folded', t.path('missing.mtrace')], 1, 'missing.mtrace', 'missing file')
empty = t.path('empty.mtrace')
open(empty, 'w').close()
one_error([M, 'export', '--format', 'folded', empty], 1, 'empty.mtrace', 'empty file')
foreign = t.path('foreign.mtrace')
with open(foreign, 'wb') as f:
    f.write(b'\x7fELF' + bytes(200))
one_error([M, 'export', '--format', 'folded', foreign], 1, 'foreign.mtrace', 'foreign file')
one_error([M, 'export', '--format', 'folded', '--pid', '1', rec], 1, 'process 1', 'no such process')
one_error([M, 'export', '--format', 'folded', '-o', t.path('no/such/dir/out.folded'), rec], 1,
          'out.folded', 'unwritable output')

# a truncated recording exports what it holds, with a warning
with open(rec, 'rb') as f:
    data = f.read()
trunc = t.path('truncated.mtrace')
with open(trunc, 'wb') as f:
    f.write(data[:len(data) * 2 // 3])
rc, so, se = t.run([M, 'export', '--format', 'folded', trunc])
t.check(rc in (0, 1), f'truncated file: exit status {rc}')
t.check('truncated' in se, f'truncated file: says so ({se.strip()!r})')

# -o: written whole, no temporary file left behind
out = t.path('out.folded')
rc, so, se = t.run([M, 'export', '--format', 'folded', '-o', out, rec])
t.eq(rc, 0, 'export -o: exit status')
t.eq(so, '', 'export -o: nothing on standard output')
with open(out) as f:
    t.check(f.read().count('\n') > 3, 'export -o: the file holds the stacks')
t.eq(sorted(n for n in os.listdir(t.tmp) if '.tmp' in n), [], 'export -o leaves no temporary file')

# --help names every format --weight applies to, html among them
rc, so, se = t.run([M, 'export', '--help'])
t.check('gprof2dot, html)' in (so + se).replace('\n', ' ').replace('  ', ' '),
        f'export --help: --weight applies to html too ({(so + se)[-900:]!r})')
# memtrace(1)'s synopsis has every command
src = os.environ.get('MEMTRACE_SOURCE_ROOT') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
with open(os.path.join(src, 'man', 'memtrace.1')) as f:
    man = f.read()
syn = man[man.find('.SH SYNOPSIS'):man.find('.SH DESCRIPTION')]
for cmd in ('record', 'report', 'attach', 'top', 'sweep', 'export', 'server', 'diff', 'query'):
    t.check(f'.B memtrace {cmd}' in syn, f'memtrace(1) SYNOPSIS: memtrace {cmd}')

t.finish()
