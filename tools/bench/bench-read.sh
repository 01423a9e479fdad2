#!/bin/bash
# tools/bench/bench-read.sh: what reading a big recording costs, against the
# program's own run.
#
#   tools/bench/bench-read.sh [-r N] [-b BUILD_DIR] [--shape SHAPE]
#                       [-n ALLOCATIONS] [-l LIVE] [-s STACKS] [-d DEPTH]
#                       [-a 'SCALE_ARGS'] [--no-heaptrack] [-k] [-q]
#
# The workload is tools/bench/scale.c (gcc -O2): ALLOCATIONS allocations
# (default 10,000,000) with LIVE blocks live at a time (500,000), from STACKS
# distinct call stacks (65,536) DEPTH frames deep (8), in one of these
# shapes (a reader fast on one can be slow on another):
#   scale     that alone, 16 to 1,039 bytes each (the default)
#   deep      below a trunk of 48 more frames, one of 4: 56-frame stacks
#             sharing long prefixes, many leaves under few roots (-p 48 -R 4)
#   funcs     each level picks among 8,192 functions with long names in 8
#             shared objects, all built with -g (tools/bench/genfuncs.py):
#             symbolizing weighs
#   sizes     1 byte to 16 KB, as many of each power of two, half the
#             allocations a realloc of a live block, 50,000 live
#             (-z 16384 -x 50 -l 50000)
#   threads   32 threads, each its share of the allocations and live
#             blocks (-t 32)
# Each round runs, one after the other so that drift in the machine's load
# spreads over all alike:
#   native            the program itself: wall time, peak RSS
#   record            memtrace record -q -o F -- scale: wall time, file size
#   report            memtrace report --json F: wall time, peak RSS
#   server            memtrace server --listen 127.0.0.1:PORT F: from start
#                     to the first answer of a grouped query (QUERY, default
#                     /data/0/allocation_groups?count=100: the first page of
#                     call sites by size, what one looks at first), and its
#                     peak RSS
#   export-json       memtrace export -f json -o OUT F: wall time, peak RSS
#   heaptrack         heaptrack -o H scale (its script waits for its
#   heaptrack_print   compressor) and heaptrack_print H: the peer, when
#                     installed
# after one untimed warm-up of each.  heaptrack failing (it runs out of
# memory on this workload) or taking more than 600 s is said and left out.  The table shows medians, each against
# the native run's median wall time and peak RSS, nanoseconds per event
# (allocations + frees, from memtrace's report), and the CPU time (user +
# system: on a busy machine, what the command itself cost; the server's
# until it was stopped after its answer).
#
#   -r N            rounds (default 3)
#   -b DIR          memtrace build directory (default $MEMTRACE_BUILD, else
#                   build-bench; build it with
#                   meson setup build-bench --buildtype=release && ninja -C build-bench)
#   --shape SHAPE   the workload's shape (above; default scale)
#   -n, -l, -s, -d  the workload's parameters (above), over the shape's
#   -a ARGS         more of scale's options, over the shape's (scale.c
#                   says what each does)
#   --no-export     leave export-json out (on a shape whose JSON is big)
#   --no-record     record only in the warm-up (the reading is timed, not
#                   the recording: the slowest part of a round)
#   --query QUERY   the server's grouped query (a path and parameters)
#   --no-heaptrack  leave heaptrack out (it is left out, saying so, when absent)
#   -k              keep the work directory (recordings, logs)
#   --raw FILE      also write every run as "what round wall_s rss_kb bytes cpu_s"
#   -q              no progress lines
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tools/bench
rounds=3 build=${MEMTRACE_BUILD:-build-bench}
allocs=10000000 live=500000 stacks=65536 depth=8 shape=scale more="" use_export=1 use_record=1
use_heaptrack=1 keep=0 raw= quiet=0 ht_limit=600
query='/data/0/allocation_groups?count=100'

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
die() { echo "bench-read.sh: error: $*" >&2; exit 1; }
number() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 wants a positive number, not '$2'"; echo "$2"; }

while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$(number -r "${2:-}"); shift ;;
	-b) build=${2:?-b wants a directory}; shift ;;
	--shape) shape=${2:?--shape wants a name}; shift ;;
	-n) allocs=$(number -n "${2:-}"); shift ;;
	-l) live_set=$(number -l "${2:-}"); shift ;;
	-a) more=${2?-a wants options of scale}; shift ;;
	--no-export) use_export=0 ;;
	--no-record) use_record=0 ;;
	-s) stacks=$(number -s "${2:-}"); shift ;;
	-d) depth=$(number -d "${2:-}"); shift ;;
	--query) query=${2:?--query wants a path}; shift ;;
	--no-heaptrack) use_heaptrack=0 ;;
	-k) keep=1 ;;
	--raw) raw=${2:?--raw wants a file}; shift ;;
	-q) quiet=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
case $build in /*) ;; *) build=$root/$build ;; esac
memtrace=$build/memtrace
[ -x "$memtrace" ] && [ -e "$build/libmemtrace-preload.so" ] ||
	die "no memtrace in $build; build it: meson setup $build --buildtype=release && ninja -C $build"
command -v python3 > /dev/null || die "python3 missing (tools/setup.sh installs it)"
command -v gcc > /dev/null || die "gcc missing (tools/setup.sh installs it)"

case $shape in
scale | funcs) shape_args=() ;;
deep) shape_args=(-p 48 -R 4) ;;
sizes) shape_args=(-z 16384 -x 50) live=50000 ;;
threads) shape_args=(-t 32) ;;
*) die "no shape '$shape' (scale, deep, funcs, sizes, threads)" ;;
esac
live=${live_set:-$live}

variants=(native record report server)
[ $use_export = 0 ] || variants+=(export-json)
if [ $use_heaptrack = 1 ]; then
	if command -v heaptrack > /dev/null && command -v heaptrack_print > /dev/null; then
		variants+=(heaptrack heaptrack_print)
	else
		echo "heaptrack: not installed, skipped (tools/setup.sh installs it)"
	fi
fi

work=$(mktemp -d /tmp/memtrace-bench-read.XXXXXX)
cleanup() { if [ $keep = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
log=$work/stderr.log runs=$work/runs.tsv
: > "$runs"; : > "$log"
progress() { [ $quiet = 1 ] || echo "$*" >&2; }

cflags=(-O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls)
if [ "$shape" = funcs ]; then
	# 8 objects of 1,024 functions, built side by side
	python3 "$here/genfuncs.py" "$work/gen" 8 1024 || die "genfuncs.py failed"
	libs=() pids=()
	for k in 0 1 2 3 4 5 6 7; do
		gcc "${cflags[@]}" -g -fPIC -shared -o "$work/gen/libscale$k.so" \
			"$work/gen/libscale$k.c" &
		libs+=("-lscale$k") pids+=("$!")
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || die "cannot build the objects of genfuncs.py"
	done
	gcc "${cflags[@]}" -g -pthread -DSCALE_EXTERN -o "$work/scale" "$here/scale.c" \
		"$work/gen/scale_fns.c" -L"$work/gen" "${libs[@]}" -Wl,-rpath,"$work/gen" ||
		die "cannot build tools/bench/scale.c with genfuncs.py's functions"
else
	gcc "${cflags[@]}" -pthread -o "$work/scale" "$here/scale.c" ||
		die "cannot build tools/bench/scale.c"
fi
# (more is split into words on purpose: scale's options)
# shellcheck disable=SC2206
scale=("$work/scale" -n "$allocs" -l "$live" -s "$stacks" -d "$depth" "${shape_args[@]}" $more)
rec=$work/scale.mtrace

# A free port for the server, asked of the kernel.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# measure [--url URL] CMD...: run it; sets m_wall m_rss m_status.
measure_status() {
	local out
	out=$(python3 "$here/readrun.py" "$@" 2>> "$log") || die "readrun.py failed on: $*"
	read -r m_wall m_rss m_status m_cpu <<< "$out"
}
measure() {
	measure_status "$@"
	if [ "$m_status" != 0 ]; then
		tail -n 20 "$log" >&2
		die "exit status $m_status from: $*"
	fi
}

# heaptrack may fail on this workload (std::bad_alloc) or take too long:
# that is a result, said once, not an error of the benchmark.
ht_failed=
run_variant() {
	local v=$1 rnd=$2 size=0
	case $v in heaptrack*) [ -z "$ht_failed" ] || return 0 ;; esac
	[ "$v" != record ] || [ "$rnd" = warmup ] || [ $use_record = 1 ] || return 0
	case $v in
	native) measure -- "${scale[@]}" ;;
	record)
		rm -f "$rec"
		measure -- "$memtrace" record -q -o "$rec" -- "${scale[@]}"
		size=$(stat -c %s "$rec")
		;;
	report) measure -- "$memtrace" report --json "$rec" ;;
	server)
		measure --url "http://127.0.0.1:$port$query" -- \
			"$memtrace" server --listen "127.0.0.1:$port" "$rec"
		;;
	export-json) measure -- "$memtrace" export -f json -o "$work/export.json" "$rec" ;;
	heaptrack)
		rm -f "$work/scale.heaptrack".*
		measure_status -- timeout "$ht_limit" heaptrack -o "$work/scale.heaptrack" "${scale[@]}"
		if [ "$m_status" != 0 ]; then
			ht_failed="heaptrack failed (exit status $m_status$([ "$m_status" != 124 ] ||
				echo ": over $ht_limit s")$(grep -q bad_alloc "$log" && echo ", std::bad_alloc"))"
			echo "$ht_failed" >&2
			return 0
		fi
		size=$(stat -c %s "$(ls "$work/scale.heaptrack".* | head -n 1)")
		;;
	heaptrack_print)
		measure -- heaptrack_print "$(ls "$work/scale.heaptrack".* | head -n 1)"
		;;
	esac
	rm -f "$work/export.json"
	[ "$rnd" = warmup ] ||
		printf '%s %s %s %s %s %s\n' "$v" "$rnd" "$m_wall" "$m_rss" "$size" "$m_cpu" >> "$runs"
}

echo "memtrace $(git -C "$root" describe --always --dirty 2> /dev/null || echo '?') from $build;" \
	"$(uname -sr), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "workload: $shape: scale ${scale[*]:1}; server query: $query"
progress "warm-up"
for v in "${variants[@]}"; do
	run_variant "$v" warmup
done
events=$("$memtrace" report --json "$rec" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(p["totals"]["allocations"] + p["totals"]["frees"] for p in d["processes"]))')
for ((r = 1; r <= rounds; r++)); do
	progress "round $r/$rounds"
	for v in "${variants[@]}"; do
		run_variant "$v" "$r"
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$ht_failed" ] || echo "$ht_failed"
[ -z "$raw" ] || cp "$runs" "$raw"

python3 - "$runs" "$events" << 'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
events = int(sys.argv[2])
by = {}
for v, _, wall, rss, size, cpu in rows:
    by.setdefault(v, []).append((float(wall), int(rss), int(size), float(cpu)))
med = {v: tuple(statistics.median(x[k] for x in r) for k in range(4)) for v, r in by.items()}
nw, nr, _, _ = med["native"]
print("%d events (allocations + frees); medians of %d rounds" % (events, len(by["native"])))
print("%-16s %8s %9s %9s %8s %9s %8s  %s" % ("", "wall s", "x native", "ns/event", "cpu s",
                                             "peak MB", "x RSS", "size"))
for v in ["native", "record", "report", "server", "export-json", "heaptrack", "heaptrack_print"]:
    if v not in med:
        continue
    w, m, s, c = med[v]
    extra = "%.1f MB, %.2f bytes/event" % (s / 1e6, s / events) if s else ""
    print("%-16s %8.2f %9.2f %9.1f %8.2f %9.1f %8.2f  %s" % (v, w, w / nw, w * 1e9 / events, c,
                                                           m / 1024, m / nr, extra))
EOF
