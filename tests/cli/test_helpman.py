"""cli-helpman: every option `memtrace CMD --help` lists is described in
memtrace-CMD(1), and every option the manual page describes is in --help.

  test_helpman.py MAN_DIR

The manual page's options are the tagged paragraphs (.TP) of its OPTIONS
section (gather's: GATHER OPTIONS; its RECORD OPTIONS are record's; report's
views have sections of their own, diff's are in its DESCRIPTION), and,
for the commands whose --help lists bytehound's filters, those of the
FILTERS section of memtrace-report(1), which they refer to.  --help's are
the spellings at the start of its option lines.  The commands memtrace
--help lists are those memtrace(1) describes under COMMANDS; `memtrace help
CMD` is CMD --help, and help of what is no command a usage error.  (diff and
query lacked -h/--help in their pages; help NOT-A-COMMAND exited 0.)
"""
import os
import re
import shutil
import sys

import gtlib

t = gtlib.Case('cli-helpman')
man_dir = sys.argv[1]
COMMANDS = ['record', 'report', 'diff', 'attach', 'top', 'sweep', 'query', 'export', 'server',
            'gather']
OWN_SECTION = {'gather': 'GATHER OPTIONS'}
# sections that describe options beside OPTIONS: report's views and the
# views of functions, diff's views
MORE_SECTIONS = {'report': ['VIEWS', 'FUNCTIONS, CALLERS, CALLEES, SIZES'], 'diff': ['DESCRIPTION']}
SPELLING = re.compile(r'(?<![\w\\-])(\\-\\-[a-z0-9][a-z0-9\\-]*|\\-[a-zA-Z])(?![\w\\])')


def sections(path):
    """{section title: its lines}."""
    out, cur = {}, None
    with open(path) as f:
        for line in f.read().split('\n'):
            if line.startswith('.SH '):
                cur = line[4:].strip().strip('"')
                out[cur] = []
            elif cur:
                out[cur].append(line)
    return out


def man_options(lines):
    """The spellings in the tag line of each .TP paragraph."""
    opts = set()
    for i, line in enumerate(lines[:-1]):
        if line.startswith('.TP'):
            tag = lines[i + 1]
            if tag.startswith('.B') or tag.startswith('.I'):
                for m in SPELLING.finditer(tag):
                    opts.add(m.group(1).replace('\\-', '-'))
    return opts


def help_options(text):
    """Spellings at the start of --help's option lines ("  -n, --top N   ...")."""
    opts = set()
    for line in text.split('\n'):
        m = re.match(r'^ {1,4}(-\S.*)$', line)
        if not m:
            continue
        spelled = re.split(r'\s{2,}', m.group(1))[0]
        opts.update(re.findall(r'(?<![\w-])(--?[a-zA-Z0-9][a-zA-Z0-9-]*)', spelled))
    return opts


filters = man_options(sections(os.path.join(man_dir, 'memtrace-report.1')).get('FILTERS', []))
t.check(len(filters) >= 20, f'memtrace-report(1) FILTERS describes bytehound\'s filters ({sorted(filters)})')
for cmd in COMMANDS:
    rc, so, se = t.run([t.memtrace, cmd, '--help'])
    t.eq(rc, 0, f'memtrace {cmd} --help: exit status')
    from_help = help_options(so)
    t.check('--help' in from_help, f'memtrace {cmd} --help lists --help')
    rc2, so2, _ = t.run([t.memtrace, 'help', cmd])
    t.check(rc2 == 0 and so2 == so, f'memtrace help {cmd} is memtrace {cmd} --help')
    secs = sections(os.path.join(man_dir, f'memtrace-{cmd}.1'))
    title = OWN_SECTION.get(cmd, 'OPTIONS')
    if not t.check(title in secs, f'memtrace-{cmd}(1) has a section {title}'):
        continue
    from_man = man_options(secs[title])
    for more in MORE_SECTIONS.get(cmd, []):
        t.check(more in secs, f'memtrace-{cmd}(1) has a section {more}')
        from_man |= man_options(secs.get(more, []))
    if '--function-regex' in from_help:
        from_man |= filters
    t.eq(sorted(from_help - from_man), [], f'options of memtrace {cmd} --help missing from memtrace-{cmd}(1)')
    t.eq(sorted(from_man - from_help), [], f'options of memtrace-{cmd}(1) missing from memtrace {cmd} --help')

# every page renders without a warning (a form feed where \\fR was meant
# went unnoticed: it only cost a font change)
groff = shutil.which('groff')
if t.check(groff is not None, 'groff is installed (tools/setup.sh: groff-base)'):
    for page in sorted(os.listdir(man_dir)):
        if re.search(r'\.[1-8]$', page):
            rc, so, se = t.run([groff, '-man', '-ww', '-z', os.path.join(man_dir, page)],
                               env={'LC_ALL': 'C'})
            t.check(rc == 0 and not se.strip(), f'{page} renders without warnings ({se.strip()[:300]!r})')

# the commands
rc, so, se = t.run([t.memtrace, '--help'])
listed = re.findall(r'^  ([a-z]+) {2,}', so, re.M)
t.eq(sorted(listed), sorted(COMMANDS), 'the commands memtrace --help lists')
described = set()
for line in sections(os.path.join(man_dir, 'memtrace.1')).get('COMMANDS', []):
    m = re.match(r'^\.B (\w+)$', line)
    if m:
        described.add(m.group(1))
t.eq(sorted(set(listed) - described), [], 'commands of memtrace --help missing from memtrace(1) COMMANDS')
t.eq(sorted(described - set(listed) - {'help'}), [], 'commands of memtrace(1) missing from memtrace --help')

rc, so, se = t.run([t.memtrace, 'help', 'gt-no-such-command'])
t.eq(rc, 2, 'memtrace help NOT-A-COMMAND: exit status (it printed the list, exit 0)')
t.check(se.startswith('memtrace: error:') and 'gt-no-such-command' in se.split('\n')[0],
        f'memtrace help NOT-A-COMMAND: the error names it ({se.strip()!r})')

t.finish()
