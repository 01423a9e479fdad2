#!/bin/sh
# tools/demo.sh: set up, build, record the bundled demo program and print its
# leak report (README's first command); also writes demo.html, the same
# recording as one self-contained page to open in a browser.
set -eu
# It installs packages and runs BPF: as root.  In a root shell it runs as it
# is (a container's root shell has no sudo); otherwise again through sudo.
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then
	exec sudo sh "$0" "$@"
fi
cd "$(dirname "$0")/.."
sh tools/setup.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
build/memtrace record -o demo.mtrace -- build/tools/memtrace-demo
echo
build/memtrace report --leaks demo.mtrace
build/memtrace export --format html -o demo.html demo.mtrace
echo
echo "demo.html: charts, flamegraph and call sites of the same recording (open it in a browser)"
