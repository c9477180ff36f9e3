#!/bin/bash
# What stackprof could not record is counted, and shown by `stackprof info`
# and in `stackprof run`'s summary, never silently lost:
#   drops         a thread's ring was full: the writer could not run (the
#                 program and the writer it inherits hold one CPU at a
#                 real-time priority) while 20 kHz filled the smallest ring
#   unwind errors a frame whose CFI points off the stack (stress badcfi)
# Truncated stacks are t0004's. A sample that is not dropped unwinds cleanly:
# both counts stay 0 on an ordinary run.
. "$(dirname "$0")/lib.sh"

# 20 kHz needs a timer above the kernel tick: perf_event where the kernel
# allows it, else the sampler thread, which needs nothing
timer=auto
"$SP" run --no-summary -F 20000 -o probe.prof -- "$BIN/stress" exit 0
"$SP" info --no-symbols probe.prof | grep -q '^timer: *perf-' || timer=thread

# Entries are as long as their stacks and a repeated stack takes 5 words,
# and the writer comes as soon as a ring is half full: on an idle CPU it
# keeps up. So the program is held to CPU 0 at SCHED_FIFO, where the writer
# thread (FIFO too, by inheritance) waits for it to end.
if taskset -c 0 chrt -f 10 true 2>/dev/null; then
	STACKPROF_RING_KB=64 taskset -c 0 chrt -f 10 "$SP" run -F 20000 --timer $timer -o drops.prof -- \
		"$BIN/stress" exit 0 2>drops.err
	check "a full ring: the program still exits 0" [ $? -eq 0 ]
	"$SP" info --no-symbols drops.prof >drops.info
	check "drops are counted in the profile" has drops.info '/^drops:/' '$2 > 0'
	check "and shown in the run summary" has drops.err '/^stackprof: drops/' '$3 + 0 > 0'
	check "the samples kept still read" has drops.info '/^samples:/' '$2 > 100'
else
	say "SKIP: drops: cannot run at SCHED_FIFO on one CPU here (taskset, chrt, root)"
fi

"$SP" run -F 1000 -o badcfi.prof -- "$BIN/stress" badcfi 2>badcfi.err
check "a frame that cannot be unwound: the program still exits 0" [ $? -eq 0 ]
"$SP" info --no-symbols badcfi.prof >badcfi.info
check "unwind errors are counted (most of 0.5 s in that frame)" \
	has badcfi.info '/^unwind errs:/' '$3 + 0 > 50'
check "and shown in the run summary" has badcfi.err '/^stackprof: drops/' '$6 + 0 > 50'
"$SP" collapse --frame func badcfi.prof >badcfi.folded
# the stack ends where the unwinder stopped: a marker root says so, as
# [truncated] does, instead of the leaf posing as a thread's root
check "the sample keeps its leaf frame, under an [unwind error] root" \
	grep -q '^\[unwind_error\];bad_cfi_spin ' badcfi.folded
check "no unwind-error stack starts at its leaf" bash -c "! grep -q '^bad_cfi_spin ' badcfi.folded"

"$SP" run -F 1000 -o clean.prof -- "$BIN/stress" exit 0 2>clean.err
"$SP" info --no-symbols clean.prof >clean.info
check "an ordinary run: no drops" has clean.info '/^drops:/' '$2 == 0'
check "an ordinary run: no unwind errors" has clean.info '/^unwind errs:/' '$3 == 0'
finish
