#!/bin/bash
# tools/bench/bench-scan.sh: how fast the leak scan reads a heap, and what
# it costs beside valgrind's memcheck leak check.
#
#   tools/bench/bench-scan.sh [-b BUILD_DIR] [-m MB] [-p PER] [-r RUNS] [--no-valgrind]
#
# Runs tools/bench/heapgraph.c (MB megabytes of blocks, one word in PER a
# pointer to another block) under `memtrace record` RUNS times and reads the
# scan's own line (bytes scanned, milliseconds): the median GB/s (target: at
# least 1).  Then, interleaved, valgrind --leak-check=full and
# --leak-check=no on a heap of MB/4 (valgrind runs the program 20-50x
# slower): the difference is memcheck's leak check, beside memtrace's
# scan of the same heap.  And with root, the pause of `memtrace -p` on the
# program holding its heap (blocks made while attached): the median ms the
# process was held per 100 MB of its writable memory (target: under 50).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMTRACE_BUILD:-build} mb=512 per=4 runs=5 valgrind=1
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=${2:?}; shift ;;
	-m) mb=${2:?}; shift ;;
	-p) per=${2:?}; shift ;;
	-r) runs=${2:?}; shift ;;
	--no-valgrind) valgrind=0 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-scan.sh: error: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
case $build in /*) ;; *) build=$root/$build ;; esac
mt=$build/memtrace
[ -x "$mt" ] || { echo "bench-scan.sh: error: no $mt (build first)" >&2; exit 1; }
work=$(mktemp -d /tmp/memtrace-bench-scan.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/heapgraph" "$root/tools/bench/heapgraph.c"
small=$((mb / 4))
for i in $(seq "$runs"); do
	"$mt" record -o "$work/r.mtrace" -- "$work/heapgraph" "$mb" "$per" 2>&1 |
		sed -n 's/.*(\([0-9.]*\) MB scanned; the process was held \([0-9.]*\) ms).*/record \1 \2/p' >> "$work/times"
	"$mt" record -o "$work/s.mtrace" -- "$work/heapgraph" "$small" "$per" 2>&1 |
		sed -n 's/.*(\([0-9.]*\) MB scanned; the process was held \([0-9.]*\) ms).*/small \1 \2/p' >> "$work/times"
	if [ "$valgrind" = 1 ] && command -v valgrind > /dev/null; then
		for lc in full no; do
			s=$(date +%s.%N)
			valgrind -q --leak-check=$lc --show-leak-kinds=none "$work/heapgraph" "$small" "$per" > /dev/null 2>&1
			echo "vg-$lc $(echo "$(date +%s.%N) - $s" | bc)" >> "$work/times"
		done
	fi
	if [ "$(id -u)" = 0 ]; then
		"$work/heapgraph" "$mb" "$per" hold > "$work/hold.out" &
		pid=$!
		while ! grep -q ready "$work/hold.out"; do sleep 0.1; done
		wr=$(awk '/^Private_Dirty|^Private_Clean/ {s += $2} END {print s / 1024}' "/proc/$pid/smaps_rollup")
		( sleep 3; kill -USR1 "$pid" ) &
		"$mt" -p "$pid" --duration 8 --interval 0 > /dev/null 2> "$work/attach.err" || true
		sed -n "s/.*the process was held \([0-9.]*\) ms.*/attach $wr \1/p" "$work/attach.err" >> "$work/times"
		kill "$pid" 2> /dev/null || true
		wait "$pid" 2> /dev/null || true
	fi
done
python3 - "$work/times" "$mb" "$small" "$per" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
mb, small, per = sys.argv[2], int(sys.argv[3]), sys.argv[4]
med = lambda v: statistics.median(v) if v else float('nan')
def rate(kind):
    return [float(r[1]) / float(r[2]) for r in rows if r[0] == kind and float(r[2]) > 0]
big, sm = rate('record'), rate('small')
print(f"leak scan at record's exit, heapgraph {mb} MB, one word in {per} a pointer:")
print(f"  {med(big):.2f} GB/s median of {len(big)} (target: at least 1): " + ", ".join(f"{x:.2f}" for x in big))
print(f"  heap of {small} MB: {med(sm):.2f} GB/s")
vf = [float(r[1]) for r in rows if r[0] == 'vg-full']
vn = [float(r[1]) for r in rows if r[0] == 'vg-no']
ms = [float(r[2]) for r in rows if r[0] == 'small']
if vf and vn:
    check = med(vf) - med(vn)
    print(f"  valgrind's leak check of the {small} MB heap: {check:.2f} s "
          f"(--leak-check=full {med(vf):.2f} s, =no {med(vn):.2f} s); memtrace's scan {med(ms) / 1000:.3f} s: "
          f"{check / (med(ms) / 1000):.0f}x faster")
at = [(float(r[1]), float(r[2])) for r in rows if r[0] == 'attach']
if at:
    per100 = [ms / (w / 100) for w, ms in at if w > 0]
    print(f"  memtrace -p pause: {med([m for _, m in at]):.1f} ms for {med([w for w, _ in at]):.0f} MB of "
          f"writable memory: {med(per100):.1f} ms per 100 MB (target: under 50)")
PY
