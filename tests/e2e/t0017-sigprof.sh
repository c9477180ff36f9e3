#!/bin/bash
# A program that takes SIGPROF for a moment and gives it back (issue 13,
# item 7): signal(SIGPROF, SIG_IGN) then SIG_DFL, or a handler of its own
# (its own setitimer profiling) and then the action it saved. With a
# SIGPROF timer stackprof steps aside while the program has the signal,
# says so, and steps back in: the 1.2 s of CPU after the give-back is in
# the profile. With the default timer (SIGTRAP) SIGPROF was never
# stackprof's and nothing changes. At 100 Hz and 1 kHz, with every timer.
. "$(dirname "$0")/lib.sh"

# after PROF MODE: CPU seconds the profile holds in hostile_work
cpu_in_work() {
	"$SP" collapse --frame func --metric us "$1" 2>/dev/null |
		awk '/;hostile_work[; ]/ { s += $NF } END { printf "%.2f\n", s / 1e6 }'
}

for rate in 100 1000; do
	for timer in auto posix perf thread itimer; do
		for mode in sigign sigsave; do
			t="$mode-$timer-$rate"
			timeout 60 "$SP" run --no-summary -F "$rate" --timer "$timer" -o "$t.prof" -- \
				"$BIN/hostile" "$mode" >"$t.txt" 2>"$t.err"
			check "$t: the program behaves as alone (its own SIGPROF use works)" [ $? -eq 0 ]
			got=$(cpu_in_work "$t.prof")
			say "$t: $got s of CPU profiled after SIGPROF was given back (1.2 s ran)"
			# a stackprof that never stepped back in profiles ~0 s here;
			# 0.6 s leaves room for the sampler thread, which loses
			# samples when the machine is loaded (docs/SAMPLER.md)
			check "$t: the work after the give-back is profiled (>= 0.6 s)" \
				awk -v g="$got" 'BEGIN { exit !(g >= 0.6) }'
			if grep -q 'steps aside' "$t.err"; then
				check "$t: stackprof says it stepped back in" grep -q 'samples again' "$t.err"
			fi
		done
	done
done
finish
