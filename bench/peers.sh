#!/bin/bash
# shellcheck disable=SC2046 # median/iqr take their numbers as words: $(...) unquoted on purpose
# bench/peers.sh - what a user pays for stackprof on this host, against the
# peers, in one run (issue 26, point 3).
#
# Workloads (each run as a whole process):
#   resnet18  BUILD/resnet18 --batch 1 --threads 2 --iters I: the project's
#             C model, two threads (I: about 1 s of wall time, from a first
#             unprofiled run, or -i)
#   torch     Debian's /usr/bin/python3 workloads/torch/resnet18_infer.py
#             --batch 1 --threads 2 --iters J: torchvision's ResNet18,
#             `import torch` included (J: -j, default 10). Skipped, and
#             said, without python3-torch and python3-torchvision.
# Rows, at each rate of -F (default 100 and 1000 Hz):
#   stackprof default   LD_PRELOAD=libstackprof.so STACKPROF_FREQ=HZ: the
#                       timer users get (auto's pick; named in the table)
#   stackprof TIMER     the same with STACKPROF_TIMER=TIMER, for each of
#                       stackprof's other timers: perf, posix, thread, itimer
#                       (resnet18; torch runs them with --all-timers)
#   stackprof paused    the same with STACKPROF_START=0: the library present,
#                       no sampling (the presence's cost; at the first rate
#                       only, as it has none)
#   timer alone         bench/empty_timer.c: the default's timer kind at HZ on
#                       every thread with an empty handler. No sampler using
#                       that timer can cost less on this host
#   gperftools          LD_PRELOAD=libprofiler.so (Debian's google-perftools)
#                       CPUPROFILE_FREQUENCY=HZ: setitimer(ITIMER_PROF), one
#                       signal per kernel tick at most, so 1000 Hz is 250 here
#   perf fp             perf record -F HZ -e cpu-clock -g (frame pointers)
#   perf dwarf          perf record -F HZ -e cpu-clock --call-graph dwarf
# A peer that is missing or not permitted here is left out, and said.
#
# Each row is paired with an unprofiled run of the same command, back to
# back; the order flips from pair to pair (profiled first, then unprofiled
# first). The cost is the user + system CPU time of everything the command
# ran (wait4's rusage through bench/cputime.c: start-up, every thread, the
# profiler's own threads, perf's own process, the final flush). A row's
# ratio is the median over its pairs of with / without, shown with the
# interquartile range; "over floor" is the ratio minus the timer-alone
# row's, in points. The samples column is what the profiler says it took
# (stackprof info; gperftools' PROFILE line; perf: -).
#
# usage: bench/peers.sh [BUILD_DIR] [-n PAIRS] [-F "100 1000"] [-i ITERS]
#                       [-j TORCH_ITERS] [-w "resnet18 torch"] [--all-timers]
#                       [--quick]
#   -n PAIRS      pairs per row (default 10)
#   -F RATES      sampling rates (default "100 1000")
#   -i ITERS      resnet18 --iters (default: ~1 s of wall time here)
#   -j ITERS      resnet18_infer.py --iters (default 10)
#   -w WORKLOADS  which workloads (default "resnet18 torch")
#   --all-timers  every stackprof timer on torch too
#   --quick       -n 3 -j 4
# Runtime with the defaults: about 14 minutes here (2 CPUs). Installs
# nothing: `apt-get install google-perftools linux-perf python3-torch
# python3-torchvision` gives every row.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build
pairs=10 rates="100 1000" iters='' titers=10 workloads="resnet18 torch" all_timers=0
while [ $# -gt 0 ]; do
	case $1 in
	-n) pairs=$2; shift 2 ;;
	-F) rates=$2; shift 2 ;;
	-i) iters=$2; shift 2 ;;
	-j) titers=$2; shift 2 ;;
	-w) workloads=$2; shift 2 ;;
	--all-timers) all_timers=1; shift ;;
	--quick) pairs=3; titers=4; shift ;;
	-h | --help) sed -n '3,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	-*) echo "peers.sh: unknown option $1 (-h for help)" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
case $pairs in '' | *[!0-9]*) echo "peers.sh: -n wants a number of pairs" >&2; exit 2 ;; esac
B=$(bench_build "$build") || exit 2
# shellcheck disable=SC2034 # lib.sh's stackprof_field reads it
SP=$B/stackprof
LIB=$B/libstackprof.so
RN=$B/resnet18
WL=$here/../workloads/torch/resnet18_infer.py
[ -x "$RN" ] || { echo "peers.sh: $RN is not built" >&2; exit 2; }
bench_tmpdir
T=$BENCH_TMP
cc -O2 -o "$T/cputime" "$here/cputime.c" || exit 1
cc -O2 -shared -fPIC -o "$T/empty_timer.so" "$here/empty_timer.c" || exit 1

notes=()
peers="gperf perf-fp perf-dwarf"
if ! have_gperf; then
	notes+=("gperftools: $GPERF_LIB missing (apt-get install google-perftools): left out")
	peers=${peers/gperf/}
fi
if ! have_perf; then
	notes+=("perf: missing or not permitted (perf_event_paranoid, seccomp): its rows left out")
	peers=${peers//perf-fp/}
	peers=${peers//perf-dwarf/}
fi
PY=/usr/bin/python3
case " $workloads " in
*" torch "*)
	if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
		notes+=("torch: $PY with torch and torchvision missing (apt-get install python3-torch python3-torchvision): left out")
		workloads=${workloads/torch/}
	fi
	;;
esac

# the command of workload W, as words
wl_cmd() {
	case $1 in
	resnet18) echo "$RN" --batch 1 --threads 2 --iters "$iters" --warmup 1 ;;
	torch) echo "$PY" "$WL" --batch 1 --threads 2 --iters "$titers" ;;
	esac
}

# run W ROW HZ TAG: one run of workload W under ROW; prints "cpu_s samples"
run() {
	local w=$1 row=$2 hz=$3 d=$T/$1.$2.$3.$4 pre=()
	mkdir -p "$d"
	local cmd
	read -r -a cmd < <(wl_cmd "$w")
	case $row in
	base) ;;
	sp) pre=(env LD_PRELOAD="$LIB" STACKPROF_OUT="$d/s.prof" STACKPROF_FREQ="$hz" STACKPROF_QUIET=1) ;;
	sp-paused) pre=(env LD_PRELOAD="$LIB" STACKPROF_OUT="$d/s.prof" STACKPROF_FREQ="$hz" STACKPROF_QUIET=1
		STACKPROF_START=0) ;;
	sp-*) pre=(env LD_PRELOAD="$LIB" STACKPROF_OUT="$d/s.prof" STACKPROF_FREQ="$hz" STACKPROF_QUIET=1
		STACKPROF_TIMER="${row#sp-}") ;;
	alone) pre=(env LD_PRELOAD="$T/empty_timer.so" EMPTY_HZ="$hz" EMPTY_KIND="$kind" EMPTY_THREADS=all) ;;
	gperf) pre=(env LD_PRELOAD="$GPERF_LIB" CPUPROFILE="$d/g.prof" CPUPROFILE_FREQUENCY="$hz") ;;
	perf-fp) pre=(perf record -q -F "$hz" -e cpu-clock -g -o "$d/perf.data" --) ;;
	perf-dwarf) pre=(perf record -q -F "$hz" -e cpu-clock --call-graph dwarf -o "$d/perf.data" --) ;;
	esac
	"$T/cputime" "$d/rusage" "${pre[@]}" "${cmd[@]}" >"$d/out" 2>"$d/err"
	local st
	st=$(awk '{ print $5 }' "$d/rusage" 2>/dev/null)
	if [ "${st:-1}" != 0 ]; then
		echo "peers: $w under $row failed (wait status ${st:-?}): $(tail -1 "$d/err")" >&2
		echo "- -"
		rm -rf "$d"
		return
	fi
	local s=-
	if [ -f "$d/s.prof" ]; then
		s=$(stackprof_field "$d/s.prof" | awk '{ print $1 }')
		stackprof_field "$d/s.prof" | awk '{ print $3 }' >"$T/timer.$w.$row.$hz"
	elif [ "$row" = gperf ]; then
		s=$(sed -n 's|^PROFILE: interrupts/evictions/bytes = \([0-9]*\)/.*|\1|p' "$d/err" | head -1)
	fi
	echo "$(awk '{ print $1 }' "$d/rusage" 2>/dev/null || echo -) ${s:--}"
	rm -rf "$d"
}

# resnet18's iterations: about 1 s of wall time unprofiled
if [ -z "$iters" ]; then
	iters=10
	ms=$("$RN" --batch 1 --threads 2 --iters 10 2>/dev/null | sed -n 's/.* median \([0-9.]*\) ms.*/\1/p')
	[ -n "$ms" ] && iters=$(awk -v m="$ms" 'BEGIN { n = int(1000 / m); print n < 5 ? 5 : n }')
fi

# the default's timer here, as empty_timer.c names it
LD_PRELOAD="$LIB" STACKPROF_OUT="$T/probe.prof" STACKPROF_QUIET=1 "$RN" --iters 1 >/dev/null 2>&1
kind=$(empty_kind "$T/probe.prof")
default_timer=$(stackprof_field "$T/probe.prof" | awk '{ print $3 }')

raw=$T/raw.txt
: >"$raw"
start=$(date +%s)
for w in $workloads; do
	rows="sp"
	if [ "$w" = resnet18 ] || [ "$all_timers" = 1 ]; then
		for t in trap perf posix thread itimer; do
			case $default_timer:$t in
			perf-sigtrap:trap | perf-task-clock:perf | posix-cputimer:posix) ;;
			*) rows="$rows sp-$t" ;;
			esac
		done
	fi
	[ "$kind" != - ] && rows="$rows alone"
	rows="$rows $peers"
	first=${rates%% *}
	for hz in $rates; do
		hrows=$rows
		[ "$hz" = "$first" ] && hrows="sp-paused $rows"
		echo "peers: $w at $hz Hz, $pairs pairs a row, rows: $hrows" >&2
		for ((p = 1; p <= pairs; p++)); do
			for row in $hrows; do
				if ((p % 2)); then
					read -r pc ps < <(run "$w" "$row" "$hz" "$p")
					read -r bc _ < <(run "$w" base "$hz" "$p$row")
				else
					read -r bc _ < <(run "$w" base "$hz" "$p$row")
					read -r pc ps < <(run "$w" "$row" "$hz" "$p")
				fi
				echo "$w $hz $row $p $bc $pc $ps" >>"$raw"
				printf '  %s %s Hz pair %d/%d %-10s CPU %s s -> %s s (%s samples)\n' "$w" "$hz" "$p" "$pairs" "$row" "$bc" "$pc" "$ps" >&2
			done
		done
	done
done
took=$(($(date +%s) - start))

label() {
	case $1 in
	sp) echo "stackprof default" ;;
	sp-paused) echo "stackprof paused" ;;
	sp-*) echo "stackprof ${1#sp-}" ;;
	alone) echo "timer alone ($kind)" ;;
	gperf) echo "gperftools" ;;
	perf-fp) echo "perf fp" ;;
	perf-dwarf) echo "perf dwarf" ;;
	esac
}
ratios() { awk -v w="$1" -v h="$2" -v r="$3" '$1 == w && $2 == h && $3 == r && $5 > 0 && $6 ~ /^[0-9]/ { print $6 / $5 }' "$raw"; }

echo
echo "What a user pays, whole process, against the peers (median of $pairs alternating pairs a row)"
bench_machine
echo "default timer here: $default_timer; resnet18 --iters $iters, resnet18_infer.py --iters $titers; took ${took} s"
for w in $workloads; do
	for hz in $rates; do
		echo
		case $w in
		resnet18) echo "resnet18 --batch 1 --threads 2 --iters $iters, $hz Hz:" ;;
		torch) echo "torch ResNet18 (Debian python3, torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)) --batch 1 --threads 2 --iters $titers, $hz Hz:" ;;
		esac
		printf '%-22s %8s %8s %8s %15s %8s %9s  %s\n' "row" "CPU s" "CPU s" "CPU" "(IQR)" "over" "samples" "timer"
		printf '%-22s %8s %8s %8s %15s %8s %9s\n' "" "without" "with" "ratio" "" "floor" "per run"
		floor=$(median $(ratios "$w" "$hz" alone))
		for row in $(awk -v w="$w" -v h="$hz" '$1 == w && $2 == h && !seen[$3]++ { print $3 }' "$raw"); do
			rs=$(ratios "$w" "$hz" "$row")
			m=$(median $rs)
			over=$(awk -v a="$m" -v b="$floor" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.2f", 100 * (a - b) }')
			tm=-
			[ -f "$T/timer.$w.$row.$hz" ] && tm=$(cat "$T/timer.$w.$row.$hz")
			printf '%-22s %8s %8s %8s %15s %8s %9s  %s\n' "$(label "$row")" \
				"$(fmt %.3f "$(median $(awk -v w="$w" -v h="$hz" -v r="$row" '$1 == w && $2 == h && $3 == r { print $5 }' "$raw"))")" \
				"$(fmt %.3f "$(median $(awk -v w="$w" -v h="$hz" -v r="$row" '$1 == w && $2 == h && $3 == r { print $6 }' "$raw"))")" \
				"$(fmt %.4f "$m")" "$(iqr $rs)" "$over" \
				"$(fmt %.0f "$(median $(awk -v w="$w" -v h="$hz" -v r="$row" '$1 == w && $2 == h && $3 == r { print $7 }' "$raw"))")" "$tm"
		done
	done
done
echo
echo "CPU: user + system time of everything the command ran (wait4's rusage: every thread, the"
echo "  profiler's own threads and perf's own process, start-up and the final flush included)"
echo "ratio: median over pairs of with / without; each pair back to back, the order flipping"
echo "over floor: the row's ratio minus the timer-alone row's, in points"
echo "targets (issue 26): stackprof default within 1 point of gperftools at 100 Hz; paused at most 0.3%"
for n in "${notes[@]}"; do echo "note: $n"; done
echo
echo "command: $cmdline"
