# lib.sh - shared by the end-to-end tests (git's t/test-lib.sh in small).
# Each test is run as: bash tNNNN-name.sh BUILD_DIR
set -u
SP_SOURCE_DIR=${SP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${1:?usage: $0 BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
SP="$BUILD/stackprof"
BIN="$BUILD/tests/bin"
TMP=$(mktemp -d /tmp/stackprof-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
# `stackprof run` copies the programs' own binaries into the build-id cache:
# the test's, never the user's ~/.cache
export STACKPROF_CACHE_DIR="$TMP/buildid-cache"
# and the host's timer interrupt, which `run` measures once per host into
# that cache (0.3 s of CPU), is not measured again for each test's runs:
# t0065-timer-cost measures it
export STACKPROF_TIMER_IRQ_NS=0
FAILED=0

say() { printf '%s\n' "$*"; }
fail() { say "FAIL: $*"; FAILED=1; }
skip() { say "SKIP: $*"; exit 77; }
ok() { say "ok: $*"; }
finish() {
	if [ "$FAILED" -ne 0 ]; then
		say "some checks failed"
		exit 1
	fi
	say "all checks passed"
	exit 0
}

# check DESCRIPTION COMMAND...: runs COMMAND, fails the test if it fails.
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

# has FILE PATTERN [CONDITION]: the first line of FILE that matches the awk
# PATTERN meets CONDITION too (an awk expression on its fields, default
# true). Fails when no line matches, where `awk '/p/ { exit !(c) }'` passes.
has() {
	awk "$2 { found = 1; ok = (${3:-1}); exit } END { exit !(found && ok) }" "$1"
}

# sampled_threads INFO MIN: how many threads `stackprof info` printed to
# INFO with at least MIN samples ("  TID  NAME  N samples  TIME" lines).
sampled_threads() {
	awk -v min="$2" '$(NF - 1) == "samples" && $(NF - 2) + 0 >= min { n++ } END { print n + 0 }' "$1"
}

# The debian python with torch; the first python3 on PATH may be another one.
TORCH_PY=/usr/bin/python3
have_torch() { [ -x "$TORCH_PY" ] && "$TORCH_PY" -c 'import torch, torchvision' 2>/dev/null; }

# share FOLDED REGEX: percentage of the folded value whose stack matches REGEX.
share() {
	awk -v re="$2" '{ v = $NF; t += v; if ($0 ~ re) m += v } END { if (t == 0) print 0; else printf "%.3f\n", 100 * m / t }' "$1"
}

# The Python package (python/stackprof), importable without installing it.
SP_PYTHONPATH="$SP_SOURCE_DIR/python"

# find_pythons: PYTHONS gets Debian's python3 and pyenv's 3.10-3.13 where
# they are installed; PY_MISSING names the others.
find_pythons() {
	PYTHONS=()
	PY_MISSING=""
	local root v p
	root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
	if [ -x /usr/bin/python3 ]; then PYTHONS+=(/usr/bin/python3); else PY_MISSING+=" /usr/bin/python3"; fi
	for v in 3.10 3.11 3.12 3.13; do
		p=$(ls -d "$root"/versions/$v.*/bin/python3 2>/dev/null | sort -V | tail -1)
		if [ -n "$p" ] && [ -x "$p" ]; then PYTHONS+=("$p"); else PY_MISSING+=" pyenv $v"; fi
	done
}

# need_pythons: PYTHONS gets every interpreter present (find_pythons); the
# test skips if there is none, and says which ones it does not test.
need_pythons() {
	find_pythons
	[ ${#PYTHONS[@]} -gt 0 ] || skip "no python3: neither Debian's nor pyenv's 3.10-3.13"
	[ -z "$PY_MISSING" ] || say "not installed, so not tested:$PY_MISSING"
}

# need_python: PY gets one interpreter, the first present (Debian's, then
# pyenv's 3.10 to 3.13); the test skips if there is none.
need_python() {
	find_pythons
	[ ${#PYTHONS[@]} -gt 0 ] || skip "no python3: neither Debian's nor pyenv's 3.10-3.13"
	PY=${PYTHONS[0]}
}

# pick_python VERSION: PY gets the interpreter a per-version Python test
# runs on: VERSION is 3.10 to 3.13 (pyenv's newest build of it, with a
# shared libpython) or "debian" (/usr/bin/python3, the interpreter linked
# into the executable). Skips the test, naming what is missing, otherwise.
pick_python() {
	local root
	if [ "$1" = debian ]; then
		PY=/usr/bin/python3
		[ -x "$PY" ] || skip "Debian's /usr/bin/python3 is not installed"
	else
		root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
		PY=$(ls -d "$root"/versions/$1.*/bin/python3 2>/dev/null | sort -V | tail -1)
		[ -n "$PY" ] && [ -x "$PY" ] || skip "pyenv's CPython $1 is not installed (looked in $root/versions)"
	fi
	"$PY" --version
}
