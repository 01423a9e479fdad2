#!/bin/sh
# tools/check.sh: set up, build and run every test (README's second command):
# the normal build, then memtrace itself built with AddressSanitizer and
# UndefinedBehaviorSanitizer (the shim stays unsanitized: it runs inside
# other programs), then the readers of hostile bytes fuzzed (tests/fuzz, built with
# clang), then the cross builds under qemu-user (tools/cross.sh).  Exits
# non-zero if any test failed.
set -u
# It installs packages and runs BPF: as root.  In a root shell it runs as it
# is (a container's root shell has no sudo); otherwise again through sudo.
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then
	exec sudo sh "$0" "$@"
fi
cd "$(dirname "$0")/.."
sh tools/setup.sh || exit 1
status=0
# quiet: a step's output is shown only when it fails
quiet() { out=$("$@" 2>&1) || { printf '%s\n' "$out" | tail -n 40; echo "check.sh: failed: $*" >&2; return 1; }; }
[ -d build ] || quiet meson setup build || exit 1
quiet ninja -C build || exit 1
meson test -C build --print-errorlogs --num-processes 2 || status=1
[ -d build-asan ] || quiet meson setup build-asan -Dsanitize=true || exit 1
quiet ninja -C build-asan || exit 1
ASAN_OPTIONS=detect_leaks=1 meson test -C build-asan --print-errorlogs --num-processes 2 \
	--suite unit --suite groundtruth --suite export --suite server --suite security \
	--suite query || status=1
# The readers of hostile bytes under libFuzzer (clang): the recording reader,
# the .eh_frame compiler and the BPF backend's ELF readers, a fixed number of
# runs each from a fixed seed over its corpus in tests/fuzz.  Only the fuzz
# targets are built there.
[ -d build-fuzz ] || quiet env CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true || exit 1
fuzz_targets="tests/fuzz/fuzz_recording tests/fuzz/fuzz_cfi"
# (fuzz_elf exists where the BPF backend is built)
if ninja -C build-fuzz -t targets all | grep -q '^tests/fuzz/fuzz_elf:'; then
	fuzz_targets="$fuzz_targets tests/fuzz/fuzz_elf"
fi
quiet ninja -C build-fuzz $fuzz_targets || exit 1
meson test -C build-fuzz --no-rebuild --print-errorlogs --suite fuzz || status=1
# memtrace built for AArch64, ARMv7 and MIPS64 with Debian's cross toolchains
# and tested under qemu-user (tools/cross.sh: the unit tests and the shim's
# ground-truth cases, each report made by the native memtrace too).  Last,
# so that a foreign package index caught mid-sync by the mirror cannot stop
# the native build or its tests; MEMTRACE_CROSS=0 leaves them out.
if [ "${MEMTRACE_CROSS:-1}" != 0 ]; then
	for arch in aarch64 armhf mips64el; do
		sh tools/cross.sh "$arch" --test || status=1
	done
fi
exit $status
