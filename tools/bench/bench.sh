#!/bin/bash
# tools/bench/bench.sh: what recording costs, memtrace against heaptrack.
#
#   tools/bench/bench.sh [-r N] [-w churn,sqlite,churn22] [-b BUILD_DIR] [--no-heaptrack]
#                  [--no-bpf] [--sample] [-k] [--raw FILE] [-q]
#
# Workloads: churn (tools/bench/churn.c built with gcc -O2: 1M malloc/free
# pairs), sqlite (sqlite3 :memory: running tools/sqlite-workload.sh's
# 200k-row script) and, when asked, churn22 (churn with 22M pairs: a
# program making 22 million small allocations).  Each runs these ways,
# interleaved round by round so that drift in the machine's load spreads
# over all of them alike:
#   native     CMD
#   memtrace   memtrace record -q -o F -- CMD
#   mt-sampled memtrace record --sample -q -o F -- CMD   (with --sample: one
#              allocation per 512 KiB recorded, the production mode)
#   mt-bpf     memtrace record --backend=bpf -q -o F -- CMD   (as root)
#   mt-probes  the same with MEMTRACE_BPF_PROBES_ONLY=1: memtrace's probes at
#              the same places, its programs returning at once: the floor
#              of the probes alone, beside which mt-bpf's own work is read
#   bpftrace   bpftrace counting malloc's entries and returns and free's
#              entries of CMD (as root, when bpftrace is installed): what
#              merely probing the allocator costs, the floor any uprobe
#              tool pays, beside which mt-bpf's own cost is read
#   heaptrack  heaptrack -o F CMD          (its script waits for its
#                                           interpreter and compressor, so
#                                           their time counts)
# after one untimed warm-up of each.  Each recording is then read back once,
# timed: `memtrace report --json F` and `heaptrack_print F`, output discarded.
# The table shows medians; CPU is user+sys of the command and all it waited
# for.  Per-event figures divide by allocations + frees from memtrace's JSON
# report of the same workload.  With mt-bpf, one more run per workload prints
# the BPF programs' own cost per run from the kernel's bpf_stats (which adds
# two clock reads to every program run: switched off for the timed runs if
# it was left on, and back on after).
#
#   -r N            rounds (default 5)
#   -w LIST         workloads, comma-separated (default churn,sqlite)
#   -b DIR          memtrace build directory (default $MEMTRACE_BUILD, else
#                   build-bench; build it with
#                   meson setup build-bench --buildtype=release && ninja -C build-bench)
#   --no-heaptrack  leave heaptrack out (it is left out, saying so, when absent)
#   --no-bpf        leave the BPF backend out (it is left out, saying so, when
#                   not root)
#   --sample        add mt-sampled
#   -k              keep the work directory (recordings, logs)
#   --raw FILE      also write every run as "workload variant round wall cpu bytes"
#   -q              no progress lines
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tools/bench
rounds=5 workloads=churn,sqlite build=${MEMTRACE_BUILD:-build-bench}
use_heaptrack=1 use_bpf=1 use_sample=0 keep=0 raw= quiet=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
die() { echo "bench.sh: error: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=${2:?-r wants a number}; shift ;;
	-w) workloads=${2:?-w wants a list}; shift ;;
	-b) build=${2:?-b wants a directory}; shift ;;
	--no-heaptrack) use_heaptrack=0 ;;
	--no-bpf) use_bpf=0 ;;
	--sample) use_sample=1 ;;
	-k) keep=1 ;;
	--raw) raw=${2:?--raw wants a file}; shift ;;
	-q) quiet=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "-r wants a positive number, not '$rounds'"
case $build in /*) ;; *) build=$root/$build ;; esac
memtrace=$build/memtrace
[ -x "$memtrace" ] && [ -e "$build/libmemtrace-preload.so" ] ||
	die "no memtrace in $build; build it: meson setup $build --buildtype=release && ninja -C $build"
IFS=, read -r -a wl_list <<< "$workloads"
for wl in "${wl_list[@]}"; do
	case $wl in churn|sqlite|churn22) ;; *) die "unknown workload '$wl' (churn, sqlite, churn22)" ;; esac
done
command -v python3 > /dev/null || die "python3 missing (tools/setup.sh installs it)"

variants=(native memtrace)
[ $use_sample = 0 ] || variants+=(mt-sampled)
if [ $use_bpf = 1 ]; then
	if [ "$(id -u)" = 0 ]; then
		variants+=(mt-bpf mt-probes)
		if command -v bpftrace > /dev/null; then
			variants+=(bpftrace)
		else
			echo "bpftrace: not installed, skipped (tools/setup.sh installs it)"
		fi
	else
		echo "mt-bpf: skipped (the BPF backend needs root)"
	fi
fi
if [ $use_heaptrack = 1 ]; then
	if command -v heaptrack > /dev/null && command -v heaptrack_print > /dev/null; then
		variants+=(heaptrack)
	else
		echo "heaptrack: not installed, skipped (tools/setup.sh installs it)"
	fi
else
	echo "heaptrack: skipped (--no-heaptrack)"
fi

work=$(mktemp -d /tmp/memtrace-bench.XXXXXX)
# The kernel's BPF statistics, if left on, cost every BPF program run two
# clock reads (~80 ns on a VM: ~0.27 s of a sqlite run under mt-bpf, ~0.13 s
# under bpftrace): off for the timed runs, as they were after.
stats_was=
if [ "$(id -u)" = 0 ] && [ "$(sysctl -n kernel.bpf_stats_enabled 2> /dev/null || echo 0)" = 1 ]; then
	stats_was=1
	sysctl -qw kernel.bpf_stats_enabled=0 2> /dev/null || stats_was=
fi
cleanup() {
	[ -z "$stats_was" ] || sysctl -qw kernel.bpf_stats_enabled="$stats_was" 2> /dev/null || true
	if [ $keep = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
log=$work/stderr.log
runs=$work/runs.tsv counts=$work/counts.tsv
: > "$runs"; : > "$counts"; : > "$log"

progress() { [ $quiet = 1 ] || echo "$*" >&2; }

# measure VARIANT-LABEL STDIN CMD...: run it, append "wall cpu" to $last.
measure() {
	local stdin=$1; shift
	local out status
	out=$(python3 "$here/measure.py" --stdin "$stdin" -- "$@" 2>> "$log") ||
		die "measure.py failed on: $*"
	read -r m_wall m_cpu status <<< "$out"
	if [ "$status" != 0 ]; then
		tail -n 20 "$log" >&2
		die "exit status $status from: $*"
	fi
}

# Build the workloads.
for wl in "${wl_list[@]}"; do
	case $wl in
	churn|churn22)
		src=${CHURN_SRC:-$here/churn.c}
		[ -r "$src" ] || die "cannot read $src (set CHURN_SRC)"
		gcc -O2 -o "$work/churn" "$src" || die "cannot build $src"
		;;
	sqlite)
		command -v sqlite3 > /dev/null || die "sqlite3 missing (tools/setup.sh installs it)"
		sh "$root/tools/sqlite-workload.sh" -o "$work/sqlite.sql"
		;;
	esac
done

wl_stdin() { case $1 in sqlite) echo "$work/sqlite.sql" ;; *) echo /dev/null ;; esac; }
wl_cmd() {
	case $1 in
	sqlite) echo sqlite3 :memory: ;;
	churn) echo "$work/churn" ;;
	churn22) echo "$work/churn 22000000" ;;
	esac
}

# run_variant WL VARIANT ROUND: one timed run, plus the report of its
# recording; appends to $runs unless ROUND is "warmup".
run_variant() {
	local wl=$1 variant=$2 rnd=$3 stdin cmd size=0 rec
	stdin=$(wl_stdin "$wl")
	read -r -a cmd <<< "$(wl_cmd "$wl")"
	case $variant in
	native)
		measure "$stdin" "${cmd[@]}"
		;;
	memtrace)
		rec=$work/$wl.mtrace
		rm -f "$rec"
		measure "$stdin" "$memtrace" record -q -o "$rec" -- "${cmd[@]}"
		;;
	mt-sampled)
		rec=$work/$wl.sampled.mtrace
		rm -f "$rec"
		measure "$stdin" "$memtrace" record --sample -q -o "$rec" -- "${cmd[@]}"
		;;
	mt-probes)
		rec=$work/$wl.probes.mtrace
		rm -f "$rec"
		MEMTRACE_BPF_PROBES_ONLY=1 measure "$stdin" "$memtrace" record --backend=bpf -q -o "$rec" -- "${cmd[@]}"
		;;
	mt-bpf)
		rec=$work/$wl.bpf.mtrace
		rm -f "$rec"
		measure "$stdin" "$memtrace" record --backend=bpf -q -o "$rec" -- "${cmd[@]}"
		;;
	bpftrace)
		# the C library the command maps: where the three probes go
		# (-c wants the program by one path: /usr/bin and /bin are one here)
		local libc exe
		exe=$(readlink -f "$(command -v "${cmd[0]}")")
		libc=$(ldd "$exe" | awk '$1 ~ /^libc\.so/ { print $3; exit }')
		measure "$stdin" bpftrace -q -e "uprobe:$libc:malloc { @m = count(); }
			uretprobe:$libc:malloc { @r = count(); } uprobe:$libc:free { @f = count(); }" \
			-c "$exe ${cmd[*]:1}"
		;;
	heaptrack)
		rm -f "$work/$wl.heaptrack".*
		measure "$stdin" heaptrack -o "$work/$wl.heaptrack" "${cmd[@]}"
		rec=$(ls "$work/$wl.heaptrack".* 2> /dev/null | head -n 1)
		[ -n "$rec" ] || die "heaptrack wrote no $work/$wl.heaptrack.*"
		;;
	esac
	local wall=$m_wall cpu=$m_cpu
	if [ "$variant" != native ] && [ "$variant" != bpftrace ]; then
		size=$(stat -c %s "$rec")
	fi
	if [ "$rnd" != warmup ]; then
		printf '%s %s %s %s %s %s\n' "$wl" "$variant" "$rnd" "$wall" "$cpu" "$size" >> "$runs"
	fi
	case $variant in
	memtrace|mt-bpf|mt-sampled) measure /dev/null "$memtrace" report --json "$rec" ;;
	heaptrack) measure /dev/null heaptrack_print "$rec" ;;
	*) return 0 ;;
	esac
	if [ "$rnd" != warmup ]; then
		printf '%s %s-report %s %s %s 0\n' "$wl" "$variant" "$rnd" "$m_wall" "$m_cpu" >> "$runs"
	fi
}

echo "memtrace $(git -C "$root" describe --always --dirty 2> /dev/null || echo '?') from $build" \
	"($(python3 -c 'import json,sys; print([o["value"] for o in json.load(open(sys.argv[1])) if o["name"]=="buildtype"][0])' \
	"$build/meson-info/intro-buildoptions.json" 2> /dev/null || echo 'buildtype ?'))"
echo "$(uname -sr), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
[ " ${variants[*]} " != *" heaptrack "* ] || echo "heaptrack: $(dpkg-query -W -f='${Version}' heaptrack 2> /dev/null || echo '?')"

for wl in "${wl_list[@]}"; do
	progress "$wl: warm-up"
	for variant in "${variants[@]}"; do
		run_variant "$wl" "$variant" warmup
	done
	# Event counts, from the warm-up's recording (the workloads are deterministic).
	"$memtrace" report --json "$work/$wl.mtrace" | python3 -c '
import json, sys
d = json.load(sys.stdin)
a = sum(p["totals"]["allocations"] for p in d["processes"])
f = sum(p["totals"]["frees"] for p in d["processes"])
print(sys.argv[1], a, f)' "$wl" >> "$counts"
	for ((r = 1; r <= rounds; r++)); do
		progress "$wl: round $r/$rounds"
		for variant in "${variants[@]}"; do
			run_variant "$wl" "$variant" "$r"
		done
	done
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/summarize.py" "$runs" "$counts"
[ -z "$raw" ] || cp "$runs" "$raw"

# The BPF programs' own cost per event, from the kernel's bpf_stats (switched
# on for one more run of each workload, then back to what it was).
if [[ " ${variants[*]} " == *" mt-bpf "* ]]; then
	was=$(sysctl -n kernel.bpf_stats_enabled 2> /dev/null || echo 0)
	[ -z "$stats_was" ] || echo "(kernel.bpf_stats_enabled was on: off for the timed runs)"
	if sysctl -qw kernel.bpf_stats_enabled=1 2> /dev/null; then
		echo
		echo "BPF programs' own cost (kernel.bpf_stats_enabled, one run):"
		for wl in "${wl_list[@]}"; do
			read -r -a cmd <<< "$(wl_cmd "$wl")"
			MEMTRACE_BPF_STATS=1 "$memtrace" record --backend=bpf -q -o "$work/$wl.stats.mtrace" -- "${cmd[@]}" \
				< "$(wl_stdin "$wl")" 2>&1 > /dev/null | sed "s/^memtrace: bpf /  $wl: /"
		done
		sysctl -qw kernel.bpf_stats_enabled="$was"
	fi
fi
