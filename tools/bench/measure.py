#!/usr/bin/env python3
"""tools/bench/measure.py: run one command and print what it cost.

    measure.py [--stdin FILE] [--stdout FILE] -- CMD [ARGS...]

Prints one line, "WALL_S CPU_S STATUS": the wall-clock time from fork to the
command's exit, and the user+system CPU time of the command and of every
descendant it waited for (getrusage(RUSAGE_CHILDREN) before and after), so a
profiler's helper processes count: heaptrack's shell script waits for its
interpreter and compressor, memtrace for the traced program.  STATUS is the
command's exit status, 128+N when killed by signal N.  The command's stderr
passes through; its stdout goes to --stdout (default /dev/null).
"""

import argparse
import os
import resource
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stdin", default=os.devnull)
    ap.add_argument("--stdout", default=os.devnull)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command given")

    with open(args.stdin, "rb") as fin, open(args.stdout, "wb") as fout:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=fin, stdout=fout)
        status = proc.wait()
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if status < 0:
        status = 128 - status
    print("%.6f %.6f %d" % (wall, cpu, status))
    return 0


if __name__ == "__main__":
    sys.exit(main())
