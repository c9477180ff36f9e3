#!/bin/bash
# test.sh - builds stackprof and runs every test with CTest, on a fresh
# Debian bookworm machine: installs the missing packages first. Then builds
# the CLI and reader with ASan+UBSan and runs the post-run tests under them.
# Exits non-zero if any test fails.
#
#   bash tools/test.sh            every test but those labelled slow
#   bash tools/test.sh --all      the slow ones too (what CI runs)
#   bash tools/test.sh --load N   with N busy loops running beside the
#                                 tests all along, as on a shared machine
#                                 (CI runs --all --load 2)
set -u
cd "$(dirname "$0")/.."
all=0
load=0
while [ $# -gt 0 ]; do
	case "$1" in
	--all) all=1 ;;
	--load)
		load=${2:-}
		shift
		case "$load" in '' | *[!0-9]*) echo "test.sh: --load takes a number of busy loops" >&2; exit 2 ;; esac
		;;
	*) echo "usage: bash tools/test.sh [--all] [--load N]" >&2; exit 2 ;;
	esac
	shift
done
bash tools/install-deps.sh test || exit 1
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSP_WERROR=ON || exit 1
cmake --build build -j"$(nproc)" || exit 1

# busy loops beside the tests: bounds that assume a quiet machine fail here
loops=()
stop_loops() { [ ${#loops[@]} -eq 0 ] || kill "${loops[@]}" 2>/dev/null; }
trap stop_loops EXIT
for ((i = 0; i < load; i++)); do
	bash -c 'while :; do :; done' &
	loops+=($!)
done
[ "$load" -eq 0 ] || echo "test.sh: $load busy loops running beside the tests (pids ${loops[*]})"

status=0
start=$(date +%s)
labels=(-LE slow)
[ "$all" -eq 1 ] && labels=()
(cd build && ctest --output-on-failure -j2 "${labels[@]}") || {
	status=1
	# CI keeps only the tail of a run: name each failed test's failed
	# checks again at the end, with their times (a timeout shows there)
	log=build/Testing/Temporary/LastTest.log
	echo "test.sh: failed tests, and the lines of their logs that say FAIL:"
	awk '/^[0-9]+\/[0-9]+ Testing: / { t = $3; buf = "" }
		/^(FAIL|not ok)|\*\*\*|[Ee]rror|^Test time/ { buf = buf t ": " $0 "\n" }
		/^Test Failed/ { printf "%s%s: failed\n", buf, t; buf = "" }' \
		"$log" | tail -80
}
if [ -f tests/fuzz/run-sanitized.sh ]; then
	bash tests/fuzz/run-sanitized.sh build || status=1
fi
echo "test.sh: $(( $(date +%s) - start )) s of tests$([ "$load" -eq 0 ] || echo ", under $load busy loops")"
exit $status
