#!/bin/sh
# tools/setup.sh: install the Debian 12 packages memtrace needs to build, run
# its tests and (with --bench) its benchmarks.
#
# Idempotent: asks dpkg what is already installed and runs apt-get only when
# something is missing, so a second run prints nothing and exits 0.  When not
# root it prints the apt-get command to run and exits 1.
#
#   tools/setup.sh [--bench] [--dry-run] [--verbose]
#
#   --bench    also install what only tools/bench/bench.sh uses (linux-perf, time)
#   --dry-run  print the missing packages and the command, install nothing
#   --verbose  list every package checked
set -eu

# Build: compilers, meson, and the libraries meson.build looks for.  clang,
# llvm and bpftool build the BPF objects and their skeletons.  libsqlite3-dev
# and libreadline-dev: `memtrace query` (SQL over a recording, its prompt).
# libclang-rt-14-dev is clang's sanitizer and libFuzzer runtimes, for the
# fuzz build (tests/fuzz, -Dfuzz=true) that tools/check.sh runs.
# libcurl4-openssl-dev: `top --push` (HTTP and TLS to a profile store).
build_pkgs="build-essential gcc g++ meson ninja-build pkg-config
  libelf-dev libdw-dev zlib1g-dev libunwind-dev libzstd-dev
  libbpf-dev bpftool clang llvm libmicrohttpd-dev libpcre2-dev clang-format libclang-rt-14-dev
  libsqlite3-dev libreadline-dev libcurl4-openssl-dev"
# Tests: python3 drives them; valgrind and sqlite3 are the real-world
# reference (tests/realworld); heaptrack is the format export's reference;
# bpftrace counting the allocator's probes is tools/bench/bench.sh's floor for BPF;
# elfutils (eu-readelf, eu-addr2line) and file check the binaries they build.
# The exports are read back by their real consumers: heaptrack_print,
# heaptrack_gui (heaptrack-gui: the file must load in the GUI users open,
# run on Qt's offscreen platform; it once crashed where heaptrack_print
# coped), `go tool pprof` (golang-go), ms_print (valgrind), and Chromium
# driven by playwright-core from npm (nodejs, npm) for the HTML report.
# The allocator libraries the ground-truth cases link and preload (jemalloc,
# mimalloc, gperftools tcmalloc: libgoogle-perftools-dev carries
# libtcmalloc_minimal.so), and redis, a real program linked to jemalloc
# (tests/realworld).
test_pkgs="python3 valgrind heaptrack heaptrack-gui bpftrace sqlite3 elfutils file zstd golang-go chromium nodejs
  libjemalloc-dev libmimalloc-dev libtcmalloc-minimal4 libgoogle-perftools-dev
  redis-server redis-tools
  groff-base binutils"
# top's continuous profiles are decoded by the standalone pprof tool, built
# offline from Debian's sources of it (golang-github-google-pprof-dev, see
# pprof_setup), and OTLP bodies by protoc (protobuf-compiler).
test_pkgs="$test_pkgs golang-github-google-pprof-dev protobuf-compiler"
# (groff-base: groff, with which tests/cli renders the manual pages, warnings
# counting as failures.  binutils: strip and nm, with which the export tests
# make a program without symbols and find its functions; build-essential
# brings it too.)
# Bench only: /usr/bin/time and perf for digging into a regression.
bench_pkgs="time linux-perf"

want_bench=0 dry_run=0 verbose=0
for arg in "$@"; do
	case $arg in
	--bench) want_bench=1 ;;
	--dry-run) dry_run=1 ;;
	--verbose) verbose=1 ;;
	-h|--help)
		sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'
		exit 0 ;;
	*)
		echo "setup.sh: error: unknown option '$arg' (try --help)" >&2
		exit 2 ;;
	esac
done

pkgs="$build_pkgs $test_pkgs"
[ $want_bench = 1 ] && pkgs="$pkgs $bench_pkgs"

# A package counts as installed only in state "install ok installed"; a
# removed-but-configured one ("deinstall ok config-files") is missing.
missing=""
for p in $pkgs; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	if [ "$status" = "install ok installed" ]; then
		[ $verbose = 1 ] && echo "ok       $p"
	else
		[ $verbose = 1 ] && echo "missing  $p"
		missing="$missing $p"
	fi
done
missing=${missing# }

# playwright-core (npm, pinned in tests/present/browser/package-lock.json) drives the
# system chromium; it downloads no browser of its own.  npm comes with
# NodeSource's nodejs (which conflicts with Debian's npm package), or from
# Debian's npm next to Debian's nodejs.
npm_setup() {
	dir=$(cd "$(dirname "$0")/.." && pwd)/tests/present/browser
	[ -d "$dir/node_modules/playwright-core" ] && return 0
	if ! command -v npm >/dev/null 2>&1; then
		if [ $dry_run = 1 ] || [ "$(id -u)" != 0 ]; then
			echo "setup.sh: npm is missing: apt-get install npm" >&2
			[ $dry_run = 1 ]
			return
		fi
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm || return 1
	fi
	[ $dry_run = 1 ] && { echo "would run: npm ci in $dir"; return 0; }
	echo "setup.sh: installing playwright-core (npm) in tests/present/browser"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) ||
		{ echo "setup.sh: error: npm ci in $dir failed" >&2; return 1; }
}

# pprof (github.com/google/pprof) as a command of its own in /usr/local/bin,
# compiled from /usr/share/gocode without the network (GOPATH mode).
pprof_setup() {
	command -v pprof >/dev/null 2>&1 && return 0
	src=/usr/share/gocode/src/github.com/google/pprof
	if [ $dry_run = 1 ] || [ "$(id -u)" != 0 ] || [ ! -d $src ]; then
		echo "setup.sh: pprof is missing: as root, after golang-github-google-pprof-dev, run tools/setup.sh" >&2
		[ $dry_run = 1 ]
		return
	fi
	echo "setup.sh: building pprof from $src into /usr/local/bin"
	cache=$(mktemp -d)
	GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= GOCACHE="$cache" \
		go build -o /usr/local/bin/pprof github.com/google/pprof
	rc=$?
	rm -rf "$cache"
	[ $rc = 0 ] || echo "setup.sh: error: building pprof failed" >&2
	return $rc
}

[ -z "$missing" ] && { npm_setup && pprof_setup; exit $?; }

cmd="apt-get install -y --no-install-recommends $missing"
if [ $dry_run = 1 ]; then
	echo "missing: $missing"
	echo "would run: apt-get update && $cmd"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "setup.sh: error: not root; these packages are missing: $missing" >&2
	echo "run as root:" >&2
	echo "  apt-get update && $cmd" >&2
	exit 1
fi

echo "setup.sh: installing: $missing"
export DEBIAN_FRONTEND=noninteractive
# Only this machine's own architecture's index: another architecture's
# (added with dpkg --add-architecture for cross builds) can be caught
# mid-sync by the mirror and fail the update; its lists are kept as they are.
apt-get update -q -o APT::Architectures::="$(dpkg --print-architecture)" -o APT::Get::List-Cleanup=false
# shellcheck disable=SC2086  # the package list is meant to split
apt-get install -y -q --no-install-recommends $missing
npm_setup
pprof_setup
