#!/bin/bash
# Unbiased on a loop that repeats (issue 15): periodic.c's threads run one
# 12 ms cycle of CPU over and over (periodic_a/b/c/d: 6, 2, 2 and 2 ms) and
# measure the true split. Profiled at the default rate (100 Hz, no options),
# the profile's split must be within the sampling noise of the truth.
#
# A timer that fires only on the kernel's 4 ms tick (the POSIX CPU timer at
# HZ=250) samples 3 fixed points of the cycle and is off by up to 33 points
# of total variation (TV); one in the thread's CPU time at 10 ms (perf
# task-clock) samples 6 points 2 ms apart and is exact (periodic.c says why).
#
# The tolerance comes from the noise floor: bench/tvfloor.awk draws 2000
# multinomial samples of the run's sample count from the truth and gives the
# median TV of an ideal random sampler (1.6 points at 1500 samples). The
# test wants TV <= 3 x that median, about the floor's 99.96th percentile: in
# 300,000 simulated runs of 600, 1500 and 3000 samples an ideal sampler
# exceeded 3 x its median 3.4-4.3e-4 of the time (the ratio does not depend
# on the count; the 99.9th percentile is 2.8 x the median). A timer in CPU
# time stays below the median (it samples the cycle evenly: 0.15-0.8
# points, 1.7 with a bursty process competing), and the POSIX timer was
# 28-33 points off on an idle machine. 15 s of CPU (2 threads x 7.5 s, ~8 s
# of wall time on 2 idle CPUs) gives ~1500 samples at 100 Hz; the test takes
# ~18 s.
#
# On a machine busy with other processes the threads are preempted off the
# tick and the lock weakens (the POSIX timer 10-23 points off with a bursty
# process competing): a tick-driven timer may then pass. A timer in CPU time
# can't fail for that reason.
. "$(dirname "$0")/lib.sh"

FLOOR_AWK=$SP_SOURCE_DIR/bench/tvfloor.awk
SECS=7.5

# shares TRUTH FOLDED: "function truth profile" (shares, 0-1) for each
# function of the truth, in its order; a sample counts for the
# periodic_[abcd] frame on its stack
shares() {
	awk 'FNR == NR { if ($1 == "truth" && $2 == "func") { t[$3] = $4; o[++k] = $3 } next }
		{ v = $NF; n = split($1, f, ";"); for (i = 1; i <= n; i++) if (f[i] in t) { m[f[i]] += v; tot += v; break } }
		END { for (i = 1; i <= k; i++) printf "%s %.5f %.5f %d\n", o[i], t[o[i]], tot ? m[o[i]] / tot : 0, tot }' "$1" "$2"
}

# phase NAME [stackprof run options]: profiles periodic, says what it saw,
# and writes "TV SAMPLES FLOOR_MEDIAN TIMER" to NAME.result
phase() {
	local name=$1
	shift
	"$SP" run --no-summary "$@" -o "$name.prof" -- "$BIN/periodic" -s $SECS -t 2 >"$name.truth"
	check "$name: periodic exits 0" [ $? -eq 0 ]
	"$SP" info "$name.prof" >"$name.info"
	"$SP" collapse --frame func --metric us "$name.prof" >"$name.us"
	"$SP" collapse --frame func --metric samples "$name.prof" >"$name.n"
	shares "$name.truth" "$name.us" >"$name.shares"
	local tv n floor timer
	tv=$(awk '{ d = $3 - $2; s += d < 0 ? -d : d } END { printf "%.2f", 50 * s }' "$name.shares")
	n=$(shares "$name.truth" "$name.n" | awk 'NR == 1 { print $4 }')
	floor=$(awk -v n="${n:-0}" -v reps=2000 -v seed=1 -f "$FLOOR_AWK" "$name.truth" | awk '{ print $1 }')
	timer=$(awk '/^timer:/ { sub(/,$/, "", $2); print $2 }' "$name.info")
	grep -E '^(timer|achieved):' "$name.info"
	say "$name: truth    $(awk '{ printf "%s %5.1f%%  ", $1, 100 * $2 }' "$name.shares")"
	say "$name: profile  $(awk '{ printf "%s %5.1f%%  ", $1, 100 * $3 }' "$name.shares")"
	say "$name: off the CPU: $(awk '$2 == "offcpu" { printf "%s %.2fs  ", $3, $4 }' "$name.truth")"
	say "$name: TV $tv points over ${n:-0} samples ($timer); noise floor (median) $floor, tolerance 3 x floor"
	echo "$tv ${n:-0} ${floor:--} $timer" >"$name.result"
	check "$name: at least 1000 samples in the four functions" [ "${n:-0}" -ge 1000 ]
}

# within NAME: TV <= 3 x the floor's median
within() {
	local tv n floor timer
	read -r tv n floor timer <"$1.result"
	awk -v tv="$tv" -v f="$floor" 'BEGIN { exit !(f + 0 > 0 && tv <= 3 * f) }'
}

# 1. The default: no -F, no --timer (STACKPROF_TIMER from the environment,
# if set, picks the timer, as it does for users).
phase default
check "default timer at the default rate: TV within 3 x the noise floor (no lock onto the loop's phase)" \
	within default

# 2. The POSIX fallback, what runs where perf_event is refused
# (perf_event_paranoid, seccomp, containers), is measured and shown, not
# held to the bound: its signals come only on the kernel's tick, so a loop
# whose cycle keeps its phase against the tick is sampled at the same few
# points whatever the period; its periods are random, which keeps it from
# locking onto a loop as long as its own period, but not onto the tick
# (docs/SAMPLER.md has the figures). `stackprof info` says "random periods"
# for it, and auto never picks it where perf_event works.
phase posix --timer posix
read -r tv n floor timer <posix.result
say "POSIX fallback (informational): TV $tv points against a floor of $floor"
finish
