#!/bin/bash
# More threads alive at once than stackprof's thread table holds (issue 30,
# point 12; docs/SAMPLER.md, "Many threads"). The table once held 4,096:
# with 4,500 threads the rest went unsampled, and nothing said so.
# - 4,500 threads (a few working, the rest asleep) under the default table:
#   the program works as alone, every worker is sampled, and the profile's
#   CPU time (samples plus stackprof's set-up on the program's threads) is
#   the program's own within 5%, under ulimit -n 1024;
# - a table set small (STACKPROF_MAX_THREADS=64) with 100 working threads:
#   the program works as alone, the profile counts the 37 threads it had no
#   slot for and their CPU time, `info` shows both and the run's summary
#   warns, saying what to do.
. "$(dirname "$0")/lib.sh"
P="$BIN/probe_threads"

# same_as_alone TAG ARGS...: the program's status and output under
# stackprof (options in $RUNOPTS) are those it has alone (t0019's)
same_as_alone() {
	local tag=$1
	shift
	timeout 120 "$@" >"$tag.plain" 2>"$tag.plain.err"
	local want=$?
	timeout 120 "$SP" run $RUNOPTS -o "$tag.prof" -- "$@" >"$tag.txt" 2>"$tag.err"
	local got=$?
	[ "$want" -eq 0 ] && [ "$want" -eq "$got" ] && cmp -s "$tag.plain" "$tag.txt" ||
		{ say "status $want alone, $got profiled"; diff "$tag.plain" "$tag.txt" | head; return 1; }
}

# ns TEXT: a time as `stackprof info` prints it (1.5s, 2.3ms, 7us) in ns
ns() {
	awk -v t="$1" 'BEGIN { v = t + 0; u = t; sub(/^[0-9.]+/, "", u)
		m = u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1
		printf "%.0f\n", v * m }'
}
# the samples' CPU time, and set-up's, in ns
weight_of() { ns "$(awk '/^samples:/ { sub(/^\(/, "", $3); print $3 }' "$1")"; }
setup_of() { ns "$(awk '/^own CPU:/ { for (i = 1; i < NF; i++) if ($i == "set-up") print $(i + 1) }' "$1")"; }
# the program's own CPU time, in ns
cpu_of() { awk '/^cpu_ns/ { print $2 }' "$1"; }
# within A B PCT: A is B within PCT percent
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d * 100 <= b * p) }'; }

# 1. 4,500 threads, all in the default table. ulimit -n 1024 as most
# shells have it: perf-sigtrap (auto's choice where perf_event is allowed)
# needs no descriptor per thread; the perf task-clock's budget is t0019's.
RUNOPTS="-F 1000"
(ulimit -n 1024 && same_as_alone many "$P" 4500 24 0.1)
check "4500 threads alive together, 24 working: the program works as alone" [ $? -eq 0 ]
"$SP" info many.prof >many.info 2>&1
check "its profile is complete" grep -q '^status: *complete' many.info
check "no thread was missed" bash -c "! grep -q '^missed:' many.info && ! grep -q 'not sampled' many.txt many.err"
workers=$(awk '$(NF - 1) == "samples" && $(NF - 2) >= 20 { n++ } END { print n + 0 }' many.info)
check "every worker was sampled: $workers of 24 threads with 20 samples or more" [ "$workers" -ge 24 ]
w=$(weight_of many.info)
s=$(setup_of many.info)
c=$(cpu_of many.err)
check "the profile's CPU, $w ns sampled + $s ns set-up, is the program's $c ns within 5%" \
	within $((w + s)) "$c" 5

# 2. A table of 64 slots and 101 threads (main and 100 working 20 ms
# each): 37 find no slot. Their CPU time is read as they exit, or, when the
# program exits with them still there, as the profile is finished.
RUNOPTS="-F 1000"
for how in join exit; do
	t=small-$how
	arg=
	[ $how = exit ] && arg=exit
	export STACKPROF_MAX_THREADS=64
	same_as_alone $t "$P" 100 100 0.02 $arg
	check "$how: 100 working threads and a table of 64: the program works as alone" [ $? -eq 0 ]
	unset STACKPROF_MAX_THREADS
	"$SP" info $t.prof >$t.info 2>&1
	check "$how: its profile is complete" grep -q '^status: *complete' $t.info
	missed=$(awk '/^missed:/ { print $2 }' $t.info)
	check "$how: info counts the 37 threads that got no slot: ${missed:-none}" [ "${missed:-0}" = 37 ]
	mns=$(ns "$(awk '/^missed:/ { for (i = 1; i < NF; i++) if ($i == "of" && $(i + 1) == "CPU") print $(i - 1) }' $t.info)")
	check "$how: and their CPU time, $mns ns, about 37 times 20 ms" within "$mns" 740000000 25
	w=$(weight_of $t.info)
	s=$(setup_of $t.info)
	c=$(cpu_of $t.err)
	check "$how: sampled + set-up + missed, $((w + s + mns)) ns, is the program's $c ns within 10%" \
		within $((w + s + mns)) "$c" 10
	sampled=$(sampled_threads $t.info 1)
	check "$how: the 63 threads with a slot were sampled ($sampled threads with samples)" [ "$sampled" -ge 63 ]
	check "$how: the run's summary warns of them and says what to do" \
		grep -q 'warning: 37 threads were not sampled.*STACKPROF_MAX_THREADS' $t.err
done
say "$(grep 'warning: .* not sampled' small-join.err)"
finish
