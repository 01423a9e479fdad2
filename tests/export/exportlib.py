"""exportlib - what the export tests share.

Each test_NAME.py is run as `python3 test_NAME.py GT_PEAK GT_TEMPORARY GT_CXX`
(the ground-truth programs of tests/groundtruth, whose figures their sources'
header comments derive).  It records them with gtlib.Case.record, exports with
`memtrace export`, reads the export back with its real consumer and asserts
the figures, then ends with t.finish().
"""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import gtlib  # noqa: E402


def setup(name):
    """(case, {'peak': path, 'temporary': path, 'cxx': path}) from argv."""
    t = gtlib.Case(name)
    progs = dict(zip(('peak', 'temporary', 'cxx'), sys.argv[1:4]))
    return t, progs


def export(t, rec, fmt, *args, out=None, expect_rc=0):
    """`memtrace export --format FMT ARGS REC [-o OUT]`; returns the output
    (bytes) of a successful export, or None after recording a failure."""
    argv = [t.memtrace, 'export', '--format', fmt, *args, rec]
    if out:
        argv[2:2] = ['-o', out]
    p = subprocess.run(argv, capture_output=True, timeout=300)
    if p.returncode != expect_rc:
        t.fail(f'{" ".join(argv)}: exit status {p.returncode}, expected {expect_rc}; '
               f'stderr: {p.stderr.decode(errors="replace").strip()[-400:]!r}')
        return None
    if out:
        with open(out, 'rb') as f:
            return f.read()
    return p.stdout


def site_by_function(t, proc, fn):
    """The site of the JSON report PROC whose first frame is function FN."""
    for s in proc.get('sites', []):
        if s.get('frames') and s['frames'][0].get('function') == fn:
            return s
    t.fail(f'no site whose first frame is {fn}')
    return None


BROWSER = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'browser')


def browser(t, script, *args):
    """Runs tests/browser/SCRIPT (Playwright driving Debian's chromium) with
    node; returns the facts it prints as JSON, or None after a failure that
    says what is missing."""
    node = shutil.which('node')
    if not t.check(node, 'node is not installed: the browser checks need node and chromium '
                   '(tools/setup.sh installs them)'):
        return None
    if not t.check(os.path.exists(os.path.join(BROWSER, 'node_modules', 'playwright-core')),
                   f'playwright-core is not installed in {BROWSER}/node_modules (run npm ci there)'):
        return None
    if not t.check(os.path.exists(os.environ.get('MEMTRACE_CHROMIUM', '/usr/bin/chromium')),
                   '/usr/bin/chromium is not installed: the browser checks need it'):
        return None
    env = dict(os.environ, NODE_PATH=os.path.join(BROWSER, 'node_modules'))
    p = subprocess.run([node, os.path.join(BROWSER, script), *args], cwd=BROWSER, env=env,
                       capture_output=True, text=True, timeout=180)
    if not t.check(p.returncode == 0, f'node {script}: exit status {p.returncode}: {p.stderr.strip()[-1500:]}'):
        return None
    return json.loads(p.stdout)
