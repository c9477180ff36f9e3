#!/bin/bash
# run-fuzz.sh - builds a libFuzzer target with clang (ASan + UBSan), replays
# the committed corpus as a regression test, then fuzzes for a bounded time.
#
#   tests/fuzz/run-fuzz.sh [--build-only | --replay-only | --coverage] TARGET BUILD_DIR
#
#   --coverage    no fuzzing: builds a source-coverage binary, replays the
#                 committed corpus (and BUILD_DIR/TARGET-corpus if it exists)
#                 and prints llvm-cov's line/branch report of the code under test
#
#   TARGET        reader (format/reader.c), symbolize (symbolize/*.c, libdw) or
#                 cfi (sampler/capture/cfi.c: the handler's .eh_frame rule reader)
#   BUILD_DIR     where the binaries, the grown corpus and any crash go:
#                 BUILD_DIR/fuzz-TARGET, BUILD_DIR/TARGET-corpus/,
#                 BUILD_DIR/TARGET-artifacts/crash-*
#
# Environment:
#   FUZZ_SECONDS  fuzzing time after the replay (default 60; 0: replay only)
#   SP_FUZZ_CC    the clang to use (default: clang, then clang-14..19)
#   FUZZ_ARGS     extra libFuzzer flags, e.g. "-jobs=2 -workers=2"
#
# The fuzzers are compiled here, straight from the sources, rather than
# linked with the project's static libraries: those are built by whatever
# compiler CMake picked (gcc by default), and libFuzzer needs clang's
# -fsanitize=fuzzer instrumentation on the code under test.
#
# Exit status: 0 no crash; 1 a crash, a leak, a timeout or a build failure
# (the input is saved and its path printed); 77 clang or libFuzzer missing.
set -u
mode=all
case ${1:-} in
--build-only) mode=build; shift ;;
--replay-only) mode=replay; shift ;;
--coverage) mode=coverage; shift ;;
esac
usage="usage: $0 [--build-only|--replay-only|--coverage] reader|symbolize|cfi BUILD_DIR"
target=${1:?$usage}
build=${2:?$usage}
src=${SP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
seconds=${FUZZ_SECONDS:-60}
mkdir -p "$build" || exit 1
build=$(cd "$build" && pwd)

case $target in
reader)
	# writer.c: the built-in event kinds (sp_prof_event_builtin) the reader knows
	sources=("$src/tests/fuzz/fuzz-reader.c" "$src"/format/buf.c "$src"/format/reader.c
		"$src"/format/writer.c)
	incs=(-I"$src")
	libs=(-lz)
	;;
symbolize)
	sources=("$src/tests/fuzz/fuzz-symbolize.c" "$src"/symbolize/*.c "$src"/format/cfiread.c)
	incs=(-I"$src")
	libs=(-ldw -lelf -lz -ldl -lpthread)
	;;
cfi)
	sources=("$src/tests/fuzz/fuzz-cfi.c" "$src"/sampler/capture/cfi.c "$src"/format/cfiread.c)
	incs=(-D_GNU_SOURCE -I"$src") # dl_phdr_info
	libs=()
	;;
*)
	echo "run-fuzz.sh: unknown target '$target' (reader, symbolize or cfi)" >&2
	exit 2
	;;
esac

# clang with libFuzzer (Debian: clang + libclang-rt-NN-dev)
cc=${SP_FUZZ_CC:-}
if [ -z "$cc" ]; then
	for c in clang clang-14 clang-15 clang-16 clang-17 clang-18 clang-19; do
		command -v "$c" >/dev/null && cc=$c && break
	done
fi
if [ -z "$cc" ] || ! command -v "$cc" >/dev/null; then
	echo "SKIP: no clang found (set SP_FUZZ_CC): libFuzzer needs clang" >&2
	exit 77
fi
san=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
probe=$build/.probe-$$
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$probe.c"
if ! "$cc" "${san[@]}" "$probe.c" -o "$probe" 2>"$probe.err"; then
	echo "SKIP: $cc cannot build with ${san[*]} (Debian: apt-get install libclang-rt-14-dev):" >&2
	head -3 "$probe.err" >&2
	rm -f "$probe" "$probe.c" "$probe.err"
	exit 77
fi
rm -f "$probe" "$probe.c" "$probe.err"

if [ "$mode" = coverage ]; then
	cov=$build/cov-$target
	ver=$("$cc" --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
	profdata=$(command -v "llvm-profdata-$ver" || command -v llvm-profdata)
	llvmcov=$(command -v "llvm-cov-$ver" || command -v llvm-cov)
	if [ -z "$profdata" ] || [ -z "$llvmcov" ]; then
		echo "SKIP: llvm-profdata/llvm-cov not found" >&2
		exit 77
	fi
	"$cc" -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping -g -O0 -std=gnu11 \
		"${incs[@]}" "${sources[@]}" "${libs[@]}" -o "$cov" || exit 1
	dirs=("$src/tests/fuzz/corpus/$target")
	[ -d "$build/$target-corpus" ] && dirs+=("$build/$target-corpus")
	rm -f "$cov".*.profraw
	LLVM_PROFILE_FILE="$cov.%p.profraw" "$cov" -runs=0 "${dirs[@]}" </dev/null >"$cov.log" 2>&1 ||
		{ tail -20 "$cov.log" >&2; exit 1; }
	"$profdata" merge -sparse "$cov".*.profraw -o "$cov.profdata" || exit 1
	rm -f "$cov".*.profraw
	# the code under test only, not the harness
	"$llvmcov" report "$cov" -instr-profile="$cov.profdata" "${sources[@]:1}"
	exit 0
fi

# rebuilt when any source, header or this script is newer than the binary
bin=$build/fuzz-$target
stale=1
if [ -x "$bin" ]; then
	stale=$(find "${sources[@]}" "$src/format" "$src/symbolize" "$src/sampler" "${BASH_SOURCE[0]}" \
		-newer "$bin" -name '*.[ch]' -o -newer "$bin" -name '*.sh' | head -1)
	[ -n "$stale" ] || stale=
fi
if [ -n "$stale" ]; then
	echo "building $bin with $cc"
	if ! "$cc" "${san[@]}" -g -O1 -fno-omit-frame-pointer -std=gnu11 \
		-Wall -Wextra -Wno-unused-parameter "${incs[@]}" "${sources[@]}" "${libs[@]}" \
		-o "$bin.tmp"; then
		echo "FAIL: building fuzz-$target" >&2
		exit 1
	fi
	mv "$bin.tmp" "$bin"
fi
[ "$mode" = build ] && exit 0

corpus=$src/tests/fuzz/corpus/$target
work=$build/$target-corpus
artifacts=$build/$target-artifacts
mkdir -p "$work" "$artifacts"
# -timeout: a single input taking longer is a hang, and a failure;
# rss_limit: the reader caps a record at 64 MB, so 2 GB is a leak or a bomb
common=(-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" -print_final_stats=1)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

report() {
	local what=$1 log=$2
	local input
	input=$(ls -t "$artifacts"/{crash,leak,timeout,oom,slow-unit}-* 2>/dev/null | head -1)
	echo "FAIL: fuzz-$target: $what" >&2
	grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|    #[0-9] )' "$log" | head -25 >&2
	if [ -n "$input" ]; then
		echo "input saved: $input" >&2
		echo "reproduce:   $bin $input" >&2
		echo "minimize:    $bin -minimize_crash=1 -runs=20000 $input" >&2
	fi
	echo "full log:    $log" >&2
	exit 1
}

# 1. regression: every committed input must pass (crashes found earlier and
#    fixed are moved into corpus/ by whoever fixes them)
n=$(find "$corpus" -type f | wc -l)
echo "replaying $n inputs of $corpus"
start=$(date +%s)
if ! "$bin" "${common[@]}" -runs=0 "$corpus" </dev/null >"$build/$target-replay.log" 2>&1; then
	report "a committed corpus input fails" "$build/$target-replay.log"
fi
grep -E '^#[0-9]+.*(INITED|DONE)' "$build/$target-replay.log" | tail -1
echo "replay: $(($(date +%s) - start)) s"
[ "$mode" = replay ] && exit 0
[ "$seconds" -gt 0 ] 2>/dev/null || exit 0

# 2. bounded fuzzing; new inputs land in the build tree, never in the source
echo "fuzzing for $seconds s (new inputs in $work)"
# shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
if ! "$bin" "${common[@]}" -max_total_time="$seconds" ${FUZZ_ARGS:-} "$work" "$corpus" \
	</dev/null >"$build/$target-fuzz.log" 2>&1; then
	report "the fuzzer found a failing input" "$build/$target-fuzz.log"
fi
grep -E '^#[0-9]+' "$build/$target-fuzz.log" | tail -1
grep -E '^stat::' "$build/$target-fuzz.log"
echo "no crash in $seconds s; $(find "$work" -type f | wc -l) new inputs in $work"
