#!/usr/bin/env python3
"""tools/bench/readrun.py: run one command for tools/bench/bench-read.sh and print
what it cost.

    readrun.py [--stdout FILE] -- CMD [ARGS...]
    readrun.py --url URL [--stdout FILE] -- CMD [ARGS...]

Prints one line, "WALL_S MAXRSS_KB STATUS CPU_S".  Without --url, WALL_S is the
time from fork to the command's exit.  With --url (a server), WALL_S is the
time from fork to the first 200 answer of URL, asked every 10 ms; the server
is then stopped with SIGTERM.  MAXRSS_KB is the largest resident set of the
command (and of the descendants it waited for), from wait4.  STATUS is the
exit status, 128+N when killed by signal N (a server stopped by our SIGTERM
counts as 0).  CPU_S is the user+system time of the command and of the
descendants it waited for (a server's: until it was stopped, so it
includes what it spent after its first answer).  The command's stderr passes through; its stdout goes to
--stdout (default /dev/null).
"""

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request


def answered(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            r.read()
            return r.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stdout", default=os.devnull)
    ap.add_argument("--url")
    ap.add_argument("--limit", type=float, default=600, help="seconds a server may take")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command given")

    with open(os.devnull, "rb") as fin, open(args.stdout, "wb") as fout:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=fin, stdout=fout)
        wall = None
        stopped = False
        done = None  # (status, rusage) once reaped
        if args.url:
            while True:
                pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    done = (st, ru)
                    break
                if answered(args.url):
                    wall = time.perf_counter() - t0
                    break
                if time.perf_counter() - t0 > args.limit:
                    break
                time.sleep(0.01)
            if done is None:
                proc.send_signal(signal.SIGTERM)
                stopped = True
        if done is None:
            _, st, ru = os.wait4(proc.pid, 0)
            done = (st, ru)
        proc.returncode = 0  # reaped here, not by subprocess
        status, ru = done
        if wall is None and not args.url:
            wall = time.perf_counter() - t0
    if os.WIFSIGNALED(status):
        code = 128 + os.WTERMSIG(status)
    else:
        code = os.WEXITSTATUS(status)
    if stopped and code in (0, 128 + signal.SIGTERM):
        code = 0
    if wall is None:
        code = code or 1  # the server never answered
        wall = float("nan")
    print("%.6f %d %d %.6f" % (wall, ru.ru_maxrss, code, ru.ru_utime + ru.ru_stime))
    return 0


if __name__ == "__main__":
    sys.exit(main())
