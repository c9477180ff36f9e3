#!/bin/bash
# run-sanitized.sh - builds the tree with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DSP_SANITIZE=address,undefined: the CLI,
# format/, symbolize/, export/ and their tests; never the preload library)
# and runs the tests of the post-run side under them: unit/, export/,
# symbolize/ and the hostile-input end-to-end test e2e/t0009-crash. Then the
# sanitized CLI reads every hostile profile of the fuzz corpus
# (tests/fuzz/corpus/cli/: the reader corpus as files: cut, corrupt, junk,
# what the fuzzer found): `info -m`, `collapse`, `table` and the operator and
# module-path views (`collapse --ops`, `top --aggregate-by module-path`, which
# walks range parent chains) must each exit 0 or 1, say why on stderr when 1,
# and never trip a sanitizer.
#
#   tests/fuzz/run-sanitized.sh BUILD_DIR
#
# The build goes to BUILD_DIR/asan. Environment:
#   SP_SAN_CC      compiler (default: cc, i.e. gcc on Debian; clang works too)
#   SP_SAN_TESTS   ctest -R regex (default below)
#   SP_SAN_SKIP    ctest -E regex; default: the consumer tests that need
#                  packages from the npm registry (network); "" runs them
#   SP_SAN_JOBS    build and test parallelism (default: nproc)
# Exit status: ctest's (0 all passed), 1 on a configure or build failure.
set -u
build=${1:?usage: $0 BUILD_DIR}
src=${SP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build" && build=$(cd "$build" && pwd)/asan || exit 1
jobs=${SP_SAN_JOBS:-$(nproc)}
tests=${SP_SAN_TESTS:-'^(unit/|export/|symbolize/|e2e/t0009-crash$)'}
skip=${SP_SAN_SKIP-'^export/(npm-setup|consumer-(pprof|speedscope|svgjs))$'}

start=$(date +%s)
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	${SP_SAN_CC:+-DCMAKE_C_COMPILER="$SP_SAN_CC"} \
	-DSP_SANITIZE=address,undefined -DSP_WERROR=OFF >"$build.configure.log" 2>&1 || {
	cat "$build.configure.log" >&2
	echo "FAIL: configure" >&2
	exit 1
}
cmake --build "$build" -j "$jobs" >"$build.build.log" 2>&1 || {
	grep -E 'error|Error' "$build.build.log" | head -20 >&2
	echo "FAIL: build (log: $build.build.log)" >&2
	exit 1
}
echo "built in $(($(date +%s) - start)) s: $build"

# Any report fails the test that hit it: -fno-sanitize-recover=all makes
# UBSan abort; ASan's leak checker runs at exit of every CLI process.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
t0=$(date +%s)
args=(--test-dir "$build" -R "$tests" -j "$jobs" --output-on-failure)
[ -n "$skip" ] && args+=(-E "$skip")
ctest "${args[@]}"
rc=$?
echo "ctest: $(($(date +%s) - t0)) s"

t0=$(date +%s)
sp=$build/stackprof
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
for f in "$src"/tests/fuzz/corpus/cli/*; do
	[ -f "$f" ] || continue
	for cmd in "info -m" collapse table "collapse --ops" "top --aggregate-by module-path"; do
		n=$((n + 1))
		# shellcheck disable=SC2086 # cmd is a subcommand and its options
		timeout 60 "$sp" $cmd "$f" </dev/null >/dev/null 2>"$tmp/err"
		r=$?
		why=
		if [ $r -gt 1 ]; then
			why="exit status $r"
		elif [ $r -eq 1 ] && [ ! -s "$tmp/err" ]; then
			why="exit 1 without a message"
		elif grep -qE 'Sanitizer|runtime error' "$tmp/err"; then
			why="sanitizer report"
		fi
		if [ -n "$why" ]; then
			bad=$((bad + 1))
			echo "FAIL: stackprof $cmd $f: $why"
			head -20 "$tmp/err"
		fi
	done
done
echo "hostile profiles: $n CLI runs, $bad failed, $(($(date +%s) - t0)) s"
[ $bad -eq 0 ] || rc=1
echo "total $(($(date +%s) - start)) s"
exit $rc
