#!/bin/bash
# run.sh [STACKPROF] - symbolization speed against the usual tools.
#
# 20,000 random .text addresses of python3.11d (fixed seed) through
# `stackprof symbolize`, llvm-symbolizer --inlining --demangle, binutils
# addr2line -f -i -C and eu-addr2line -f -i -C, in one run. Each tool reads
# the addresses from a file on stdin and writes to /dev/null; the time is
# wall-clock and includes process start and reading the debug info. Fast
# tools run BENCH_RUNS times (default 5; best and median shown), eu-addr2line
# once (it takes seconds). Prints a table and the stackprof/llvm-symbolizer
# ratio (target: at most 0.5).
#
#   bench/symbolize/run.sh build/stackprof
#   BENCH_N=2000 BENCH_ELF=/lib/x86_64-linux-gnu/libc.so.6 bench/symbolize/run.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
sp=${1:-$here/../../build/stackprof}
elf=${BENCH_ELF:-/usr/bin/python3.11d}
n=${BENCH_N:-20000}
runs=${BENCH_RUNS:-5}
seed=${BENCH_SEED:-7}

[ -x "$sp" ] || { echo "run.sh: no stackprof binary at $sp (give its path)" >&2; exit 2; }
[ -r "$elf" ] || { echo "run.sh: $elf is missing (apt-get install python3.11-dbg)" >&2; exit 1; }
command -v python3 > /dev/null || { echo "run.sh: python3 is needed to draw addresses" >&2; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

read -r start size < <(LC_ALL=C readelf -SW "$elf" |
	awk '{ for (i = 1; i < NF; i++) if ($i == ".text") { print $(i + 2), $(i + 4); exit } }')
python3 - "$start" "$size" "$n" "$seed" > "$tmp/addrs" <<'PY'
import random, sys
start, size, n, seed = int(sys.argv[1], 16), int(sys.argv[2], 16), int(sys.argv[3]), int(sys.argv[4])
r = random.Random(seed)
print("\n".join(hex(start + r.randrange(size)) for _ in range(n)))
PY

# time_tool NAME RUNS CMD...: prints "NAME|runs|best|median|lines"
time_tool() {
	local name=$1 k=$2
	shift 2
	if ! command -v "$1" > /dev/null; then
		echo "$name|0|-|-|not installed"
		return
	fi
	local ts=() i t0 t1
	for ((i = 0; i < k; i++)); do
		t0=$EPOCHREALTIME
		"$@" < "$tmp/addrs" > "$tmp/out" 2> /dev/null
		t1=$EPOCHREALTIME
		ts+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
	done
	local sorted
	sorted=$(printf '%s\n' "${ts[@]}" | sort -n)
	echo "$name|$k|$(head -1 <<< "$sorted")|$(sed -n "$(((k + 1) / 2))p" <<< "$sorted")|$(wc -l < "$tmp/out")"
}

{
	time_tool "stackprof symbolize" "$runs" "$sp" symbolize -e "$elf"
	time_tool "llvm-symbolizer" "$runs" llvm-symbolizer --inlining --demangle --obj="$elf"
	time_tool "addr2line (binutils)" "$runs" addr2line -f -i -C -e "$elf"
	time_tool "eu-addr2line" 1 eu-addr2line -f -i -C -e "$elf"
} > "$tmp/table"

echo "$n random .text addresses of $elf ($(nproc) CPUs, $(uname -r))"
printf '%-22s %5s %9s %10s %8s\n' tool runs "best (s)" "median (s)" lines
awk -F'|' '{ printf "%-22s %5s %9s %10s %8s\n", $1, $2, $3, $4, $5 }' "$tmp/table"
ours=$(awk -F'|' '$1 == "stackprof symbolize" { print $3 }' "$tmp/table")
llvm=$(awk -F'|' '$1 == "llvm-symbolizer" { print $3 }' "$tmp/table")
if [ "$llvm" != "-" ] && [ -n "$llvm" ]; then
	awk -v a="$ours" -v b="$llvm" 'BEGIN {
		r = a / b
		printf "stackprof / llvm-symbolizer (best times): %.2f (target <= 0.50: %s)\n", r,
			r <= 0.5 ? "met" : "NOT met"
	}'
fi
