#!/bin/bash
# tools/bench/bench-gui.sh: how fast the report page answers on a recording of
# many call sites (issue 19: every interaction under 200 ms on 100,000
# sites), in the HTML report and in the server's GUI.
#
#   tools/bench/bench-gui.sh [-b BUILD_DIR] [-d DEPTH] [-r ROUNDS] [-k]
#
# tools/bench/sites.c is built and recorded: 2^DEPTH call sites (default 17:
# 131,072), each allocating ROUNDS times (default 1; 76 gives 10 million
# allocations).  Its HTML report is written (its size is shown), then
# tools/bench/gui.js opens it in Chromium (playwright-core of
# tests/present/browser, as tools/setup.sh installs it) and times the page
# load and each interaction: sorting, filtering and showing all call sites,
# unfolding a stack, zooming, reweighting and inverting the flamegraph,
# sorting the functions and selecting one.  The same is done on the
# server's /ui/0.  Each page is opened RUNS times (-n, default 5) in a
# fresh browser; each line gives an interaction's median over the runs and
# its slowest, and says PASS (median under 200 ms) or SLOW; the load is
# shown, not judged.  Exits 0 whatever the times: it measures, it does
# not test.
#
#   -b DIR   memtrace build directory (default $MEMTRACE_BUILD, else build)
#   -n RUNS  runs of each page (default 5)
#   -k       keep the work directory
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMTRACE_BUILD:-build} depth=17 rounds=1 keep=0 runs=5
die() { echo "bench-gui.sh: error: $*" >&2; exit 1; }
while getopts b:d:r:n:kh opt; do
	case $opt in
	b) build=$OPTARG ;;
	d) depth=$OPTARG ;;
	r) rounds=$OPTARG ;;
	n) runs=$OPTARG ;;
	k) keep=1 ;;
	h) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$root/$build ;; esac
memtrace=$build/memtrace
browser=$root/tests/present/browser
[ -x "$memtrace" ] || die "no memtrace in $build"
[ -d "$browser/node_modules/playwright-core" ] || die "playwright-core is not installed (tools/setup.sh)"
command -v node >/dev/null || die "node is not installed (tools/setup.sh)"
work=$(mktemp -d /tmp/memtrace-bench-gui.XXXXXX)
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	[ "$keep" = 1 ] && echo "work directory kept: $work" || rm -rf "$work"
}
trap cleanup EXIT

cc -O0 -g -fno-omit-frame-pointer -o "$work/sites" "$root/tools/bench/sites.c"
"$memtrace" record -o "$work/sites.mtrace" -- "$work/sites" "$depth" "$rounds" >/dev/null 2>&1 ||
	die "memtrace record failed"
"$memtrace" export --format html -o "$work/sites.html" "$work/sites.mtrace"
sites=$("$memtrace" report --json -n 1 "$work/sites.mtrace" |
	python3 -c 'import json,sys; p=json.load(sys.stdin)["processes"][0]; print(p["totals"]["allocations"])')
echo "recording: 2^$depth call sites, $sites allocations; HTML report $(stat -c %s "$work/sites.html") bytes"

# medians of the runs (one JSON object a line on stdin)
judge() {
	python3 -c '
import json, statistics, sys
what = sys.argv[1]
runs = [json.loads(l) for l in sys.stdin if l.strip()]
for r in runs:
    r.pop("process_rows", None)
print("%s: load %d ms (median of %d runs)" % (what, statistics.median(r.pop("load") for r in runs), len(runs)))
for k in runs[0]:
    v = [r[k] for r in runs]
    m = statistics.median(v)
    print("  %-22s %8.1f ms  (slowest %6.1f)  %s" % (k, m, max(v), "PASS" if m < 200 else "SLOW"))
' "$1"
}

page() {
	for _ in $(seq "$runs"); do
		NODE_PATH=$browser/node_modules node "$root/tools/bench/gui.js" "$1"
	done
}

page "$work/sites.html" | judge "html report"

port=$((20000 + RANDOM % 20000))
"$memtrace" server --listen "127.0.0.1:$port" "$work/sites.mtrace" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
	python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
		"http://127.0.0.1:$port/list" 2>/dev/null && break
	sleep 0.2
done
page "http://127.0.0.1:$port/ui/0" | judge "server GUI"
