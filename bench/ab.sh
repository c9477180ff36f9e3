#!/bin/bash
# shellcheck disable=SC2046 # median takes its numbers as words
# bench/ab.sh - the cost of sampling measured inside one process: resnet18
# --profile-ab turns sampling on and off for alternate passes (in pairs
# ordered on-off, off-on, ...), so the machine's drift, which on a shared VM
# moves whole runs by 30% or more, falls out of each pair's ratio. It
# prices what sampling adds, not the library's presence: the 100 Hz rows of
# bench/overhead.sh show that part (within noise of 1.00).
#
# Rows, each at 1000 Hz unless named otherwise, alternated round by round:
#   stackprof HZ KIND   libstackprof.so, STACKPROF_FREQ=HZ, STACKPROF_TIMER=KIND
#   timer alone KIND    bench/empty_timer.c: the same perf event on the main
#                       thread, an empty handler, nothing else (one thread only)
# The "timer alone" rows are the floor: no profiler that samples at that
# rate with that mechanism can cost less on this machine.
#
# usage: bench/ab.sh [BUILD_DIR] [-r ROUNDS] [-b BATCH] [-t THREADS] [-n PASSES] [--quick]
#   -r ROUNDS   runs per row (default 5); the table shows the median run
#   -b BATCH    resnet18 --batch (default 1; at 8 a pass takes ~0.5-1 s)
#   -t THREADS  resnet18 --threads (default 1; the timer-alone rows need 1)
#   -n PASSES   timed passes per run (default 100: 50 pairs)
#   --quick     -r 2 -n 40
set -u
. "$(dirname "$0")/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build="" rounds=5 batch=1 threads=1 passes=100
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=${2:?}; shift 2 ;;
	-b) batch=${2:?}; shift 2 ;;
	-t) threads=${2:?}; shift 2 ;;
	-n) passes=${2:?}; shift 2 ;;
	--quick) rounds=2 passes=40; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; /shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build") || exit 2
RN=$build/resnet18
bench_tmpdir
T=$BENCH_TMP
cc -O2 -shared -fPIC -o "$T/empty_timer.so" "$(dirname "$0")/empty_timer.c" || exit 1

rows=(sp100-auto sp1000-trap sp1000-perf sp1000-thread sp4000-trap)
[ "$threads" = 1 ] && rows+=(empty-trap empty-perf empty-nosig)

# one ROW: prints "on_ms off_ms ratio"
one() {
	local row=$1 pre
	case $row in
	sp*)
		local x=${row#sp}
		pre=(env LD_PRELOAD="$build/libstackprof.so" STACKPROF_OUT="$T/s.prof" STACKPROF_OVERWRITE=1
			STACKPROF_QUIET=1 STACKPROF_FREQ="${x%%-*}" STACKPROF_TIMER="${x#*-}")
		;;
	empty-*) pre=(env LD_PRELOAD="$T/empty_timer.so" EMPTY_KIND="${row#empty-}" EMPTY_HZ=1000) ;;
	esac
	"${pre[@]}" "$RN" --batch "$batch" --threads "$threads" --iters "$passes" --warmup 2 --profile-ab 2>&1 |
		sed -n 's/.*sampling on \([0-9.]*\) ms, off \([0-9.]*\) ms (medians), ratio \([0-9.]*\).*/\1 \2 \3/p'
}

raw=$T/raw.txt
for ((r = 1; r <= rounds; r++)); do
	for row in "${rows[@]}"; do
		read -r on off ratio < <(one "$row")
		echo "$row $r ${on:--} ${off:--} ${ratio:--}" >>"$raw"
		printf '  round %d/%d %-12s ratio %s\n' "$r" "$rounds" "$row" "${ratio:--}" >&2
	done
done

label() {
	case $1 in
	sp*) local x=${1#sp}; echo "stackprof ${x%%-*} Hz ${x#*-}" ;;
	empty-*) echo "timer alone 1000 Hz ${1#empty-}" ;;
	esac
}
echo
echo "Sampling cost inside one resnet18 process (--profile-ab, batch $batch, --threads $threads, $passes passes a run)"
bench_machine
printf '%-28s %9s %9s %8s %17s\n' "row" "on ms" "off ms" "ratio" "(runs: min-max)"
for row in "${rows[@]}"; do
	sel() { awk -v w="$row" "\$1 == w { print $1 }" "$raw"; }
	printf '%-28s %9s %9s %8s %17s\n' "$(label "$row")" "$(fmt %.1f "$(median $(sel '$3'))")" \
		"$(fmt %.1f "$(median $(sel '$4'))")" "$(fmt %.4f "$(median $(sel '$5'))")" \
		"($(sel '$5' | sort -n | head -1)-$(sel '$5' | sort -n | tail -1))"
done
echo
echo "ratio: median over runs of each run's median pair ratio (on / off); targets 1.01 at 100 Hz, 1.03 at 1 kHz"
echo "command: $cmdline"
