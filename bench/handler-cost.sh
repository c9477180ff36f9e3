#!/bin/bash
# shellcheck disable=SC2046 # median/iqr take their numbers as words: $(...) unquoted on purpose
# bench/handler-cost.sh - what one sample costs the sampled thread, in
# nanoseconds, as a function of stack depth.
#
# The driver bench/handler_cost.c (built here with cc -O2 -g
# -fno-omit-frame-pointer) recurses to depth D through a noinline function,
# spins a fixed number of iterations at the bottom and prints the thread's
# CPU time for it (CLOCK_THREAD_CPUTIME_ID) and the process's. It runs with
# and without LD_PRELOAD=libstackprof.so, in alternation, REPS times per
# depth and rate; samples come from `stackprof info` on each profile, and
#
#   ns/sample (thread)  = (thread CPU with - median thread CPU without) / samples
#   ns/sample (process) = the same with process CPU: adds the writer thread
#                         (draining, deduplicating, compressing)
#
# The thread figure holds everything the target pays per sample: the
# kernel's signal delivery and return, the handler's clock reading, the
# unwind and the ring write. The "paused" row runs depth 8 with
# STACKPROF_START=0: the library is loaded but sampling is off, which stops
# the timers too, so its slowdown is what a loaded, stopped profiler costs
# (no per-sample figures). The timer's own price is the --timers table.
# "self-rep." is what stackprof measures of its own
# handler and `stackprof info` prints ("handler: N us per sample"), where the
# build has it: the handler's body only, without the signal's round trip. Medians over REPS runs. The stack is DEPTH + 5
# frames deep (main and libc's start-up below the recursion); it is walked
# completely (STACKPROF_MAX_DEPTH=1024 unless -m says otherwise).
#
# Rates: 4000 Hz (timer "auto": a perf_event task-clock, perf-sigtrap or
# perf-task-clock, when perf_event_paranoid allows it, else POSIX CPU timers, which the kernel only fires once per tick
# (HZ, 250 here), so that 4000 Hz then means 250 signals a second weighted by
# overruns) and 250 Hz with the POSIX timer. The timer that ran is in the
# table. A run the driver does not finish in BENCH_LIMIT seconds (default 60)
# is stopped and marked: the handler then takes about a sampling period or
# more, so the thread does little but take samples.
#
# A second table prices the timer mechanisms alone, with the small driver
# bench/timer_cost.c and an empty handler (no stackprof involved): POSIX CPU
# timer, perf task-clock with attr.sigtrap (SIGTRAP, stackprof's choice above
# 250 Hz), with F_SETSIG with and without a read() of the counter in the
# handler, and the same perf event with no signal (a ring buffer, as
# `perf record` uses it). Each is paired with a
# run without a timer; cost per event = (1 - speed / speed without) / events
# per CPU second. --no-timers skips it.
#
# usage: bench/handler-cost.sh [BUILD_DIR] [-r REPS] [-d "8 32 128 512"]
#                              [-F "4000 250"] [-t SECONDS] [-m MAX_DEPTH]
#                              [--no-timers] [--quick]
#   BUILD_DIR  a stackprof build (default ./build)
#   -r REPS    pairs per depth and rate (default 5)
#   -d DEPTHS  recursion depths (default "8 32 128 512")
#   -F RATES   STACKPROF_FREQ values; a value may name the timer, as
#              4000:perf or 250:posix, and then the unwinder, as
#              4000:auto:libunwind (STACKPROF_UNWIND; default fast)
#              (default "4000 250:posix")
#   -t SECONDS CPU seconds of work per run without profiling (default 1)
#   -m N       STACKPROF_MAX_DEPTH (default 1024)
#   --quick    -r 3 -t 0.5
# Runtime with the defaults: about 5 minutes (the 4000 Hz, depth-512 runs
# take ~9x their unprofiled time).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build
reps=5
depths="8 32 128 512"
rates="4000 250:posix"
secs=1
maxdepth=1024
limit=${BENCH_LIMIT:-60}
timers=1
while [ $# -gt 0 ]; do
	case $1 in
	-r) reps=${2:?-r needs a number}; shift 2 ;;
	-d) depths=${2:?-d needs depths}; shift 2 ;;
	-F) rates=${2:?-F needs rates}; shift 2 ;;
	-t) secs=${2:?-t needs seconds}; shift 2 ;;
	-m) maxdepth=${2:?-m needs a depth}; shift 2 ;;
	--quick) reps=3; secs=0.5; shift ;;
	--no-timers) timers=0; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; /shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "handler-cost.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build") || exit 2
SP=$build/stackprof
LIB=$build/libstackprof.so
bench_tmpdir
T=$BENCH_TMP
CC=${CC:-cc}
HC=$T/handler_cost
$CC -O2 -g -fno-omit-frame-pointer -o "$HC" "$here/handler_cost.c" ||
	{ echo "handler-cost.sh: cannot build the driver with $CC" >&2; exit 1; }

# hc DEPTH ITERS [profile-path rate timer start unwinder]: one run; prints "thread_ns process_ns" or "timeout".
hc() {
	local out
	if [ $# -gt 2 ]; then
		# the preload reaches the driver only (a preloaded `timeout` would fork
		# and write a profile of its own); the driver stops itself with alarm
		out=$(LD_PRELOAD=$LIB STACKPROF_OUT=$3 STACKPROF_FREQ=$4 STACKPROF_TIMER=$5 STACKPROF_START=$6 STACKPROF_UNWIND=$7 \
			STACKPROF_MAX_DEPTH=$maxdepth STACKPROF_QUIET=1 HC_ALARM=$limit "$HC" "$1" "$2" 2>/dev/null)
	else
		out=$(HC_ALARM=$limit "$HC" "$1" "$2" 2>/dev/null)
	fi
	[ -n "$out" ] && awk '{ print $6, $8 }' <<<"$out" || echo timeout
}

# calibrate: iterations for `secs` of CPU at the bottom of an 8-deep stack
read -r cal_ns _ < <(hc 8 100000000)
iters=$(awk -v ns="$cal_ns" -v s="$secs" 'BEGIN { printf "%d", 100000000 * s * 1e9 / ns }')
echo "handler-cost: $iters iterations (~${secs}s of CPU) per run, depths [$depths], rates [$rates], $reps pair(s) each" >&2

raw=$T/raw.txt
: >"$raw"
for spec in $rates; do
	hz=${spec%%:*}
	kind=auto
	[ "$spec" != "$hz" ] && kind=${spec#*:}
	unw=fast
	case $kind in *:*) unw=${kind#*:} kind=${kind%%:*} ;; esac
	[ -n "$kind" ] || kind=auto
	for d in paused $depths; do
		dead=0
		dd=$d start=1
		[ "$d" = paused ] && dd=8 start=0
		for ((r = 1; r <= reps; r++)); do
			read -r b_t b_p < <(hc "$dd" "$iters")
			if [ "$dead" = 1 ]; then
				echo "$spec $d $r $b_t $b_p timeout - - - -" >>"$raw"
				continue
			fi
			prof=$T/p.$hz.$kind.$unw.$d.$r.prof
			read -r w_t w_p < <(hc "$dd" "$iters" "$prof" "$hz" "$kind" "$start" "$unw")
			# samples, timer, and the handler time stackprof measures itself
			# ("handler: 10.4 us per sample"; absent in older builds)
			read -r ns timer self < <("$SP" info --no-symbols "$prof" 2>/dev/null | awk '
				/^samples:/ { s = $2 }
				/^timer:/ { t = $2; sub(/,$/, "", t) }
				/^handler:/ { h = $2 * ($3 == "ms" ? 1e6 : $3 == "us" ? 1e3 : 1) }
				END { print (s == "" ? "-" : s), (t == "" ? "-" : t), (h == "" ? "-" : h) }')
			rm -f "$prof"
			[ "$w_t" = timeout ] && dead=1
			# paused: no timer runs, so there is no per-sample figure
			[ "$d" = paused ] && ns=-
			echo "$spec $d $r $b_t $b_p $w_t $w_p $ns $timer $self" >>"$raw"
			printf '  %-12s depth %4s run %d/%d: without %s ns, with %s ns, %s samples (%s)\n' \
				"$spec" "$d" "$r" "$reps" "$b_t" "$w_t" "$ns" "$timer" >&2
		done
	done
done

if [ "$timers" = 1 ]; then
	TC=$T/timer_cost
	tc_hz=$(echo "$rates" | awk '{ split($1, a, ":"); print a[1] }')
	if $CC -O2 -o "$TC" "$here/timer_cost.c"; then
		echo "timer mechanisms at $tc_hz Hz, empty handler, $reps pair(s) each" >&2
		traw=$T/timers.txt
		: >"$traw"
		for ((r = 1; r <= reps; r++)); do
			for m in posix trap perf perf-noread perf-nosig; do
				read -r _ _ _ _ _ _ _ rn < <("$TC" none "$tc_hz" "$secs")
				read -r _ _ _ sig _ cpu _ rm < <("$TC" "$m" "$tc_hz" "$secs" 2>/dev/null)
				echo "$m $r ${rn:--} ${rm:--} ${sig:--} ${cpu:--}" >>"$traw"
			done
		done
	else
		timers=0
	fi
fi

echo
echo "Per-sample cost of stackprof's handler by stack depth (medians of $reps pairs)"
bench_machine
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?');" \
	"driver: $iters iterations at the bottom (~${secs}s of CPU); STACKPROF_MAX_DEPTH=$maxdepth"
echo
printf '%-22s %6s %7s %10s %10s %8s %9s %11s %11s %11s  %s\n' "rate" "depth" "frames" "CPU w/o" "CPU with" "slowdown" "samples" "ns/sample" "ns/sample" "ns/sample" "timer"
printf '%-22s %6s %7s %10s %10s %8s %9s %11s %11s %11s  %s\n' "" "" "" "(ms)" "(ms)" "" "" "(thread)" "(process)" "(self-rep.)" ""
for spec in $rates; do
	for d in paused $depths; do
		sel() { awk -v s="$spec" -v d="$d" "\$1 == s && \$2 == d { print $1 }" "$raw"; }
		bt=$(median $(sel '$4'))
		bp=$(median $(sel '$5'))
		to=$(sel '$6' | grep -c timeout)
		wt=$(median $(sel '$6'))
		ns=$(median $(sel '$8'))
		ct=$(median $(sel "(\$6 ~ /^[0-9]/ && \$8 > 0) ? (\$6 - $bt) / \$8 : \"-\""))
		cp=$(median $(sel "(\$7 ~ /^[0-9]/ && \$8 > 0) ? (\$7 - $bp) / \$8 : \"-\""))
		sr=$(median $(sel '$10'))
		slow=$(awk -v a="$wt" -v b="$bt" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.3f", a / b }')
		timer=$(sel '$9' | grep -v '^-$' | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
		note=""
		[ "$to" -gt 0 ] && note=" ($to run(s) stopped after ${limit}s: livelock)"
		frames=$((${d/paused/8} + 5))
		[ "$d" = paused ] && frames="($frames)"
		printf '%-22s %6s %7s %10s %10s %8s %9s %11s %11s %11s  %s\n' "$spec Hz" "$d" "$frames" \
			"$(fmt %.1f "$(awk -v v="$bt" 'BEGIN { print v == "-" ? "-" : v / 1e6 }')")" \
			"$(fmt %.1f "$(awk -v v="$wt" 'BEGIN { print v == "-" ? "-" : v / 1e6 }')")" \
			"$slow" "$(fmt %.0f "$ns")" "$(fmt %.0f "$ct")" "$(fmt %.0f "$cp")" "$(fmt %.0f "$sr")" "${timer:--}$note"
	done
done
# a straight line through the thread costs of each rate: fixed part + per frame
echo
for spec in $rates; do
	awk -v s="$spec" -v depths="$depths" '
		$2 == "paused" { next }
		$1 == s && $6 ~ /^[0-9]/ && $8 > 0 { key = $2; v[key, ++n[key]] = $6; ns[key, n[key]] = $8 }
		$1 == s { b[$2, ++nb[$2]] = $4 }
		function med(arr, k, cnt,   i, j, t, x) {
			for (i = 1; i <= cnt; i++) x[i] = arr[k, i]
			for (i = 2; i <= cnt; i++) for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
			return cnt % 2 ? x[(cnt + 1) / 2] : (x[cnt / 2] + x[cnt / 2 + 1]) / 2
		}
		END {
			k = split(depths, D, " ")
			for (i = 1; i <= k; i++) {
				d = D[i]
				if (!n[d] || !nb[d]) continue
				base = med(b, d, nb[d])
				for (j = 1; j <= n[d]; j++) c[j] = (v[d, j] - base) / ns[d, j]
				for (j = 1; j <= n[d]; j++) cc[d, j] = c[j]
				y = med(cc, d, n[d]); x = d + 5
				m++; sx += x; sy += y; sxx += x * x; sxy += x * y
			}
			if (m < 2) exit
			slope = (m * sxy - sx * sy) / (m * sxx - sx * sx); icpt = (sy - slope * sx) / m
			printf "fit at %s Hz: ns/sample ~ %.0f + %.0f per frame (least squares over the depths above)\n", s, icpt, slope
		}' "$raw"
done
if [ "$timers" = 1 ]; then
	echo
	echo "Cost of the timer mechanism alone (bench/timer_cost.c, empty SIGPROF handler, $tc_hz Hz, medians of $reps pairs)"
	printf '%-46s %12s %10s %12s\n' "mechanism" "events/CPU-s" "slowdown" "ns/event"
	for m in posix trap perf perf-noread perf-nosig; do
		sel() { awk -v m="$m" "\$1 == m { print $1 }" "$traw"; }
		ev=$(median $(sel '($6 > 0 && $5 != "-") ? ($1 == "perf-nosig" ? '"$tc_hz"' : $5 / ($6 / 1e9)) : "-"'))
		sl=$(median $(sel '($4 > 0 && $3 > 0) ? $3 / $4 : "-"'))
		cost=$(median $(sel '($4 > 0 && $3 > 0 && $6 > 0) ? (1 - $4 / $3) / (($1 == "perf-nosig" ? '"$tc_hz"' : $5 / ($6 / 1e9))) * 1e9 : "-"'))
		case $m in
		posix) what="POSIX CPU timer, SIGEV_THREAD_ID" ;;
		trap) what="perf task-clock, sigtrap (stackprof >250 Hz)" ;;
		perf) what="perf task-clock F_SETSIG + read()" ;;
		perf-noread) what="perf task-clock F_SETSIG, no read()" ;;
		perf-nosig) what="perf task-clock to a ring buffer, no signal" ;;
		esac
		printf '%-46s %12s %10s %12s\n' "$what" "$(fmt %.0f "$ev")" "$(fmt %.3f "$sl")" "$(fmt %.0f "$cost")"
	done
fi

echo
echo "command: $cmdline"
