#!/bin/bash
# tools/bench/bench-export.sh: how long reading and exporting a large recording
# takes, and how much memory it needs.
#
#   tools/bench/bench-export.sh [-b BUILD_DIR] [-n ROWS] [-p PAIRS] [-r N] [-k]
#
# Two recordings are made with `memtrace record`: sqlite3 running
# tools/sqlite-workload.sh's script of ROWS rows (default 1,600,000: about
# 10 million events over a few thousand call sites with real symbols), and
# tools/bench/churn.c with PAIRS malloc/free pairs (default 5,000,000:
# 10 million events over few sites).  Then each is read by `memtrace report
# --json`, by a filtered report, and exported in every format; each command
# runs N times (default 3) and the table shows the median wall time and the
# largest resident set (from /usr/bin/time).  heaptrack_print reading the
# heaptrack export is timed as well, for comparison.
#
#   -b DIR   memtrace build directory (default $MEMTRACE_BUILD, else
#            build-bench; meson setup build-bench --buildtype=release)
#   -k       keep the work directory
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMTRACE_BUILD:-build-bench} rows=1600000 pairs=5000000 rounds=3 keep=0
die() { echo "bench-export.sh: error: $*" >&2; exit 1; }
while getopts b:n:p:r:kh opt; do
	case $opt in
	b) build=$OPTARG ;;
	n) rows=$OPTARG ;;
	p) pairs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	k) keep=1 ;;
	h) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$root/$build ;; esac
memtrace=$build/memtrace
[ -x "$memtrace" ] || die "no memtrace in $build (meson setup $build --buildtype=release && ninja -C $build)"
[ -x /usr/bin/time ] || die "/usr/bin/time missing (tools/setup.sh --bench installs it)"
work=$(mktemp -d /tmp/memtrace-bench-export.XXXXXX)
trap '[ $keep = 1 ] && echo "kept $work" || rm -rf "$work"' EXIT

echo "memtrace $(git -C "$root" rev-parse --short HEAD 2>/dev/null) from $build; $(nproc) CPUs"
sh "$root/tools/sqlite-workload.sh" -n "$rows" -o "$work/sqlite.sql"
gcc -O2 -o "$work/churn" "$root/tools/bench/churn.c"
"$memtrace" record -q -o "$work/sqlite.mtrace" -- sqlite3 :memory: < "$work/sqlite.sql" > /dev/null
"$memtrace" record -q -o "$work/churn.mtrace" -- "$work/churn" "$pairs" > /dev/null

# timed LABEL CMD...: median wall seconds and largest max RSS (KB) of N runs
timed() {
	local label=$1; shift
	local walls=() rss=0 w m
	for ((i = 0; i < rounds; i++)); do
		/usr/bin/time -f '%e %M' -o "$work/time" "$@" > "$work/out" 2> "$work/err" ||
			{ cat "$work/err" >&2; die "failed: $*"; }
		read -r w m < "$work/time"
		walls+=("$w")
		[ "$m" -gt "$rss" ] && rss=$m
	done
	w=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(((rounds + 1) / 2))p")
	printf '  %-44s %8s s %9s MB %10s B\n' "$label" "$w" "$((rss / 1024))" "$(stat -c %s "$work/out")"
}

for wl in sqlite churn; do
	rec=$work/$wl.mtrace
	events=$("$memtrace" report --json "$rec" | python3 -c 'import json,sys
p = json.load(sys.stdin)["processes"][0]["totals"]; print(p["allocations"] + p["frees"])')
	echo
	echo "$wl: $(printf "%'d" "$events") events, recording $(stat -c %s "$rec") bytes"
	printf '  %-44s %10s %12s %12s\n' "command" "wall" "max RSS" "output"
	timed "report --json" "$memtrace" report --json "$rec"
	timed "report --json --lifetime only_leaked" "$memtrace" report --json --lifetime only_leaked "$rec"
	timed "report --json --size-min 100 --to 50%" "$memtrace" report --json --size-min 100 --to 50% "$rec"
	for fmt in heaptrack folded svg pprof massif gprof2dot speedscope json html; do
		timed "export --format $fmt" "$memtrace" export --format "$fmt" "$rec"
	done
	timed "export --format json --per-site" "$memtrace" export --format json --per-site "$rec"
	if command -v heaptrack_print > /dev/null; then
		"$memtrace" export --format heaptrack -o "$work/ht" "$rec"
		timed "(heaptrack_print of the heaptrack export)" heaptrack_print "$work/ht"
	fi
done
