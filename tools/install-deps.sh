#!/bin/bash
# install-deps.sh [build|test] - installs the Debian (bookworm) packages that
# stackprof needs and that are missing, and nothing else. Run as root; runs
# apt-get only when something is missing.
#   build: what the build and the demo need
#   test:  also the programs the tests run (torch, python3.11-dbg, xz, ...)
set -eu
what=${1:-build}

build_pkgs="build-essential cmake pkg-config libunwind-dev libdw-dev libelf-dev zlib1g-dev"
# elfutils: eu-addr2line, the symbolizer's reference; python3.11-dbg: a large
# binary with full DWARF; python3-torch(vision): the real inference target;
# clang + libclang-rt-14-dev: libFuzzer; libxml2-utils: xmllint for the SVG;
# procps: pgrep; gzip, xz-utils, sqlite3: other programs nobody here wrote;
# golang-go: `go tool pprof`, the real pprof reader
test_pkgs="python3 elfutils python3.11-dbg python3-torch python3-torchvision xz-utils sqlite3 gzip
  libxml2-utils procps perl clang libclang-rt-14-dev binutils golang-go"

pkgs=$build_pkgs
[ "$what" = test ] && pkgs="$build_pkgs $test_pkgs"
# node and npm run the pprof/speedscope consumer checks: Debian's only if none is there
if [ "$what" = test ] && ! command -v npm >/dev/null 2>&1; then
	pkgs="$pkgs nodejs npm"
fi

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "install-deps: all $what packages are installed"
	exit 0
fi
echo "install-deps: installing:$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: not root; run as root or install them yourself:" >&2
	echo "  apt-get install$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
