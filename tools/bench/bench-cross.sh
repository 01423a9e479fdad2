#!/bin/bash
# tools/bench/bench-cross.sh: bench.sh's churn figure for a cross build,
# under qemu-user: churn (tools/bench/churn.c, built -O2 with ARCH's cross
# gcc, -funwind-tables on ARMv7 and MIPS) run natively under qemu against `memtrace record` of it under qemu
# (the cross-built memtrace and shim), interleaved round by round; medians
# of wall and CPU time, and the ratio.  Emulation makes both slow: the ratio
# is what to compare with bench.sh's native one, not the seconds.
#
#   tools/bench/bench-cross.sh ARCH [-r N] [-n ALLOCATIONS]
#
#   ARCH   aarch64, armhf or mips64el, built first by tools/cross.sh ARCH
#   -r N   rounds (default 5)
#   -n N   churn's allocations (default 200000: qemu is slow)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tools/bench
arch='' rounds=5 n=200000
die() { echo "bench-cross.sh: error: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=${2:?-r wants a number}; shift ;;
	-n) n=${2:?-n wants a number}; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option '$1' (try --help)" ;;
	*) arch=$1 ;;
	esac
	shift
done
# ARMv7's and MIPS's compilers give C code unwind tables only when asked
# (x86-64's and AArch64's always do): churn gets them, as code must have
# them for whole stacks there (README, Architectures).
cflags=()
case $arch in
aarch64) triplet=aarch64-linux-gnu ;;
armhf) triplet=arm-linux-gnueabihf cflags=(-funwind-tables) ;;
mips64el) triplet=mips64el-linux-gnuabi64 cflags=(-funwind-tables) ;;
*) die "which architecture? aarch64, armhf or mips64el" ;;
esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "-r wants a positive number, not '$rounds'"
build=$root/build-$arch sysroot=$root/build-$arch-sysroot
if [ ! -x "$build/memtrace" ] || [ ! -d "$sysroot" ]; then
	die "no cross build in $build: run tools/cross.sh $arch"
fi
export QEMU_LD_PREFIX=$sysroot

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$triplet-gcc" --sysroot="$sysroot" -O2 "${cflags[@]}" -o "$work/churn" "$here/churn.c" ||
	die "cannot build churn.c for $arch"

# one run: "wall cpu" in seconds (measure.py: CPU of the command and its children)
run() {
	local out st
	out=$(python3 "$here/measure.py" --stdin /dev/null -- "$@" 2>>"$work/log") ||
		die "measure.py failed on: $*"
	read -r w c st <<<"$out"
	[ "$st" = 0 ] || die "exit status $st from: $*"
	echo "$w $c"
}
native=() memtrace=()
run "$work/churn" "$n" >/dev/null # warm-up
for ((i = 0; i < rounds; i++)); do
	native+=("$(run "$work/churn" "$n")")
	rm -f "$work/c.mtrace"
	memtrace+=("$(run "$build/memtrace" record -q -o "$work/c.mtrace" -- "$work/churn" "$n")")
done
python3 - "$arch" "$n" "${native[@]}" -- "${memtrace[@]}" <<'PY'
import statistics, sys
arch, n = sys.argv[1], sys.argv[2]
rest = sys.argv[3:]
cut = rest.index('--')
def med(runs, i):
    return statistics.median(float(r.split()[i]) for r in runs)
nat, mt = rest[:cut], rest[cut + 1:]
print(f'churn ({n} allocations) under qemu-user, {arch}, median of {len(nat)} rounds:')
print(f'  {"":10} {"wall s":>8} {"cpu s":>8}')
print(f'  {"native":10} {med(nat, 0):8.3f} {med(nat, 1):8.3f}')
print(f'  {"memtrace":10} {med(mt, 0):8.3f} {med(mt, 1):8.3f}')
print(f'  memtrace/native: wall x{med(mt, 0) / med(nat, 0):.2f}, cpu x{med(mt, 1) / med(nat, 1):.2f}')
PY
