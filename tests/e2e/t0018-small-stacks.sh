#!/bin/bash
# The program's stacks are its own (issue 13, items 2 and 3):
# - ucontext coroutines on 16 KiB stacks 80 and 100 frames deep, and on
#   8 KiB stacks 10 and 40 deep (guard pages under them: an overflow is a
#   crash), and a SIGUSR1 handler recursing 50 deep on a 16 KiB sigaltstack,
#   run as they do alone; the samples come from inside them; the program's
#   sigaltstack is still its own;
# - threads cancelled asynchronously while they are sampled leave nothing
#   behind: 50 dlopen/dlclose rounds afterwards take milliseconds, not the
#   35 s each they took when a cancelled handler left a count raised.
# At 100 Hz and 1 kHz, with every per-thread timer.
. "$(dirname "$0")/lib.sh"
PLUGIN="$BIN/libsp_plugin.so"

for rate in 100 1000; do
	for timer in auto posix perf trap thread; do
		t="$timer-$rate"
		for mode in "coro 16 80" "coro 16 100" "coro 8 10" "coro 8 40" "altstack"; do
			tag=$(echo "$mode-$t" | tr ' ' '-')
			"$BIN/hostile" $mode >"$tag.plain" 2>&1
			timeout 60 "$SP" run --no-summary -F "$rate" --timer "$timer" -o "$tag.prof" -- \
				"$BIN/hostile" $mode >"$tag.txt" 2>"$tag.err"
			rc=$?
			check "$t $mode: runs as alone (status $rc)" [ $rc -eq 0 ]
			check "$t $mode: the same output" cmp -s "$tag.plain" "$tag.txt"
			check "$t $mode: samples from inside it" \
				bash -c "'$SP' collapse --frame func --metric samples '$tag.prof' | grep -q ';hostile_deep'"
		done
		timeout 60 "$SP" run --no-summary -F "$rate" --timer "$timer" -o "cancel-$t.prof" -- \
			"$BIN/hostile" cancel "$PLUGIN" >"cancel-$t.txt" 2>&1
		check "$t: async cancellation, then dlopen/dlclose: the program finishes" [ $? -eq 0 ]
		check "$t: 50 dlopen/dlclose rounds after 2000 cancellations take < 2 s" \
			has "cancel-$t.txt" '/rounds took/' '$(NF - 1) < 2'
	done
done
"$SP" info "coro-8-40-auto-1000.prof" | grep '^stack use:'
finish
