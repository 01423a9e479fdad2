#!/bin/sh
# tools/cross.sh: build memtrace (the memtrace binary and
# libmemtrace-preload.so) for another architecture with Debian's cross
# toolchain, and run its tests under qemu-user.
#
#   tools/cross.sh ARCH [--test] [--no-install]
#
#   ARCH          aarch64 (Debian arm64), armhf (ARMv7) or mips64el
#   --test        then run the tests that apply under qemu-user: the unit
#                 tests and the shim's ground-truth cases (suites unit and
#                 groundtruth of the cross build), each recording reported
#                 by the build machine's memtrace too, which must agree
#   --no-install  install nothing (fail if something is missing)
#
# What it installs (as root): the cross compilers and qemu-user-static from
# Debian (native packages), and a sysroot of ARCH's own Debian packages
# (the multiarch -dev packages of the libraries memtrace links, with what
# they depend on) in build-ARCH-sysroot/: fetched with `apt-get download`
# and unpacked there, not installed with dpkg.  Installed with dpkg, a
# foreign library must have the very version of the native one (multiarch's
# rule); when the mirror lags for one architecture (no security index for
# mips64el, an armhf index caught mid-sync: "File has unexpected size"),
# apt would downgrade or remove native packages to satisfy it.  The sysroot
# needs neither, and the native build never reads it.
#
# Builds into build-ARCH/ with the cross file tools/cross/ARCH.ini; the
# tests run the ARCH programs through binfmt_misc and qemu-ARCH-static with
# the sysroot as QEMU_LD_PREFIX.  The BPF backend is built for aarch64
# (cross-compiled programs, the committed vmlinux/arm64/vmlinux.h) but
# cannot run under qemu-user (no bpf() emulation).
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)

usage() { sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'; }
arch="" test=0 install=1
for a in "$@"; do
	case $a in
	--test) test=1 ;;
	--no-install) install=0 ;;
	-h|--help) usage; exit 0 ;;
	-*) echo "cross.sh: error: unknown option '$a' (try --help)" >&2; exit 2 ;;
	*) [ -z "$arch" ] || { echo "cross.sh: error: one ARCH only ('$arch', '$a')" >&2; exit 2; }
	   arch=$a ;;
	esac
done
case $arch in
aarch64|arm64) arch=aarch64 deb=arm64 triplet=aarch64-linux-gnu qemu=aarch64 ;;
armhf|arm|armv7) arch=armhf deb=armhf triplet=arm-linux-gnueabihf qemu=arm ;;
mips64el) deb=mips64el triplet=mips64el-linux-gnuabi64 qemu=mips64el ;;
"") echo "cross.sh: error: which architecture? aarch64, armhf or mips64el (try --help)" >&2; exit 2 ;;
*) echo "cross.sh: error: unknown architecture '$arch': aarch64, armhf or mips64el" >&2; exit 2 ;;
esac
sysroot=$top/build-$arch-sysroot
build=build-$arch
logs=$top/build-$arch-logs  # what apt, meson and ninja said
mkdir -p "$logs"
say() { echo "cross.sh: $*"; }
die() { echo "cross.sh: error: $*" >&2; exit 1; }

# ---- the toolchain and qemu (native packages) ----------------------------
native_pkgs="gcc-$triplet g++-$triplet qemu-user-static"
missing=""
for p in $native_pkgs; do
	[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ $install = 0 ] || [ "$(id -u)" != 0 ]; then
		die "missing:$missing (run as root without --no-install, or apt-get install$missing)"
	fi
	say "installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# --no-remove: never take a native package away for these
	# shellcheck disable=SC2086
	apt-get install -y -q --no-remove --no-install-recommends $missing >/dev/null ||
		{ apt-get update -q >/dev/null || true
		  apt-get install -y -q --no-remove --no-install-recommends $missing >/dev/null; } ||
		die "apt-get install$missing failed"
fi

# ---- the sysroot: ARCH's Debian packages, unpacked -----------------------
# The -dev packages of what meson.build links (tools/setup.sh's list),
# libstdc++ for the C++ programs, and libc6-dev: the compiler takes the
# sysroot whole (--sysroot), as on an ARCH machine.
dev_pkgs="libc6-dev zlib1g-dev libzstd-dev libdw-dev libelf-dev libunwind-dev libpcre2-dev
  libreadline-dev libsqlite3-dev libmicrohttpd-dev libbpf-dev libcurl4-openssl-dev libstdc++6"
# apt looks at ARCH's index only when told to (no dpkg --add-architecture:
# nothing of ARCH is installed with dpkg), and keeps the other lists.
aptarch="-o APT::Architectures::=$(dpkg --print-architecture) -o APT::Architectures::=$deb"
stamp="$sysroot/.complete"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$dev_pkgs" ]; then
	[ $install = 1 ] || die "no sysroot in $sysroot (run without --no-install)"
	# ARCH's index: a mirror caught mid-sync fails one architecture's
	# file; try again after a while, then go on with whatever index there
	# is (the download below says which package it cannot find).
	n=0
	# shellcheck disable=SC2086
	until apt-get update -q $aptarch -o APT::Get::List-Cleanup=false >"$logs/apt.log" 2>&1; do
		n=$((n + 1))
		[ $n -ge 4 ] && { say "apt-get update still fails for $deb (see $logs/apt.log): using the index there is"; break; }
		say "apt-get update failed for $deb (mirror syncing?): again in $((n * 10)) s"
		sleep $((n * 10))
	done
	# the packages and what they depend on, of ARCH only (the tools a
	# package's scripts use are not needed in a sysroot)
	# shellcheck disable=SC2086,SC2046  # the lists are meant to split
	pkgs=$(apt-cache $aptarch depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances $(for p in $dev_pkgs; do echo "$p:$deb"; done) |
		grep -E "^[a-z0-9].*:$deb\$" | sort -u |
		grep -vE '^(dpkg|install-info|tar|ncurses-bin|libc-dev-bin|rpcsvc-proto|perl-base|debconf):') ||
		die "apt-cache cannot list the $deb packages (no $deb index? see $logs/apt.log)"
	rm -rf "$sysroot"
	mkdir -p "$sysroot/debs"
	say "downloading $(echo "$pkgs" | wc -l) $deb packages into $sysroot"
	# shellcheck disable=SC2086
	(cd "$sysroot/debs" && apt-get $aptarch -o APT::Sandbox::User=root download $pkgs >/dev/null) ||
		die "apt-get download of the $deb packages failed"
	for d in "$sysroot"/debs/*.deb; do dpkg-deb -x "$d" "$sysroot"; done
	# absolute symlinks (libfoo.so -> /lib/TRIPLET/libfoo.so.1) point into
	# the sysroot
	find "$sysroot" -type l | while read -r l; do
		t=$(readlink "$l")
		case $t in /*) ln -sfn "$sysroot$t" "$l" ;; esac
	done
	rm -rf "$sysroot/debs"
	printf '%s' "$dev_pkgs" >"$stamp"
fi
printf "[constants]\nsysroot = '%s'\n" "$sysroot" >"$sysroot/sysroot.ini"

# ---- build ---------------------------------------------------------------
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" --cross-file "$sysroot/sysroot.ini" \
		--cross-file "tools/cross/$arch.ini" >"$logs/setup.log" 2>&1 ||
		{ tail -n 20 "$logs/setup.log"; die "meson setup $build failed (see $logs/setup.log)"; }
fi
ninja -C "$build" -j2 >"$logs/ninja.log" 2>&1 ||
	{ grep -E -A5 'FAILED|error' "$logs/ninja.log" | head -n 40; die "ninja -C $build failed (see $logs/ninja.log)"; }
say "built $build/memtrace and $build/libmemtrace-preload.so for $arch"
[ $test = 1 ] || exit 0

# ---- test under qemu-user ------------------------------------------------
# ARCH programs run through binfmt_misc (memtrace execs the program it
# records, which execs others): register qemu-ARCH-static from Debian's
# binfmt.d file where it is not yet.
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/qemu-$qemu" ]; then
	[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null ||
		die "binfmt_misc is not mounted at $binfmt and cannot be (root?)"
	[ -e "$binfmt/qemu-$qemu" ] || cat "/usr/lib/binfmt.d/qemu-$qemu.conf" >"$binfmt/register" ||
		die "cannot register qemu-$qemu-static with binfmt_misc"
fi
# the build machine's memtrace reports every recording too
if [ ! -f build/build.ninja ]; then
	meson setup build >"$logs/native-setup.log" 2>&1 || die "meson setup build failed (see $logs/native-setup.log)"
fi
ninja -C build -j2 memtrace >/dev/null || die "ninja -C build memtrace failed"
QEMU_LD_PREFIX=$sysroot MEMTRACE_SYSROOT=$sysroot MEMTRACE_NATIVE=$top/build/memtrace \
	meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 --suite unit --suite groundtruth --suite cross
