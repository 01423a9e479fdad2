#!/bin/sh
# tools/demo.sh: set up, build, record the bundled demo program and print its
# leak report (README's first command); also writes demo.html, the same
# recording as one self-contained page to open in a browser.
set -eu
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
