#!/bin/bash
# What the program counts on stays its own (issue 13, item 5, and the cases
# it suggests):
# - descriptors: under `ulimit -n 1024`, 700 threads and then 400 open
#   files work as alone; perf-task-clock (a descriptor per thread) stays
#   within its budget and hands the rest of the threads POSIX timers, and
#   says so; perf-sigtrap needs one descriptor for all of them;
# - seccomp: a sandbox that kills the process on perf_event_open (or makes
#   it fail) and execs its program: the program runs to its end, profiled
#   with POSIX timers;
# - vfork children that exec, clone() children without CLONE_THREAD (with
#   and without CLONE_VM), and io_uring's worker threads: the program
#   behaves as alone and its profile is complete. The io_uring program
#   waits again when a sample's signal cuts its wait short, as a correct
#   program must (some timers do: t0026-eintr).
# At 100 Hz and 1 kHz.
# - threads that start while the timer runs: a new thread's first signal
#   can come as it starts (perf-sigtrap's event is inherited at clone),
#   before stackprof has set the thread up; 12 runs of 700 threads at
#   4 kHz work as alone (a slot made live before its timer was set crashed
#   6 runs of 20 this way).
. "$(dirname "$0")/lib.sh"

# same_as_alone TAG ARGS...: the program's status and output under
# stackprof (all options in $RUNOPTS) are those it has alone
same_as_alone() {
	local tag=$1
	shift
	"$@" >"$tag.plain" 2>"$tag.plain.err"
	local want=$?
	timeout 120 "$SP" run --no-summary $RUNOPTS -o "$tag.prof" -- "$@" >"$tag.txt" 2>"$tag.err"
	local got=$?
	[ "$want" -eq "$got" ] && cmp -s "$tag.plain" "$tag.txt" ||
		{ say "status $want alone, $got profiled"; diff "$tag.plain" "$tag.txt" | head; return 1; }
}

complete() { "$SP" info --no-symbols "$1" 2>/dev/null | grep -q '^status: *complete'; }

for rate in 100 1000; do
	for timer in auto perf posix; do
		t="$timer-$rate"
		RUNOPTS="-F $rate --timer $timer"
		( ulimit -n 1024 && same_as_alone "fd-$t" "$BIN/hostile" threads 700 400 )
		check "$t: 700 threads and 400 files under ulimit -n 1024 work as alone" [ $? -eq 0 ]
		check "$t: its profile is complete" complete "fd-$t.prof"
		if grep -q 'perf-task-clock' <("$SP" info --no-symbols "fd-$t.prof"); then
			check "$t: threads beyond the descriptor budget got POSIX timers, and info says so" \
				has <("$SP" info --no-symbols "fd-$t.prof") '/^fallbacks:/' '$2 > 0'
		fi
	done
	for how in KILL ERRNO; do
		for timer in auto perf; do
			t="seccomp-$how-$timer-$rate"
			RUNOPTS="-F $rate --timer $timer"
			same_as_alone "$t" "$BIN/hostile" seccomp "$how" "$BIN/hostile" closerange "$t.out"
			check "$t: the sandboxed program runs to its end" [ $? -eq 0 ]
			# the image exec'ed under the filter writes PATH.<pid>
			img=$(ls "$t.prof".* 2>/dev/null | head -1)
			# the filter ends the first image's sampling (seccomp.c): with
			# no sample, `run` moves the exec'ed image's profile to PATH
			[ -n "$img" ] || img=$t.prof
			check "$t: the image under the filter has a complete profile" complete "$img"
			check "$t: profiled without perf_event there" \
				has <("$SP" info --no-symbols "$img") '/^timer:/' '$2 ~ /posix/'
		done
	done
	for timer in auto posix perf thread; do
		RUNOPTS="-F $rate --timer $timer"
		for mode in vfork clone iouring; do
			t="$mode-$timer-$rate"
			same_as_alone "$t" "$BIN/hostile" "$mode"
			check "$t: works as alone" [ $? -eq 0 ]
			check "$t: its profile is complete" complete "$t.prof"
		done
	done
done

RUNOPTS="-F 4000 --timer auto"
starts() {
	for i in $(seq 1 12); do
		same_as_alone "starts-$i" "$BIN/hostile" threads 700 0 || return 1
		rm -f "starts-$i.prof"
	done
}
check "700 threads starting under a 4 kHz timer, 12 runs: each works as alone" starts
finish
