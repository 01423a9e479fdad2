#!/bin/sh
# tools/check.sh: set up, build and run every test (README's second command):
# the normal build, then memtrace itself built with AddressSanitizer and
# UndefinedBehaviorSanitizer (the shim stays unsanitized: it runs inside
# other programs).  Exits non-zero if any test failed.
set -u
cd "$(dirname "$0")/.."
sh tools/setup.sh || exit 1
status=0
[ -d build ] || meson setup build >/dev/null || exit 1
ninja -C build >/dev/null || exit 1
meson test -C build --print-errorlogs --num-processes 2 || status=1
[ -d build-asan ] || meson setup build-asan -Dsanitize=true >/dev/null || exit 1
ninja -C build-asan >/dev/null || exit 1
ASAN_OPTIONS=detect_leaks=1 meson test -C build-asan --print-errorlogs --num-processes 2 \
	--suite unit --suite groundtruth --suite export --suite server || status=1
exit $status
