#!/bin/bash
# An event source of one file beside the CPU timer (issue 25): the toy
# source of tests/sources/steps.c, built into libstackprof-steps.so, takes
# a sample of kind user at every stackprof_step() through the one capture
# path. workloads/programs/steps.c runs 40 steps of 20 ms of CPU each.
#   - the run is the program's (output, status); info lists both kinds;
#   - the user samples are exactly the 40 steps, each at the program's
#     call of stackprof_step (end_step, under main: stackprof's own frames
#     left out), and collapse shows them with --event user only;
#   - the CPU timer's samples are there as without the source;
#   - sampling off (STACKPROF_START=0) takes no step's sample either;
#   - steps back to back at 4 kHz: CPU signals land inside a step's
#     capture; they are dropped and counted, and every step is captured,
#     the profile whole.
# And a source with a signal of its own (tests/sources/ticks.c, in
# libstackprof-ticks.so): it queues SIGPROF with its cookie at each step,
# and the handler must hand exactly those 40 signals to it, beside
# perf-sigtrap (SIGTRAP) and beside posix-cputimer, whose signal is
# SIGPROF too: none taken for a CPU sample, no CPU signal taken for it,
# and the CPU samples' weight still the program's CPU time, whole.
. "$(dirname "$0")/lib.sh"
LIB="$BUILD/libstackprof-steps.so"
[ -f "$LIB" ] || fail "$LIB is not built"

STACKPROF_LIB="$LIB" "$SP" run --no-summary -o s.prof -- "$BIN/steps" 40 >out.txt 2>err.txt
check "the program ran as it does alone (status 0, its output)" \
	bash -c "[ $? -eq 0 ] && grep -q '^steps: 40 (the API counted 40)$' out.txt"
"$SP" info s.prof >info.txt
sed -n '/^events:/,/^drops:/p' info.txt
check "info lists the user kind: 40 samples, 40 count" grep -qE '^ +user 40 samples \(40 count\)' info.txt
check "... beside cpu" grep -qE '^events: +cpu [0-9]+ samples' info.txt

"$SP" collapse --frame func --event user s.prof >user.folded
cat user.folded
check "the user samples are the 40 steps" \
	awk '{ n += $NF } END { exit !(n == 40) }' user.folded
check "each at the program's call, end_step under main, stackprof's frames left out" \
	awk '{ sub(/ [0-9]+$/, ""); if ($0 !~ /;main;end_step$/) bad = 1 } END { exit bad }' user.folded
"$SP" collapse --frame func s.prof >cpu.folded
cpu=$(awk '{ n++ } END { print n + 0 }' cpu.folded)
check "the default (cpu) holds the CPU timer's samples, in train_step" grep -q ';train_step;spin' cpu.folded
check "... and none of the steps' (no end_step leaf of weight 1)" \
	bash -c "! grep -qE ';end_step 1$' cpu.folded"
# 40 steps of 20 ms at 100 Hz: 80 samples, less what the load took
ncpu=$(awk '/^events:/ { print $3 }' info.txt)
check "the CPU timer took its samples beside the source ($ncpu of ~80)" [ "${ncpu:-0}" -ge 40 ]

# the plain library has no such source
"$SP" run --no-summary -o plain.prof -- "$BIN/steps" 10 >/dev/null 2>&1
check "without the source: no user kind in the profile" \
	bash -c "! '$SP' info plain.prof | grep -q ' user '"

# sampling off: no capture at all
STACKPROF_START=0 STACKPROF_LIB="$LIB" "$SP" run --no-summary -o off.prof -- "$BIN/steps" 10 >/dev/null 2>&1
check "sampling off (STACKPROF_START=0): no step's sample" \
	bash -c "! '$SP' info off.prof | grep -qE '^ +user [1-9]'"

# back to back at 4 kHz: signals inside a step's capture are dropped and
# counted; every step is captured
STACKPROF_LIB="$LIB" "$SP" run --no-summary -F 4000 -o busy.prof -- "$BIN/steps" 20000 0 >busy.txt 2>&1
check "20,000 steps back to back ran" grep -q '^steps: 20000 ' busy.txt
"$SP" info busy.prof >busy.info
check "the profile is whole" grep -q '^status: *complete' busy.info
check "every step was captured (user 20000 samples)" grep -qE '^ +user 20000 samples' busy.info
drops=$(awk '/^drops:/ { print $2 }' busy.info)
say "CPU samples dropped inside a step's capture: ${drops:-0}"
check "the user stacks read whole" \
	bash -c "'$SP' collapse --frame func --event user busy.prof | awk '{ n += \$NF } END { exit !(n == 20000) }'"

TLIB="$BUILD/libstackprof-ticks.so"
[ -f "$TLIB" ] || fail "$TLIB is not built"
for timer in trap posix; do
	STACKPROF_LIB="$TLIB" "$SP" run --no-summary --timer "$timer" -o "t-$timer.prof" -- \
		"$BIN/steps" 40 >"t-$timer.out" 2>&1
	check "ticks beside $timer: the program ran as it does alone" \
		bash -c "[ $? -eq 0 ] && grep -q '^steps: 40 (the API counted 40)$' t-$timer.out"
	"$SP" info "t-$timer.prof" >"t-$timer.info"
	sed -n '/^timer:/p;/^events:/,/^drops:/p' "t-$timer.info"
	case $timer in trap) name=perf-sigtrap ;; posix) name=posix-cputimer ;; esac
	check "... with the $name timer" grep -q "^timer: *$name" "t-$timer.info"
	check "... every one of its 40 signals came to it: user 40 samples (40 count)" \
		grep -qE '^ +user 40 samples \(40 count\)' "t-$timer.info"
	n=$(awk '/^events:/ { print $3 }' "t-$timer.info")
	check "... and the CPU timer's came to the CPU timer ($n of ~80)" [ "${n:-0}" -ge 40 ]
	# its signals leave the CPU accounting whole: the steps' 800 ms of
	# CPU, less at most a period after the last sample
	ms=$(awk '/^events:/ { v = $5; sub(/^\(/, "", v); if (v ~ /ms\)$/) print v + 0; else print v * 1000 }' "t-$timer.info")
	check "... the CPU samples weigh the program's CPU whole (${ms:-0} ms of 800)" \
		awk -v m="${ms:-0}" 'BEGIN { exit !(m >= 760) }'
	"$SP" collapse --frame func --event user "t-$timer.prof" >"t-$timer.folded"
	check "... each taken at the step: under main;end_step" \
		awk '{ if ($0 !~ /;main;end_step;/) bad = 1; n += $NF } END { exit bad || n != 40 }' \
		"t-$timer.folded"
done
finish
