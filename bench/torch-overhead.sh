#!/bin/bash
# shellcheck disable=SC2046 # median/iqr take their numbers as words: $(...) unquoted on purpose
# bench/torch-overhead.sh - what profiling costs torchvision's ResNet18
# under Debian's python3 and torch, Python frames included (issue 16,
# point 8: at most 1% at 100 Hz).
#
# workloads/torch/resnet18_infer.py (--batch B --iters N --threads T) runs
# with and without LD_PRELOAD=libstackprof.so; the cost is the whole
# process's CPU time (user + system, from wait4's rusage: bench/cputime.c),
# start-up (import torch), every thread, the writer and the final flush
# included, as `bench/overhead.sh --process` measures resnet18. Rows:
#   python on    STACKPROF_FREQ=HZ, Python frames read (the default)
#   python off   the same with STACKPROF_PYTHON=0: native stacks only
#   timer alone  bench/empty_timer.c: the timer kind the default picks here
#                (a probe run reads it from the profile), at HZ on every
#                thread, with an empty handler. No sampler using that timer
#                can cost less; on a VM its interrupts are most of the cost
# Each pair runs the unprofiled command and one row back to back, in an
# order that alternates from pair to pair; a row's ratio is the median over
# PAIRS of with / without, shown with the interquartile range and the
# extremes. "python's share" is the on row's ratio minus the off row's,
# "over the timer" the on row's minus the timer-alone row's.
#
# usage: bench/torch-overhead.sh [BUILD_DIR] [-p PAIRS] [-F HZ] [-b BATCH]
#                                [-i ITERS] [-t THREADS] [--quick]
#   -p PAIRS    pairs per row (default 12)
#   -F HZ       STACKPROF_FREQ (default 100)
#   -b BATCH    --batch (default 5)
#   -i ITERS    --iters (default 20: about 6 s of CPU a run here)
#   -t THREADS  --threads (default 1: torch's pool does not spin, so the CPU
#               time moves less with the neighbours' load)
#   --quick     -p 4 -i 8
# Runtime with the defaults: about 8 minutes. Skips (exit 77) without
# /usr/bin/python3 with torch and torchvision.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build pairs=12 hz=100 batch=5 iters=20 threads=1
while [ $# -gt 0 ]; do
	case $1 in
	-p) pairs=${2:?-p needs a number}; shift 2 ;;
	-F) hz=${2:?-F needs a rate}; shift 2 ;;
	-b) batch=${2:?-b needs a batch}; shift 2 ;;
	-i) iters=${2:?-i needs a number}; shift 2 ;;
	-t) threads=${2:?-t needs a number}; shift 2 ;;
	--quick) pairs=4 iters=8; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; /shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "torch-overhead.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build") || exit 2
SP=$build/stackprof
LIB=$build/libstackprof.so
bench_need_torch 77
WL=$(cd "$here/.." && pwd)/workloads/torch/resnet18_infer.py
bench_tmpdir
T=$BENCH_TMP
cc -O2 -o "$T/cputime" "$here/cputime.c" || exit 1
cc -O2 -shared -fPIC -o "$T/empty_timer.so" "$here/empty_timer.c" || exit 1

# the timer the default picks for this interpreter here, as empty_timer.c names it
LD_PRELOAD="$LIB" STACKPROF_OUT="$T/probe.prof" STACKPROF_QUIET=1 "$PY" -c pass >/dev/null 2>&1
kind=$(empty_kind "$T/probe.prof")
rows="on off"
[ "$kind" != - ] && rows="on off alone"

# run ROW TAG: one run; prints "cpu_s wall_s samples python-status-word"
run() {
	local row=$1 d=$T/$1.$2 pre=()
	mkdir -p "$d"
	case $row in
	on | off)
		local pyon=1
		[ "$row" = off ] && pyon=0
		pre=(env LD_PRELOAD="$LIB" STACKPROF_OUT="$d/s.prof" STACKPROF_FREQ="$hz" STACKPROF_QUIET=1
			STACKPROF_PYTHON="$pyon")
		;;
	alone) pre=(env LD_PRELOAD="$T/empty_timer.so" EMPTY_HZ="$hz" EMPTY_KIND="$kind" EMPTY_THREADS=all) ;;
	esac
	"$T/cputime" "$d/rusage" "${pre[@]}" "$PY" "$WL" --batch "$batch" --iters "$iters" --threads "$threads" \
		>"$d/out" 2>"$d/err"
	local s=- py=-
	if [ -f "$d/s.prof" ]; then
		read -r s py < <("$SP" info --no-symbols "$d/s.prof" 2>/dev/null | awk '
			/^samples:/ { s = $2 }
			/^python:/ { p = ($0 ~ /frames read/ && $0 !~ /not read/) ? "read" : "off" }
			END { print (s == "" ? "-" : s), (p == "" ? "-" : p) }')
	fi
	grep -q '^IndexError: ok' "$d/out" || echo "torch-overhead: $row run $2 did not print 'IndexError: ok'" >&2
	echo "$(awk '{ print $1, $4 }' "$d/rusage" 2>/dev/null || echo - -) $s $py"
	rm -rf "$d"
}

raw=$T/raw.txt
: >"$raw"
echo "torch-overhead: resnet18_infer.py --batch $batch --iters $iters --threads $threads, $hz Hz, $pairs pairs a row, rows: $rows (timer: $kind)" >&2
for ((p = 1; p <= pairs; p++)); do
	for row in $rows; do
		# base first in odd pairs for "on" and "alone", in even ones for "off"
		k=$p
		[ "$row" = off ] && k=$((p + 1))
		if ((k % 2)); then
			read -r bc bw _ < <(run base "$p$row")
			read -r pc pw ps pp < <(run "$row" "$p")
		else
			read -r pc pw ps pp < <(run "$row" "$p")
			read -r bc bw _ < <(run base "$p$row")
		fi
		echo "$row $p $bc $pc $bw $pw $ps $pp" >>"$raw"
		printf '  pair %d/%d %-4s CPU %s s -> %s s (%s samples, python %s)\n' "$p" "$pairs" "$row" "$bc" "$pc" "$ps" "$pp" >&2
	done
done

echo
echo "Whole-process CPU time of torchvision ResNet18 (Debian python3, torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)),"
echo "with and without the preload at $hz Hz (median of $pairs alternating pairs a row)"
bench_machine
echo "resnet18_infer.py --batch $batch --iters $iters --threads $threads"
echo
printf '%-12s %8s %8s %8s %15s %17s %8s %8s\n' "row" "CPU s" "CPU s" "CPU" "(IQR)" "(min-max)" "wall" "samples"
printf '%-12s %8s %8s %8s %15s %17s %8s %8s\n' "" "without" "with" "ratio" "" "" "ratio" "per run"
for row in $rows; do
	label="python $row"
	[ "$row" = alone ] && label="timer alone"
	sel() { awk -v r="$row" "\$1 == r { print $1 }" "$raw"; }
	rs=$(sel '($3 > 0 && $4 ~ /^[0-9]/) ? $4 / $3 : "-"')
	printf '%-12s %8s %8s %8s %15s %17s %8s %8s\n' "$label" "$(fmt %.3f "$(median $(sel '$3'))")" \
		"$(fmt %.3f "$(median $(sel '$4'))")" "$(fmt %.4f "$(median $rs)")" "$(iqr $rs)" \
		"($(printf '%s\n' $rs | grep -v '^-$' | sort -g | head -1 | xargs printf '%.4f')-$(printf '%s\n' $rs | grep -v '^-$' | sort -g | tail -1 | xargs printf '%.4f'))" \
		"$(fmt %.3f "$(median $(sel '($5 > 0 && $6 ~ /^[0-9]/) ? $6 / $5 : "-"'))")" "$(fmt %.0f "$(median $(sel '$7'))")"
done
on=$(median $(awk '$1 == "on" && $3 > 0 && $4 ~ /^[0-9]/ { print $4 / $3 }' "$raw"))
off=$(median $(awk '$1 == "off" && $3 > 0 && $4 ~ /^[0-9]/ { print $4 / $3 }' "$raw"))
alone=-
if [ "$kind" != - ]; then
	alone=$(median $(awk '$1 == "alone" && $3 > 0 && $4 ~ /^[0-9]/ { print $4 / $3 }' "$raw"))
fi
echo
echo "python's share: $(awk -v a="$on" -v b="$off" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.2f points", 100 * (a - b) }')" \
	"(the on row's ratio minus the off row's)"
echo "over the timer: $(awk -v a="$on" -v b="$alone" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.2f points", 100 * (a - b) }')" \
	"(the on row's ratio minus the timer-alone row's: what stackprof adds to its timer)"
echo "timer alone: bench/empty_timer.c, EMPTY_KIND=$kind EMPTY_HZ=$hz EMPTY_THREADS=all, an empty handler"
echo "python: Python frames $(awk '$1 == "on" { print $8 }' "$raw" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')" \
	"in the on rows, $(awk '$1 == "off" { print $8 }' "$raw" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }') in the off rows (from stackprof info)"
echo "CPU: user + system time of the whole process (wait4's rusage); ratio: median over pairs of with / without"
echo "target (issue 16): ratio <= 1.01 at 100 Hz, Python frames included"
echo
echo "command: $cmdline"
