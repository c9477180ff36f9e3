#!/bin/bash
# Stress at 1 kHz, each case three times: dlopen/dlclose loops on several
# threads, fork with children that work and exit, exec chains, thread churn,
# a target that blocks SIGPROF (or every signal) itself, and one that uses
# SIGTRAP itself under the perf-sigtrap timer. A target that installs its own
# SIGPROF handler makes stackprof step aside (and say so) when SIGPROF is
# stackprof's signal, and is simply left its SIGPROF when the timer sends
# SIGTRAP. No hang (timeout), no crash, exit status kept. Programs that
# need to be the process's only thread for one call (uid/gid changes after
# a per-thread capset, unshare -U) make it as they would unprofiled.
. "$(dirname "$0")/lib.sh"

run() { timeout 120 "$SP" run --no-summary -F 1000 -o "$@"; }

for round in 1 2 3; do
	run dl$round.prof -- "$BIN/dlopen_main" "$BIN/libsp_plugin.so" loop >/dev/null
	check "round $round: dlopen/dlclose loop" [ $? -eq 0 ]
	run f$round.prof -- "$BIN/stress" fork
	check "round $round: fork children (exit 7 each, checked by the parent)" [ $? -eq 0 ]
	run x$round.prof -- "$BIN/stress" exec 3
	check "round $round: exec chain" [ $? -eq 0 ]
	run c$round.prof -- "$BIN/stress" churn
	check "round $round: thread churn" [ $? -eq 0 ]
	run b$round.prof -- "$BIN/stress" block
	check "round $round: target blocks SIGPROF" [ $? -eq 0 ]
	run ba$round.prof -- "$BIN/stress" blockall
	check "round $round: target blocks every signal" [ $? -eq 0 ]
	run tr$round.prof --timer trap -- "$BIN/stress" trap >tr$round.txt
	check "round $round: target uses SIGTRAP itself (its own 200 raise() and 200 int3 only)" [ $? -eq 0 ]
	if [ "$(id -u)" = 0 ]; then
		run sx$round.prof -- "$BIN/stress" setxid
		check "round $round: 1,400 uid/gid/groups changes while 4 threads are sampled" [ $? -eq 0 ]
	fi
done

# slots of exited threads are made free again as they pile up, not at the
# writer's next pass (100 ms): a program churning ~25,000 threads a second
# stays near its size alone (6 MB here; 24 MB when the writer came every
# 20 ms, 105 MB every 100 ms with nothing to hurry it)
rss=$(run churnmem.prof -- "$BIN/stress" churnmem | awk '$1 == "VmHWM" { print $2 }')
say "thread churn for 1 s: peak RSS ${rss:-?} KB"
check "thread churn: peak RSS under 40 MB" [ "${rss:-999999}" -lt 40960 ]

# setpriv gives capabilities to its own thread only (capset), then changes
# uid and gid; glibc runs those on every thread and aborts the process if
# one fails, as it did on stackprof's writer thread. unshare -U needs a
# process with no other thread. Both as unprofiled, with either timer.
unshare -U true 2>/dev/null
want_us=$?
for timer in auto thread; do
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		run sp-$timer.prof --timer $timer -- \
			setpriv --reuid=65534 --regid=65534 --clear-groups true 2>sp.err
		check "$timer timer: setpriv drops privileges (exit 0, not glibc's setxid abort)" [ $? -eq 0 ]
	fi
	run us-$timer.prof --timer $timer -- unshare -U true 2>us.err
	check "$timer timer: unshare -U ends as it does unprofiled (status $want_us)" [ $? -eq $want_us ]
	check "$timer timer: and its profile is complete" \
		sh -c "'$SP' info --no-symbols us-$timer.prof | grep -q '^status: *complete'"
done

# the perf-sigtrap timer needs Linux 5.13 and perf_event_paranoid <= 2 (or
# root): where those hold it must have run, or its checks would vanish
"$SP" info --no-symbols tr1.prof >trinfo.txt
kernel=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$kernel" -ge 5013 ] && { [ "$paranoid" -le 2 ] || [ "$(id -u)" = 0 ]; }; then
	check "perf-sigtrap ran where the kernel offers it" grep -q 'perf-sigtrap' trinfo.txt
fi
if grep -q 'perf-sigtrap' trinfo.txt; then
	check "the SIGTRAP rounds sampled" has trinfo.txt '$1 == "samples:"' '$2 > 100'
	timeout 60 "$SP" run -F 1000 --timer trap -o td.prof -- "$BIN/stress" trapdfl 2>td.err
	check "SIGTRAP at its default action still kills the target (status 128+5)" [ $? -eq 133 ]
	"$SP" info --no-symbols td.prof >td.info 2>&1
	check "and its profile reads, up to the last flush" has td.info '/^samples:/' '$2 > 10'
	timeout 60 "$SP" run -F 1000 --timer trap -o owntr.prof -- "$BIN/stress" ownprof >owntr.txt 2>owntr.err
	check "own SIGPROF handler under the SIGTRAP timer: the target gets its ticks" [ $? -eq 0 ]
	check "stackprof does not step aside, SIGPROF is not its signal" sh -c '! grep -q "steps aside" owntr.err'
	check "and samples all the way (>400 samples in 0.7 s of CPU)" has owntr.err '/samples,/' '$2 > 400'
else
	say "note: perf-sigtrap timer not available here ($(grep timer trinfo.txt)); its own checks skipped"
fi

n=$(ls f1.prof.* 2>/dev/null | wc -l)
check "each forked child wrote its own profile (4)" [ "$n" -eq 4 ]
for f in f1.prof.*; do
	"$SP" info --no-symbols "$f" >/dev/null || fail "child profile $f unreadable"
done
n=$(ls x1.prof x1.prof.* 2>/dev/null | wc -l)
check "each exec'ed image wrote a profile (4)" [ "$n" -eq 4 ]
"$SP" info --no-symbols x1.prof >xinfo.txt
check "the image that exec'ed reads as complete" grep -q '^status: *complete' xinfo.txt

# a SIGPROF timer (the default is SIGTRAP's where perf_event allows it)
timeout 60 "$SP" run -F 100 --timer posix -o own.prof -- "$BIN/stress" ownprof >own.txt 2>own.err
check "own SIGPROF handler: the target still gets its ticks" [ $? -eq 0 ]
check "stackprof says it steps aside" grep -q 'steps aside' own.err
check "the profile keeps what came before" has own.err '/samples,/' '$2 > 0'

timeout 60 "$SP" run --no-summary -o ex.prof -- "$BIN/stress" exit 3
check "exit status 3 passes through" [ $? -eq 3 ]

# the sampler-thread timer has a thread of its own, which fork must restart
# in the child and exit must stop: the same cases once more with it
for c in "dlopen_main $BIN/libsp_plugin.so loop" "stress fork" "stress exec 3" "stress churn" \
	"stress block" "stress blockall"; do
	set -- $c
	prog=$1
	shift
	run th.prof --timer thread -- "$BIN/$prog" "$@" >/dev/null
	check "thread timer: $c" [ $? -eq 0 ]
done
n=$(ls th.prof.* 2>/dev/null | wc -l)
check "thread timer: forked children and exec'ed images wrote their profiles" [ "$n" -ge 4 ]
for f in th.prof.*; do
	"$SP" info --no-symbols "$f" >thf.info 2>&1 || fail "thread timer: $f does not read"
done
# at 1 Hz the ticker sleeps 0.5-1.5 s between looks (up to 12 s with its
# idle backoff): exit must wake it, not wait the sleep out. Against the
# same run with the POSIX timer, which has no thread to stop.
elapsed_ms() { # elapsed_ms CMD...: runs CMD, prints its wall time in ms
	local t0
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	echo $((($(date +%s%N) - t0) / 1000000))
}
base=$(elapsed_ms timeout 60 "$SP" run --no-summary -F 1 --timer posix -o thidle0.prof -- sleep 0.05)
ms=$(elapsed_ms timeout 60 "$SP" run --no-summary -F 1 --timer thread -o thidle.prof -- sleep 0.05)
say "sleep 0.05 at 1 Hz: $base ms with the POSIX timer, $ms ms with the thread timer"
check "thread timer at 1 Hz: exit does not wait for the ticker's sleep (< 400 ms more)" \
	[ "$ms" -lt $((base + 400)) ]
check "thread timer at 1 Hz: the profile is complete" \
	sh -c "'$SP' info --no-symbols thidle.prof | grep -q '^status: *complete'"
timeout 60 "$SP" run -F 1000 --timer thread -o thown.prof -- "$BIN/stress" ownprof >thown.txt 2>thown.err
check "thread timer, own SIGPROF handler: the target still gets its ticks" [ $? -eq 0 ]
check "thread timer: stackprof steps aside" grep -q 'steps aside' thown.err
finish
