#!/bin/bash
# shellcheck disable=SC2046 # median/iqr take their numbers as words: $(...) unquoted on purpose
# bench/overhead.sh - what profiling costs resnet18, as a ratio of profiled
# to unprofiled time measured in the same benchmark run.
#
# resnet18 (workloads/resnet18, built as BUILD_DIR/resnet18) runs `--batch B
# --iters N --threads 2` and prints "median X ms/iter". Each profiled
# configuration is paired with an unprofiled run next to it (every round runs
# every pair; the order inside a pair alternates between rounds, A B / B A),
# so that the machine's load drifts out of the ratio; the reported ratio is
# the median over rounds of the paired ratios profiled/unprofiled, with the
# interquartile range of those ratios to show the noise. The CPU ratio
# (user+sys of everything the command started, perf's own process included)
# is shown next to it. With 2 threads on 2 CPUs resnet18's pool spins while
# it waits, so on a shared machine both figures move with the neighbours'
# load; `-t 1` (one thread, no spinning) makes the CPU ratio the steadier
# measure of what the profiler adds.
#
# Configurations:
#   stackprof  LD_PRELOAD=libstackprof.so STACKPROF_FREQ=100, 1000, 4000
#              (timer "auto": posix CPU timers at 100 Hz, perf-sigtrap above),
#              and 1000 Hz with the perf-task-clock (SIGPROF) timer for comparison
#   gperftools LD_PRELOAD=libprofiler.so CPUPROFILE_FREQUENCY=100, 1000
#              (if installed: apt-get install libgoogle-perftools4;
#              setitimer(ITIMER_PROF): one signal per kernel
#              tick at most for the whole process, whatever the frequency)
#   perf       perf record -g -F 1000 -e cpu-clock (if usable)
# For stackprof the raw profile's size per sample is reported too (file size
# and samples from `stackprof info`); for gperftools the samples it took
# ("interrupts" in its exit message); for perf the samples it wrote.
# Outputs go to a temp dir that is removed at the end.
#
# Targets (DESIGN.md / issue): at most 1% at 100 Hz, at most 3% at 1 kHz.
#
# --process (issue 15): the whole process's CPU time as the user pays it.
# resnet18 --threads 2 (batch 1, or the first -b) runs with and without the
# preload; the cost is the CPU time (user + system) of the whole process,
# from wait4()'s rusage (bench/cputime.c): start-up, every thread, the
# writer thread and the final flush included. Two run lengths, ~1 s and
# ~3 s of wall time (iterations from a first unprofiled run's ms/iter, or
# -i), PAIRS alternating pairs each (with/without, then without/with, ...);
# the ratio is the median of the pairs' with / without. Rows at each rate
# of -F (default 100 and 1000 Hz):
#   stackprof HZ Hz default   LD_PRELOAD=libstackprof.so STACKPROF_FREQ=HZ,
#                             no STACKPROF_TIMER: the timer users get
#   timer alone HZ Hz KIND    bench/empty_timer.c with the timer kind the
#                             default picked at HZ here (found by a probe
#                             run), armed on every thread, empty handler:
#                             the floor for a sampler with that timer
# and, for each stackprof row, its ratio minus the timer-alone row's.
#
# usage: bench/overhead.sh [BUILD_DIR] [-r ROUNDS] [-b "1 8"] [-t THREADS]
#                           [-c CONFIGS] [--quick]
#        bench/overhead.sh [BUILD_DIR] --process [-n PAIRS] [-i "I1 I3"]
#                           [-F "100 1000"] [-b BATCH] [-t THREADS]
#   BUILD_DIR   a stackprof build (default ./build)
#   -r ROUNDS   pairs per configuration (default 9 at batch 1, 5 at batch 8)
#   -t THREADS  resnet18 --threads (default 2)
#   -b BATCHES  batch sizes (default "1 8"); iterations per run: 10 at batch 1,
#               3 at batch 8, 1 warm-up (BENCH_ITERS overrides)
#   -c CONFIGS  subset, e.g. "sp100 sp1000" (default all that are installed:
#               sp100 sp1000 sp1000-perf sp4000 gperf100 gperf1000 perf1000);
#               spHZ-KIND sets STACKPROF_TIMER=KIND (posix, trap, perf, thread, itimer)
#   --quick     -r 3 -b 1 (about 2 minutes)
#   --process   the whole-process mode above; its options:
#     -n PAIRS    alternating pairs per row and run length (default 10)
#     -i "I1 I3"  timed iterations of the short and long runs (default: ~1 s
#                 and ~3 s of wall time from a first run's ms/iter)
#     -F RATES    sampling rates (default "100 1000")
# Runtime with the defaults: about 15-18 minutes on a 2-core machine (more
# when it is loaded); --process: 4 rows x 10 pairs x 2 runs x (1 + 3) s,
# about 6 minutes on an idle machine.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build
rounds=""
batches="1 8"
threads=2
want=""
process=0
pm_pairs=10
pm_iters=""
pm_rates="100 1000"
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=${2:?-r needs a number}; shift 2 ;;
	-b) batches=${2:?-b needs batch sizes}; shift 2 ;;
	-t) threads=${2:?-t needs a thread count}; shift 2 ;;
	-c) want=${2:?-c needs configs}; shift 2 ;;
	--quick) rounds=3; batches=1; shift ;;
	--process) process=1; shift ;;
	-n) pm_pairs=${2:?-n needs a number}; shift 2 ;;
	-i) pm_iters=${2:?-i needs iteration counts}; shift 2 ;;
	-F) pm_rates=${2:?-F needs rates}; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; /shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "overhead.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build") || exit 2
SP=$build/stackprof
LIB=$build/libstackprof.so
RN=$build/resnet18
[ -x "$RN" ] || { echo "overhead.sh: $RN is missing" >&2; exit 2; }
bench_tmpdir
T=$BENCH_TMP

# ---- --process: the whole process's CPU time, as the user pays it -----------

# pm_timer_kind HZ: the timer stackprof's default picks at HZ on this machine
# (from a one-pass resnet18 run), as EMPTY_KIND for the timer-alone row, or
# "-" when bench/empty_timer.c has no equivalent
pm_timer_kind() {
	local d=$T/probe.$1
	mkdir -p "$d"
	env -u STACKPROF_TIMER LD_PRELOAD="$LIB" STACKPROF_OUT="$d/s.prof" STACKPROF_FREQ="$1" \
		STACKPROF_QUIET=1 "$RN" --batch "$pm_batch" --iters 1 --warmup 0 --threads "$threads" >/dev/null 2>&1
	empty_kind "$d/s.prof"
}

# pm_run ROW ITERS TAG: one resnet18 run under ROW (base, spHZ, emptyHZ-KIND);
# prints "cpu_s wall_s samples timer"
pm_run() {
	local row=$1 it=$2 d=$T/$1.$2.$3
	mkdir -p "$d"
	local pre=()
	case $row in
	sp*) pre=(env -u STACKPROF_TIMER LD_PRELOAD="$LIB" STACKPROF_OUT="$d/s.prof" STACKPROF_FREQ="${row#sp}"
		STACKPROF_QUIET=1) ;;
	empty*)
		local x=${row#empty}
		pre=(env LD_PRELOAD="$T/empty_timer.so" EMPTY_HZ="${x%%-*}" EMPTY_KIND="${x#*-}" EMPTY_THREADS=all)
		;;
	esac
	"$T/cputime" "$d/rusage" "${pre[@]}" "$RN" --batch "$pm_batch" --iters "$it" --warmup 1 \
		--threads "$threads" >"$d/out" 2>"$d/err"
	local extra="- -"
	case $row in sp*) extra=$(stackprof_field "$d/s.prof" | awk '{ print $1, $3 }') ;; esac
	echo "$(awk '{ print $1, $4 }' "$d/rusage" 2>/dev/null || echo - -) $extra"
	rm -rf "$d"
}

process_mode() {
	cc -O2 -o "$T/cputime" "$here/cputime.c" || exit 1
	cc -O2 -shared -fPIC -o "$T/empty_timer.so" "$here/empty_timer.c" || exit 1
	pm_batch=${batches%% *}
	local rows=() hz kind
	for hz in $pm_rates; do
		rows+=("sp$hz")
		kind=$(pm_timer_kind "$hz")
		if [ "$kind" != - ]; then rows+=("empty$hz-$kind"); fi
	done
	# iterations for ~1 s and ~3 s runs, from resnet18's own ms/iter
	if [ -z "$pm_iters" ]; then
		local ms
		ms=$("$RN" --batch "$pm_batch" --iters 5 --warmup 1 --threads "$threads" 2>/dev/null |
			sed -n 's/.*median \([0-9.]*\) ms\/iter.*/\1/p')
		pm_iters=$(awk -v ms="${ms:-0}" 'BEGIN {
			if (ms <= 0) { print "15 45"; exit }
			for (s = 1; s <= 3; s += 2) { n = int(s * 1000 / ms + 0.5) - 1; printf "%d ", n < 2 ? 2 : n }
		}')
	fi
	echo "overhead --process: resnet18 --batch $pm_batch --threads $threads, iters [$pm_iters], $pm_pairs pairs, rows: ${rows[*]}" >&2
	local raw=$T/praw.txt it p row
	: >"$raw"
	for it in $pm_iters; do
		for ((p = 1; p <= pm_pairs; p++)); do
			for row in "${rows[@]}"; do
				local bc bw pc pw ps pt
				if ((p % 2)); then
					read -r bc bw _ < <(pm_run base "$it" "$p")
					read -r pc pw ps pt < <(pm_run "$row" "$it" "$p")
				else
					read -r pc pw ps pt < <(pm_run "$row" "$it" "$p")
					read -r bc bw _ < <(pm_run base "$it" "$p")
				fi
				echo "$it $row $p $bc $pc $bw $pw $ps $pt" >>"$raw"
				printf '  iters %s pair %d/%d %-14s CPU %s s -> %s s\n' "$it" "$p" "$pm_pairs" "$row" "$bc" "$pc" >&2
			done
		done
	done

	pm_label() {
		case $1 in
		sp*) echo "stackprof ${1#sp} Hz default" ;;
		empty*) local x=${1#empty}; echo "timer alone ${x%%-*} Hz ${x#*-}" ;;
		esac
	}
	echo
	echo "Whole-process CPU time of resnet18 --threads $threads, with and without the preload (median of $pm_pairs alternating pairs)"
	bench_machine
	for it in $pm_iters; do
		echo
		local bsec
		bsec=$(median $(awk -v i="$it" '$1 == i { print $6 }' "$raw"))
		echo "batch $pm_batch, $it timed iterations + 1 warm-up a run (~$(fmt %.1f "$bsec") s wall unprofiled):"
		printf '%-28s %8s %8s %7s %13s %7s %8s %8s  %s\n' "row" "CPU s" "CPU s" "CPU" "(IQR)" "wall" "samples" "over" "timer"
		printf '%-28s %8s %8s %7s %13s %7s %8s %8s  %s\n' "" "without" "with" "ratio" "" "ratio" "per run" "alone" ""
		for row in "${rows[@]}"; do
			sel() { awk -v i="$it" -v r="$row" "\$1 == i && \$2 == r { print $1 }" "$raw"; }
			local ratio over=- alone
			ratio=$(median $(sel '($4 > 0 && $5 != "-") ? $5 / $4 : "-"'))
			# stackprof's own part: its ratio minus the timer-alone row's at the same rate
			alone=$(printf '%s\n' "${rows[@]}" | awk -v h="${row#sp}" '$0 ~ "^empty" h "-" { print; exit }')
			if [ "${row#sp}" != "$row" ] && [ -n "$alone" ]; then
				over=$(median $(awk -v i="$it" -v r="$alone" '$1 == i && $2 == r && $4 > 0 && $5 != "-" { print $5 / $4 }' "$raw"))
				over=$(awk -v a="$ratio" -v b="$over" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.2f", 100 * (a - b) }')
			fi
			printf '%-28s %8s %8s %7s %13s %7s %8s %8s  %s\n' "$(pm_label "$row")" \
				"$(fmt %.3f "$(median $(sel '$4'))")" "$(fmt %.3f "$(median $(sel '$5'))")" \
				"$(fmt %.4f "$ratio")" "$(iqr $(sel '($4 > 0 && $5 != "-") ? $5 / $4 : "-"'))" \
				"$(fmt %.3f "$(median $(sel '($6 > 0 && $7 != "-") ? $7 / $6 : "-"'))")" \
				"$(fmt %.0f "$(median $(sel '$8'))")" "$over" \
				"$(sel '$9' | sort | uniq -c | sort -rn | awk 'NR == 1 && $2 != "-" { print $2 }')"
		done
	done
	echo
	echo "CPU: user + system time of the whole resnet18 process (wait4's rusage: every thread, the"
	echo "  profiler's writer thread, start-up and the final flush included); ratio: median over pairs"
	echo "  of with / without, each pair run back to back in alternating order"
	echo "over alone: the stackprof row's ratio minus the timer-alone row's at the same rate, in points"
	echo "timer alone: bench/empty_timer.c, the default's timer kind at that rate on every thread, an empty handler"
	echo "targets (issue 15): ratio <= 1.01 at 100 Hz, <= 1.03 at 1000 Hz, or within 0.5 point of timer alone"
	echo
	echo "command: $cmdline"
}

if ((process)); then
	process_mode
	exit 0
fi

notes=()
configs=(sp100 sp1000 sp1000-perf sp4000)
if have_gperf; then configs+=(gperf100 gperf1000); else notes+=("gperftools: $GPERF_LIB not installed: skipped"); fi
if have_perf; then configs+=(perf1000); else notes+=("perf: not usable here: skipped"); fi
if [ -n "$want" ]; then
	sel=()
	for c in "${configs[@]}"; do
		case $c in sp[0-9]*-*) continue ;; esac
		case " $want " in *" $c "*) sel+=("$c") ;; esac
	done
	# stackprof with a timer kind (sp1000-perf): always available
	for c in $want; do case $c in sp[0-9]*-*) sel+=("$c") ;; esac; done
	configs=("${sel[@]}")
fi

iters_for() {
	if [ -n "${BENCH_ITERS:-}" ]; then echo "$BENCH_ITERS"; elif [ "$1" -ge 4 ]; then echo 3; else echo 10; fi
}

# cpu_of TIMESFILE: user+sys seconds of the children, from bash's `times`.
cpu_of() {
	awk 'NR == 2 {
		s = 0
		for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); s += p[1] * 60 + p[2] }
		printf "%.3f", s
	}' "$1"
}

# run CONFIG BATCH TAG: one resnet18 run; prints "ms cpu extra..." (extra: samples bytes timer).
run() {
	local cfg=$1 b=$2 d=$T/$1.b$2.$3
	local it
	it=$(iters_for "$b")
	mkdir -p "$d"
	local rn=("$RN" --batch "$b" --iters "$it" --threads "$threads" --warmup 1)
	case $cfg in
	base) (cd "$d" && bash -c '"$@" >out 2>err; times >times' _ "${rn[@]}") ;;
	sp*)
		# spHZ or spHZ-KIND (STACKPROF_TIMER); env inside: the preload must
		# reach resnet18, not the timing shell
		local hz=${cfg#sp} kind=auto
		case $hz in *-*) kind=${hz#*-} hz=${hz%%-*} ;; esac
		(cd "$d" && bash -c '"$@" >out 2>err; times >times' _ env LD_PRELOAD="$LIB" \
			STACKPROF_OUT="$d/s.prof" STACKPROF_FREQ="$hz" STACKPROF_TIMER="$kind" \
			STACKPROF_QUIET=1 "${rn[@]}")
		;;
	gperf*)
		(cd "$d" && bash -c '"$@" >out 2>err; times >times' _ env LD_PRELOAD="$GPERF_LIB" \
			CPUPROFILE="$d/g.prof" CPUPROFILE_FREQUENCY="${cfg#gperf}" "${rn[@]}")
		;;
	perf*)
		(cd "$d" && bash -c '"$@" >out 2>err; times >times' _ \
			perf record -g -F "${cfg#perf}" -e cpu-clock -o "$d/perf.data" -- "${rn[@]}")
		;;
	esac
	local ms cpu extra="- - -"
	ms=$(sed -n 's/.*median \([0-9.]*\) ms\/iter.*/\1/p' "$d/out")
	cpu=$(cpu_of "$d/times")
	case $cfg in
	sp*) extra=$(stackprof_field "$d/s.prof") ;;
	gperf*) extra="$(sed -n 's|.*interrupts/evictions/bytes = \([0-9]*\)/[0-9]*/\([0-9]*\).*|\1 \2|p' "$d/err") setitimer" ;;
	perf*) extra="$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$d/err") $(stat -c %s "$d/perf.data" 2>/dev/null) cpu-clock" ;;
	esac
	rm -rf "$d"
	echo "${ms:--} ${cpu:--} $extra"
}

raw=$T/raw.txt
: >"$raw"
cd "$T" || exit 1
rounds_for() {
	if [ -n "$rounds" ]; then echo "$rounds"; elif [ "$1" -ge 4 ]; then echo 5; else echo 9; fi
}
echo "overhead: resnet18 batches [$batches], --threads $threads, configs: ${configs[*]}" >&2
for b in $batches; do
	nr=$(rounds_for "$b")
	for ((r = 1; r <= nr; r++)); do
		for cfg in "${configs[@]}"; do
			if ((r % 2)); then
				read -r bms bcpu _ < <(run base "$b" "$r")
				read -r pms pcpu ps pbytes ptimer < <(run "$cfg" "$b" "$r")
			else
				read -r pms pcpu ps pbytes ptimer < <(run "$cfg" "$b" "$r")
				read -r bms bcpu _ < <(run base "$b" "$r")
			fi
			echo "$b $cfg $r $bms $pms $bcpu $pcpu $ps $pbytes $ptimer" >>"$raw"
			printf '  batch %s round %d/%d %-9s base %s ms, profiled %s ms\n' "$b" "$r" "$nr" "$cfg" "$bms" "$pms" >&2
		done
	done
done

label() {
	case $1 in
	sp*-*) local x=${1#sp}; echo "stackprof ${x%%-*} Hz ${x#*-}" ;;
	sp*) echo "stackprof ${1#sp} Hz" ;;
	gperf*) echo "gperftools ${1#gperf} Hz" ;;
	perf*) echo "perf record -g -F ${1#perf}" ;;
	esac
}

echo
echo "Overhead on resnet18 --threads $threads (medians over paired rounds; ratio = profiled / unprofiled run next to it)"
bench_machine
for b in $batches; do
	echo
	echo "batch $b, $(iters_for "$b") timed iterations per run (+1 warm-up), $(rounds_for "$b") rounds:"
	printf '%-24s %8s %8s %7s %13s %7s %13s %8s %7s %7s  %s\n' "config" "base" "profiled" "ratio" "(IQR)" "CPU" "(IQR)" "samples" "samples" "bytes/" "timer"
	printf '%-24s %8s %8s %7s %13s %7s %13s %8s %7s %7s  %s\n' "" "ms/iter" "ms/iter" "wall" "" "ratio" "" "per run" "/CPU-s" "sample" ""
	for cfg in "${configs[@]}"; do
		sel() { awk -v b="$b" -v c="$cfg" "\$1 == b && \$2 == c { print $1 }" "$raw"; }
		bms=$(median $(sel '$4'))
		pms=$(median $(sel '$5'))
		ratio=$(median $(sel '($4 > 0 && $5 != "-") ? $5 / $4 : "-"'))
		riqr=$(iqr $(sel '($4 > 0 && $5 != "-") ? $5 / $4 : "-"'))
		cratio=$(median $(sel '($6 > 0 && $7 != "-") ? $7 / $6 : "-"'))
		ciqr=$(iqr $(sel '($6 > 0 && $7 != "-") ? $7 / $6 : "-"'))
		ns=$(median $(sel '$8'))
		rate=$(median $(sel '($7 > 0 && $8 ~ /^[0-9]+$/) ? $8 / $7 : "-"'))
		bps=$(median $(sel '($8 > 0 && $9 ~ /^[0-9]+$/) ? $9 / $8 : "-"'))
		timer=$(sel '$10' | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
		printf '%-24s %8s %8s %7s %13s %7s %13s %8s %7s %7s  %s\n' "$(label "$cfg")" "$(fmt %.1f "$bms")" \
			"$(fmt %.1f "$pms")" "$(fmt %.3f "$ratio")" "$riqr" "$(fmt %.3f "$cratio")" "$ciqr" "$(fmt %.0f "$ns")" \
			"$(fmt %.0f "$rate")" "$(fmt %.1f "$bps")" "$timer"
	done
done
echo
echo "samples/CPU-s: samples per second of the run's CPU time (all threads; perf's own CPU included for perf)."
echo "bytes/sample: stackprof raw profile size / samples; gperftools profile bytes / interrupts; perf.data size / samples."
for n in "${notes[@]}"; do echo "note: $n"; done
echo "targets: ratio <= 1.01 at 100 Hz, <= 1.03 at 1000 Hz"
echo
echo "command: $cmdline"
