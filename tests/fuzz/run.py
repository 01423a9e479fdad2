#!/usr/bin/env python3
"""run.py - runs a libFuzzer target over a seed corpus for a fixed budget and
fails on anything it finds: a crash or sanitizer report, a leak, an input
that takes over 10 s (-timeout) or more than 1 GB (-rss_limit_mb, which also
caps a single allocation through -malloc_limit_mb).

The corpus directory is only read: new inputs go to a scratch directory
under WORK, which is emptied first, and so do the artifacts (crash-*, oom-*,
timeout-*, leak-*), which are kept when the run fails so that they can be
added to the corpus once fixed.  The seed and the number of runs are fixed,
so a run finds the same things on every machine.

  run.py TARGET CORPUS WORK [RUNS]     (RUNS: 1000000; FUZZ_RUNS overrides)
"""
import os
import shutil
import subprocess
import sys


def main():
    target, corpus, work = sys.argv[1:4]
    runs = int(os.environ.get('FUZZ_RUNS') or (sys.argv[4] if len(sys.argv) > 4 else 1000000))
    shutil.rmtree(work, ignore_errors=True)
    scratch = os.path.join(work, 'new')
    os.makedirs(scratch)
    cmd = [target, f'-runs={runs}', '-seed=1', '-timeout=10', '-rss_limit_mb=1024',
           '-max_len=8192', '-print_final_stats=1', f'-artifact_prefix={work}/', scratch, corpus]
    print(' '.join(cmd), flush=True)
    env = dict(os.environ, ASAN_OPTIONS='detect_leaks=1:abort_on_error=0',
               UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1')
    rc = subprocess.run(cmd, env=env).returncode
    found = sorted(f for f in os.listdir(work) if f.split('-')[0] in ('crash', 'oom', 'timeout', 'leak',
                                                                     'slow'))
    if rc != 0 or found:
        print(f'run.py: the fuzzer failed (exit status {rc}); inputs kept in {work}: {found}',
              file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print(f'run.py: {runs} runs, nothing found')
    return 0


if __name__ == '__main__':
    sys.exit(main())
