#!/bin/bash
# shellcheck disable=SC2046 # median takes its numbers as words: $(...) unquoted on purpose
# bench/python-cost.sh - Python frames, per interpreter: how true the
# profile is, and what one sample costs with Python frames on the stack
# next to the same depth of native frames (issue 16, point 8).
#
# One row per interpreter present: Debian's /usr/bin/python3 (the
# interpreter linked into the executable) and pyenv's newest CPython 3.10,
# 3.11, 3.12 and 3.13 (a shared libpython). A missing one is skipped with a
# line saying which.
#
# TV: workloads/python/split.py, which measures its own CPU split, profiled
# at 1 kHz (`stackprof run -F 1000`); the total variation between each
# function's share in the profile and in its truth, in percentage points
# (bench/pysplit-tv.awk, as tests/python/split-test.sh computes it; the
# test's bound is 2).
#
# Cost: the driver bench/python_cost.py calls down a chain of distinct
# Python functions to DEPTH Python frames (default 30) and spins in Python
# at the bottom, timing itself with its thread's CPU clock; bench/handler_cost.c does the same with DEPTH native
# frames (as bench/handler-cost.sh runs it). Each runs with and without
# LD_PRELOAD=libstackprof.so at -F HZ (default 1000), in alternating order,
# REPS times; the Python driver also runs with STACKPROF_PYTHON=0 (the
# interpreter's native frames only). Per sample, medians over REPS:
#   body    what `stackprof info` prints as "handler: N us of CPU per sample":
#           the handler's body, measured by the handler itself
#   thread  (thread CPU with - median thread CPU without) / samples: all the
#           sampled thread pays, signal delivery and return included
# and their ratios, Python / native (the target is at most 2). The Python
# driver's stack also holds the interpreter's own native frames under the
# Python ones (about 17 on 3.11+; on 3.10 a few more per Python call, as
# its eval loop recurses in C): all of them are walked.
#
# usage: bench/python-cost.sh [BUILD_DIR] [-r REPS] [-d DEPTH] [-F HZ]
#                             [-t SECONDS] [-s SECONDS] [--no-tv] [--quick]
#   BUILD_DIR   a stackprof build (default ./build)
#   -r REPS     runs of each configuration (default 5)
#   -d DEPTH    Python and native frames of the drivers (default 30)
#   -F HZ       STACKPROF_FREQ of the cost runs (default 1000)
#   -t SECONDS  CPU seconds of work per cost run without profiling (default 2)
#   -s SECONDS  split.py's CPU seconds per thread (default 3)
#   --no-tv     cost only
#   --quick     -r 3 -t 1 -s 2
# Runtime with the defaults: about 4 minutes with five interpreters.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build reps=5 depth=30 hz=1000 secs=2 split_secs=3 tv=1
limit=${BENCH_LIMIT:-120}
while [ $# -gt 0 ]; do
	case $1 in
	-r) reps=${2:?-r needs a number}; shift 2 ;;
	-d) depth=${2:?-d needs a depth}; shift 2 ;;
	-F) hz=${2:?-F needs a rate}; shift 2 ;;
	-t) secs=${2:?-t needs seconds}; shift 2 ;;
	-s) split_secs=${2:?-s needs seconds}; shift 2 ;;
	--no-tv) tv=0; shift ;;
	--quick) reps=3 secs=1 split_secs=2; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; /shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "python-cost.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build") || exit 2
SP=$build/stackprof
LIB=$build/libstackprof.so
SRC=$(cd "$here/.." && pwd)
bench_tmpdir
T=$BENCH_TMP
HC=$T/handler_cost
${CC:-cc} -O2 -g -fno-omit-frame-pointer -o "$HC" "$here/handler_cost.c" ||
	{ echo "python-cost.sh: cannot build bench/handler_cost.c" >&2; exit 1; }

# the interpreters: "label path" lines; notes for the missing ones
pythons=() notes=()
if [ -x /usr/bin/python3 ]; then pythons+=("debian /usr/bin/python3"); else notes+=("Debian's /usr/bin/python3 is not installed: skipped"); fi
for v in 3.10 3.11 3.12 3.13; do
	p=$(bench_python "$v")
	if [ -n "$p" ]; then pythons+=("$v $p"); else notes+=("pyenv's CPython $v is not installed: skipped"); fi
done
for n in "${notes[@]}"; do echo "python-cost: $n" >&2; done

# info_of PROFILE: "samples body_ns" from `stackprof info`
info_of() {
	"$SP" info --no-symbols "$1" 2>/dev/null | awk '
		/^samples:/ { s = $2 }
		/^handler:/ { h = $2 * ($3 == "ms" ? 1e6 : $3 == "us" ? 1e3 : 1) }
		END { print (s == "" ? "-" : s), (h == "" ? "-" : h) }'
}

# drive CMD... : one driver run; prints its thread CPU ns, or "-"
drive() {
	local out
	out=$(HC_ALARM=$limit "$@" 2>/dev/null)
	awk '$1 == "depth" { print $6; ok = 1 } END { if (!ok) print "-" }' <<<"$out"
}

# one LABEL CONFIG ITERS TAG CMD...: a run of a driver, CONFIG base, on
# (Python frames read) or off (STACKPROF_PYTHON=0); appends
# "LABEL CONFIG thread_ns samples body_ns" to the raw file
raw=$T/raw.txt
: >"$raw"
one() {
	local label=$1 cfg=$2 tag=$3
	shift 3
	local prof=$T/$label.$cfg.$tag.prof t s b
	case $cfg in
	base) t=$(drive "$@") s=- b=- ;;
	*)
		t=$(drive env LD_PRELOAD="$LIB" STACKPROF_OUT="$prof" STACKPROF_FREQ="$hz" STACKPROF_QUIET=1 \
			STACKPROF_PYTHON=$([ "$cfg" = off ] && echo 0 || echo 1) "$@")
		read -r s b < <(info_of "$prof")
		rm -f "$prof"
		;;
	esac
	echo "$label $cfg $t $s $b" >>"$raw"
	printf '  %-7s %-4s run %s: %s ns thread CPU, %s samples, body %s ns\n' "$label" "$cfg" "$tag" "$t" "$s" "$b" >&2
}

# calibrate CMD-WITHOUT-ITERS: iterations for `secs` of thread CPU
calibrate() {
	local n=2000000 ns
	ns=$(drive "$@" "$n")
	awk -v ns="$ns" -v n="$n" -v s="$secs" 'BEGIN { if (ns + 0 <= 0) print n; else printf "%d", n * s * 1e9 / ns }'
}

# split.py's total variation from its truth at 1 kHz
tvs=$T/tv.txt
: >"$tvs"
if [ "$tv" = 1 ]; then
	for row in "${pythons[@]}"; do
		read -r label py <<<"$row"
		d=$T/split.$label
		mkdir -p "$d"
		"$SP" run --no-summary -F 1000 -o "$d/s.prof" -- "$py" "$SRC/workloads/python/split.py" "$split_secs" >"$d/truth" 2>"$d/err"
		"$SP" collapse --frame func --metric us "$d/s.prof" >"$d/folded" 2>>"$d/err"
		v=$(awk -f "$here/pysplit-tv.awk" "$d/truth" "$d/folded" | awk '$1 == "TV" { print $2 }')
		read -r s _ < <(info_of "$d/s.prof")
		echo "$label ${v:--} $s" >>"$tvs"
		echo "  $label: split.py TV ${v:--} points over $s samples" >&2
		rm -rf "$d"
	done
fi

# the cost runs: native first, then each interpreter
n_iters=$(calibrate "$HC" "$depth")
echo "python-cost: native driver $n_iters iterations (~${secs}s), depth $depth, $hz Hz, $reps run(s) each" >&2
for ((r = 1; r <= reps; r++)); do
	if ((r % 2)); then
		one native base "$r" "$HC" "$depth" "$n_iters"
		one native on "$r" "$HC" "$depth" "$n_iters"
	else
		one native on "$r" "$HC" "$depth" "$n_iters"
		one native base "$r" "$HC" "$depth" "$n_iters"
	fi
done
for row in "${pythons[@]}"; do
	read -r label py <<<"$row"
	it=$(calibrate "$py" "$here/python_cost.py" "$depth")
	echo "python-cost: $label driver $it iterations (~${secs}s)" >&2
	for ((r = 1; r <= reps; r++)); do
		cfgs=(base on off)
		((r % 2)) || cfgs=(on off base)
		for c in "${cfgs[@]}"; do one "$label" "$c" "$r" "$py" "$here/python_cost.py" "$depth" "$it"; done
	done
done

# per-sample figures of LABEL CONFIG: "body_us thread_us samples"
figures() {
	local base
	base=$(median $(awk -v l="$1" '$1 == l && $2 == "base" { print $3 }' "$raw"))
	local body thr ns
	body=$(median $(awk -v l="$1" -v c="$2" '$1 == l && $2 == c { print $5 }' "$raw"))
	thr=$(median $(awk -v l="$1" -v c="$2" -v b="$base" '$1 == l && $2 == c && $3 ~ /^[0-9]/ && $4 > 0 && b != "-" { print ($3 - b) / $4 }' "$raw"))
	ns=$(median $(awk -v l="$1" -v c="$2" '$1 == l && $2 == c { print $4 }' "$raw"))
	awk -v a="$body" -v b="$thr" -v n="$ns" 'BEGIN {
		printf "%s %s %s\n", a == "-" ? "-" : a / 1000, b == "-" ? "-" : b / 1000, n }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b <= 0) print "-"; else printf "%.2f", a / b }'; }

read -r nb nt nn < <(figures native on)
echo
echo "Python frames: split.py's truth at 1 kHz, and the cost of one sample with $depth Python frames"
echo "next to $depth native frames ($hz Hz, medians of $reps runs)"
bench_machine
echo "native driver (bench/handler_cost.c, depth $depth): body $(fmt %.2f "$nb") us, thread $(fmt %.2f "$nt") us per sample, $(fmt %.0f "$nn") samples a run"
echo
printf '%-8s %-8s %7s %8s | %7s %7s %6s %8s | %7s %6s %8s\n' "python" "version" "split" "samples" "body" "body" "body" "body" \
	"thread" "thread" "thread"
printf '%-8s %-8s %7s %8s | %7s %7s %6s %8s | %7s %6s %8s\n' "" "" "TV pts" "a run" "us" "py off" "ratio" "samples" "us" "ratio" \
	""
for row in "${pythons[@]}"; do
	read -r label py <<<"$row"
	ver=$("$py" -c 'import platform; print(platform.python_version())' 2>/dev/null)
	read -r pb pt pn < <(figures "$label" on)
	read -r ob _ _ < <(figures "$label" off)
	tvv=$(awk -v l="$label" '$1 == l { print $2 }' "$tvs")
	printf '%-8s %-8s %7s %8s | %7s %7s %6s %8s | %7s %6s %8s\n' "$label" "${ver:-?}" "${tvv:--}" \
		"$(awk -v l="$label" '$1 == l { print $3 }' "$tvs")" "$(fmt %.2f "$pb")" "$(fmt %.2f "$ob")" \
		"$(ratio "$pb" "$nb")" "$(fmt %.0f "$pn")" "$(fmt %.2f "$pt")" "$(ratio "$pt" "$nt")" ""
done
for n in "${notes[@]}"; do echo "note: $n"; done
echo
echo "split TV: total variation of split.py's per-function shares from its own truth, 1 kHz (target <= 2 points)"
echo "body: the handler's body per sample as \`stackprof info\` prints it; py off: the same driver with"
echo "  STACKPROF_PYTHON=0 (the interpreter's native frames only); ratio: Python (on) / native driver"
echo "thread: (thread CPU with the preload - median without) / samples, signal delivery included"
echo "target (issue 16): Python <= 2x native at equal depth"
echo
echo "command: $cmdline"
