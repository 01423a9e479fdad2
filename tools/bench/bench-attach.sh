#!/bin/bash
# tools/bench/bench-attach.sh: what attaching costs a running program.
#
#   tools/bench/bench-attach.sh [-b BUILD_DIR] [-s SPINS]
#
# Runs tools/bench/paced.c (one malloc/free pair per ~10 us of work, about
# 100,000 allocations a second), lets it run 4 s alone, then attaches
# `memtrace -p PID` for 4 s, then lets it run 3 s after the detach.  Prints
# the median iterations per second of each phase (the first second of each
# is dropped: attaching and detaching themselves take a moment) and the
# attached/alone ratio.  Needs root (the BPF backend).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMTRACE_BUILD:-build} spins=9000
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=${2:?}; shift ;;
	-s) spins=${2:?}; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-attach.sh: error: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
case $build in /*) ;; *) build=$root/$build ;; esac
[ "$(id -u)" = 0 ] || { echo "bench-attach.sh: error: the BPF backend needs root" >&2; exit 1; }
work=$(mktemp -d /tmp/memtrace-bench-attach.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/paced" "$root/tools/bench/paced.c"
"$work/paced" "$spins" 12 > "$work/rates" &
pid=$!
sleep 4
t_attach=$(date +%s.%N)
"$build/memtrace" -p "$pid" --duration 4 --interval 0 > "$work/attach.out" 2> "$work/attach.err"
t_detach=$(date +%s.%N)
wait "$pid"
python3 - "$work/rates" "$t_attach" "$t_detach" <<'PY'
import statistics, sys
rates = [float(x) for x in open(sys.argv[1]) if x.strip()]
# one line per second: seconds 1-4 alone, 5-8 attached (roughly), 9-12 after
alone, attached, after = rates[1:4], rates[5:8], rates[9:12]
m = lambda v: statistics.median(v) if v else float('nan')
print("iterations/s (each one malloc/free pair + ~10 us of work)")
print("  alone:    %8.0f   (%s)" % (m(alone), ", ".join("%.0f" % x for x in alone)))
print("  attached: %8.0f   (%s)" % (m(attached), ", ".join("%.0f" % x for x in attached)))
print("  after:    %8.0f   (%s)" % (m(after), ", ".join("%.0f" % x for x in after)))
print("  attached / alone: %.2f (goal: at least 0.67); after / alone: %.2f"
      % (m(attached) / m(alone), m(after) / m(alone)))
print("  attach took %.1f s including 4 s traced" % (float(sys.argv[3]) - float(sys.argv[2])))
PY
