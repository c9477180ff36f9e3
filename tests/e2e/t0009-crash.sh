#!/bin/bash
# The target's crash: SIGSEGV, abort() and SIGKILL each leave a profile
# readable up to the last flush (exit 0 and a note: it is whole up to there), _exit() from a thread a complete one
# (exitcall.c finishes it first), and `stackprof run` ends the way the
# target did (the shell sees the same status).
. "$(dirname "$0")/lib.sh"

expect() {
	local name=$1 want=$2
	shift 2
	"$SP" run -o $name.prof -- "$@" >/dev/null 2>$name.err
	local rc=$?
	check "$name: exit status $want" [ $rc -eq $want ]
	"$SP" info --no-symbols $name.prof >$name.info 2>&1
	local irc=$?
	# complete, or cut short by the crash: read up to the last flush; whole
	# up to there, so exit 0 either way (only a damaged profile exits 1)
	check "$name: profile readable" grep -qE '^status: *(complete|cut off at its last flush)' $name.info
	check "$name: info exits 0" [ $irc -eq 0 ]
	check "$name: it has samples" has $name.info '/^samples:/' '$2 > 10'
}
expect segv 139 "$BIN/stress" segv
expect abort 134 "$BIN/stress" abort
expect thread_exit 3 "$BIN/stress" thread_exit
check "a profile cut off by a crash says so" grep -q '^status: *cut off at its last flush' segv.info
check "the run's summary says the last moments are missing" \
	grep -q '^stackprof: note: the profile ends at its last flush .*samples read, the last moments are missing$' segv.err
check "_exit from a thread: the profile was finished first" \
	grep -q '^status: *complete' thread_exit.info

# SIGKILL after it ran for a while
"$SP" run -o kill.prof -- "$BIN/stress" sleep >/dev/null 2>kill.err &
runner=$!
for i in $(seq 50); do
	# the target is the runner's child; matching on the command line alone
	# would also find `stackprof run ... stress sleep` itself
	pid=$(pgrep -P "$runner" -f "stress sleep" | head -1)
	[ -n "$pid" ] && [ -s kill.prof ] && break
	sleep 0.1
done
sleep 1.5
kill -KILL "$pid"
wait $runner
check "SIGKILL: exit status 137" [ $? -eq 137 ]
"$SP" info --no-symbols kill.prof >kill.info 2>kill.info.err
check "SIGKILL: a profile cut off at its last flush reads with exit 0" [ $? -eq 0 ]
check "SIGKILL: and a note says so" grep -q '^stackprof: note: kill.prof ends at its last flush' kill.info.err
check "SIGKILL: profile readable, marked cut off" grep -q '^status: *cut off at its last flush' kill.info
check "SIGKILL: samples up to the last flush" has kill.info '/^samples:/' '$2 > 10'

# bad input to the reader: clear message, exit 1, nothing crashes
printf 'junk' >junk.prof
"$SP" info junk.prof 2>junk.err
check "junk profile: exit 1" [ $? -eq 1 ]
check "junk profile: says why" grep -q 'not a stackprof profile' junk.err
"$SP" info missing.prof 2>missing.err
check "missing profile: exit 1" [ $? -eq 1 ]
head -c 100 segv.prof >cut.prof
"$SP" collapse cut.prof >/dev/null 2>cut.err
rc=$?
check "cut profile: no crash (exit 0 or 1)" [ $rc -le 1 ]
finish
