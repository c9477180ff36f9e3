#!/bin/bash
# A sample's signal and the program's waits (docs/SAMPLER.md, "Waits cut
# short"), 2000 short waits at 1 kHz, in nanosleep, poll, epoll_wait and
# io_uring_enter in turn, none retried:
# - perf-sigtrap (auto's choice) and posix-cputimer signal a thread on its
#   way back to its own code (Linux 6.12 on; checked there only), so
#   nanosleep, poll and epoll_wait are never cut short. io_uring_enter can
#   be (about one wait in 700 here): it runs the task work that sends the
#   signal while it waits;
# - the perf task-clock and sampler-thread timers signal from an interrupt
#   or from another thread, and can cut any wait short (EINTR), as can
#   itimer's process-wide signal (rarely);
# - whatever the timer, the profile counts each wait cut short, exactly
#   the program's own count, and the run's summary warns of them, or its
#   list of children's profiles does where the summary is of another.
. "$(dirname "$0")/lib.sh"

ROUNDS=2000
"$BIN/hostile" eintr $ROUNDS >alone.txt
"$BIN/hostile" iouring | grep -q 'not available' && say "io_uring is not available here: its waits are not tested"
# perf-sigtrap's signal goes through task work from Linux 6.12 (commit
# c5d93d23a260); before, through irq_work, pending at once like perf's
kernel=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
check "alone, no wait is cut short" grep -qx 'eintr: nanosleep 0 poll 0 epoll_wait 0 io_uring_enter 0' alone.txt

timer_of() { "$SP" info --no-symbols "$1" | awk '/^timer:/ { sub(",", "", $2); print $2 }'; }
cuts_of() { "$SP" info --no-symbols "$1" | awk '/^eintr:/ { n = $2 } END { print n + 0 }'; }

seen=0
for timer in auto posix perf thread itimer; do
	"$SP" run -F 1000 --timer $timer -o $timer.prof -- "$BIN/hostile" eintr $ROUNDS \
		>$timer.txt 2>$timer.err
	st=$?
	t=$(timer_of $timer.prof)
	if [ "$timer" = perf ] && [ "$t" != perf-task-clock ]; then
		say "perf_event is refused here ($t ran): the perf task-clock is not tested"
		continue
	fi
	check "$timer ($t): exits 0" [ $st = 0 ]
	if { [ $timer = auto ] || [ $timer = posix ]; } && [ "$kernel" -ge 6012 ]; then
		check "$t: nanosleep, poll and epoll_wait are never cut short" \
			grep -qE '^eintr: nanosleep 0 poll 0 epoll_wait 0 io_uring_enter [0-9]+$' $timer.txt
	fi
	prog=$(awk '/^eintr:/ { print $3 + $5 + $7 + $9 }' $timer.txt)
	prof=$(cuts_of $timer.prof)
	# one more is a cut the program never saw, because libc restarted the
	# call (the main thread's join of stackprof's finishing thread at exit
	# is one such wait, with the timer still running): 15 against 14, once,
	# under CI's busy loops with the sampler-thread timer
	check "$t: the profile counts the waits cut short: $prof, the program saw $prog" \
		[ -n "$prog" ] && [ "$prof" -ge "$prog" ] && [ "$prof" -le $((prog + 1)) ]
	if [ "$prof" -gt 0 ]; then
		case $timer in perf | thread) seen=1 ;; esac
		check "$t: the run's summary warns of them" \
			grep -q "warning: $prof of the program's system calls returned EINTR" $timer.err
	else
		check "$t: the run's summary warns of none" sh -c "! grep -q 'returned EINTR' $timer.err"
	fi
done
# a child's cuts, when the summary is of another process: its line says so
"$SP" run -F 1000 --timer thread -o kids.prof -- sh -c "'$BIN/hostile' eintr $ROUNDS & '$BIN/chain' 3; wait" \
	>kids.txt 2>kids.err
prog=$(awk '/^eintr:/ { print $3 + $5 + $7 + $9 }' kids.txt)
if [ "${prog:-0}" -gt 0 ]; then
	# the profile's count may have one more, as above: a restarted call
	check "a child's waits cut short are on its line of the run's list ($prog, or one more)" \
		grep -qE "children and exec'ed images: .*\([0-9]+ samples; ($prog|$((prog + 1))) waits cut short, EINTR\)" kids.err
	grep "children and exec'ed images" kids.err || cat kids.err
else
	say "the child's waits were not cut short this run: its line is not checked"
fi
# 10-40 cuts a run here: none at all would leave the counts above unchecked
check "the perf and thread timers cut some waits short here, so the counts were checked" [ $seen = 1 ]
finish
