#!/bin/bash
# Stress at 1 kHz, each case three times: dlopen/dlclose loops on several
# threads, fork with children that work and exit, exec chains, thread churn,
# a target that blocks SIGPROF itself, and one that installs its own SIGPROF
# handler (stackprof steps aside and says so). No hang (timeout), no crash,
# exit status kept.
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
done

n=$(ls f1.prof.* 2>/dev/null | wc -l)
check "each forked child wrote its own profile (4)" [ "$n" -eq 4 ]
for f in f1.prof.*; do
	"$SP" info --no-symbols "$f" >/dev/null || fail "child profile $f unreadable"
done
n=$(ls x1.prof x1.prof.* 2>/dev/null | wc -l)
check "each exec'ed image wrote a profile (4)" [ "$n" -eq 4 ]
"$SP" info --no-symbols x1.prof >xinfo.txt
check "the image that exec'ed reads as complete" grep -q '^status: *complete' xinfo.txt

timeout 60 "$SP" run -o own.prof -- "$BIN/stress" ownprof >own.txt 2>own.err
check "own SIGPROF handler: the target still gets its ticks" [ $? -eq 0 ]
check "stackprof says it steps aside" grep -q 'steps aside' own.err
check "the profile keeps what came before" awk '/samples,/ { exit !($2 > 0) }' own.err

timeout 60 "$SP" run --no-summary -o ex.prof -- "$BIN/stress" exit 3
check "exit status 3 passes through" [ $? -eq 3 ]
finish
