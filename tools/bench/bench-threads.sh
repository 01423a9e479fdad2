#!/bin/bash
# tools/bench/bench-threads.sh: what recording costs as threads are added.
#
#   tools/bench/bench-threads.sh [-r N] [-t LIST] [-n N] [-b BUILD_DIR]
#                          [--no-heaptrack] [-k] [--raw FILE] [-q]
#
# Workload: tools/bench/churn_mt.c built with gcc -O2: T threads, each doing
# the same churn (N allocations of mixed sizes, each freed 64 allocations
# later, three calls deep), started together.  For each thread count it runs
#   native     churn_mt T N
#   memtrace   memtrace record -q -o F -- churn_mt T N
#   mt-buf     the same with MEMTRACE_THREAD_BUFFERS=1: per-thread buffers
#              whatever the CPU count (by default only with 4 or more)
#   heaptrack  heaptrack -o F churn_mt T N   (when installed)
# interleaved round by round (every thread count and variant once per
# round), after one untimed warm-up of each.  The table shows medians of the
# wall time and of the CPU time (user+sys of the command and all it waited
# for), each variant's slowdown against native at the same thread count
# ("x nat"), and that slowdown against its own slowdown with one thread
# ("x 1T"): 1.00 means adding threads costs the profiler nothing more than
# it costs the program.
#
#   -r N            rounds (default 5)
#   -t LIST         thread counts, comma-separated (default 1,2,4,8)
#   -n N            allocations per thread (default 500000)
#   -b DIR          memtrace build directory (default $MEMTRACE_BUILD, else
#                   build-bench; build it with
#                   meson setup build-bench --buildtype=release && ninja -C build-bench)
#   --no-heaptrack  leave heaptrack out (it is left out, saying so, when absent)
#   -k              keep the work directory (recordings, logs)
#   --raw FILE      also write every run as "threads variant round wall cpu bytes"
#   -q              no progress lines
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tools/bench
rounds=5 threads=1,2,4,8 per=500000 build=${MEMTRACE_BUILD:-build-bench}
use_heaptrack=1 keep=0 raw= quiet=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
die() { echo "bench-threads.sh: error: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=${2:?-r wants a number}; shift ;;
	-t) threads=${2:?-t wants a list}; shift ;;
	-n) per=${2:?-n wants a number}; shift ;;
	-b) build=${2:?-b wants a directory}; shift ;;
	--no-heaptrack) use_heaptrack=0 ;;
	-k) keep=1 ;;
	--raw) raw=${2:?--raw wants a file}; shift ;;
	-q) quiet=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "-r wants a positive number, not '$rounds'"
[[ $per =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number, not '$per'"
[[ $threads =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
	die "-t wants thread counts such as 1,2,4,8, not '$threads'"
case $build in /*) ;; *) build=$root/$build ;; esac
memtrace=$build/memtrace
[ -x "$memtrace" ] && [ -e "$build/libmemtrace-preload.so" ] ||
	die "no memtrace in $build; build it: meson setup $build --buildtype=release && ninja -C $build"
command -v python3 > /dev/null || die "python3 missing (tools/setup.sh installs it)"
command -v gcc > /dev/null || die "gcc missing (tools/setup.sh installs it)"
IFS=, read -r -a t_list <<< "$threads"

variants=(native memtrace mt-buf)
if [ $use_heaptrack = 1 ]; then
	if command -v heaptrack > /dev/null; then
		variants+=(heaptrack)
	else
		echo "heaptrack: not installed, skipped (tools/setup.sh installs it)"
	fi
else
	echo "heaptrack: skipped (--no-heaptrack)"
fi

work=$(mktemp -d /tmp/memtrace-bench-threads.XXXXXX)
cleanup() { if [ $keep = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
log=$work/stderr.log runs=$work/runs.tsv
: > "$runs"; : > "$log"

progress() { [ $quiet = 1 ] || echo "$*" >&2; }

gcc -O2 -pthread -o "$work/churn_mt" "$here/churn_mt.c" ||
	die "cannot build $here/churn_mt.c"

# run_variant T VARIANT ROUND: one timed run; appends to $runs unless ROUND
# is "warmup".
run_variant() {
	local t=$1 variant=$2 rnd=$3 size=0 rec out wall cpu status
	local cmd=("$work/churn_mt" "$t" "$per")
	case $variant in
	native) ;;
	memtrace|mt-buf)
		rec=$work/$variant.$t.mtrace
		rm -f "$rec"
		cmd=(env MEMTRACE_THREAD_BUFFERS=$([ $variant = mt-buf ] && echo 1 || echo auto)
			"$memtrace" record -q -o "$rec" -- "${cmd[@]}")
		;;
	heaptrack)
		rm -f "$work/ht.$t".*
		cmd=(heaptrack -o "$work/ht.$t" "${cmd[@]}")
		;;
	esac
	out=$(python3 "$here/measure.py" -- "${cmd[@]}" 2>> "$log") ||
		die "measure.py failed on: ${cmd[*]}"
	read -r wall cpu status <<< "$out"
	if [ "$status" != 0 ]; then
		tail -n 20 "$log" >&2
		die "exit status $status from: ${cmd[*]}"
	fi
	case $variant in
	memtrace|mt-buf) size=$(stat -c %s "$rec") ;;
	heaptrack)
		rec=$(ls "$work/ht.$t".* 2> /dev/null | head -n 1)
		[ -n "$rec" ] || die "heaptrack wrote no $work/ht.$t.*"
		size=$(stat -c %s "$rec")
		;;
	esac
	if [ "$rnd" != warmup ]; then
		printf '%s %s %s %s %s %s\n' "$t" "$variant" "$rnd" "$wall" "$cpu" "$size" >> "$runs"
	fi
}

echo "memtrace $(git -C "$root" describe --always --dirty 2> /dev/null || echo '?') from $build" \
	"($(python3 -c 'import json,sys; print([o["value"] for o in json.load(open(sys.argv[1])) if o["name"]=="buildtype"][0])' \
	"$build/meson-info/intro-buildoptions.json" 2> /dev/null || echo 'buildtype ?'))"
echo "$(uname -sr), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "churn_mt: $per allocations per thread; threads: $threads; $rounds rounds"
[ " ${variants[*]} " != *" heaptrack "* ] || echo "heaptrack: $(dpkg-query -W -f='${Version}' heaptrack 2> /dev/null || echo '?')"

progress "warm-up"
for t in "${t_list[@]}"; do
	for variant in "${variants[@]}"; do
		run_variant "$t" "$variant" warmup
	done
done
for ((r = 1; r <= rounds; r++)); do
	progress "round $r/$rounds"
	for t in "${t_list[@]}"; do
		for variant in "${variants[@]}"; do
			run_variant "$t" "$variant" "$r"
		done
	done
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$raw" ] || cp "$runs" "$raw"
python3 - "$runs" "$per" << 'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    t, variant, _rnd, wall, cpu, size = line.split()
    runs.setdefault((int(t), variant), []).append((float(wall), float(cpu), int(size)))
per = int(sys.argv[2])
threads = sorted({t for t, _ in runs})
variants = [v for v in ("native", "memtrace", "mt-buf", "heaptrack")
            if any((t, v) in runs for t in threads)]
med = lambda t, v, i: statistics.median(r[i] for r in runs[(t, v)])
fmt = "%-8s %-10s %8s %7s %6s %8s %7s %6s %10s"
print()
print(fmt % ("threads", "variant", "wall s", "x nat", "x 1T", "cpu s", "x nat", "x 1T", "B/event"))
for t in threads:
    for v in variants:
        if (t, v) not in runs:
            continue
        wall, cpu = med(t, v, 0), med(t, v, 1)
        cells = [str(t), v, "%.3f" % wall]
        if v == "native":
            cells += ["-", "-", "%.3f" % cpu, "-", "-", "-"]
        else:
            xw, xc = wall / med(t, "native", 0), cpu / med(t, "native", 1)
            one = (1, v) in runs and (1, "native") in runs
            xw1 = xw / (med(1, v, 0) / med(1, "native", 0)) if one else None
            xc1 = xc / (med(1, v, 1) / med(1, "native", 1)) if one else None
            events = 2 * t * per
            cells += ["%.2f" % xw, "%.2f" % xw1 if xw1 else "-", "%.3f" % cpu, "%.2f" % xc,
                      "%.2f" % xc1 if xc1 else "-", "%.3f" % (med(t, v, 2) / events)]
        print(fmt % tuple(cells))
print()
print('"x nat": slowdown against native at the same thread count; "x 1T": that')
print("slowdown divided by the same variant's slowdown with one thread.")
EOF
