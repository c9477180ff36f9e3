#!/bin/bash
# The signal handler's entry (issue 30, points 2, 4 and 8): each program
# works as alone (status, output, no hang).
# - Python asyncio with many tasks at 1 and 4 kHz on perf-sigtrap: a
#   guarded read of Python's memory that faults while another SIGTRAP is
#   pending made the kernel start a second capture inside the first, and
#   the fault was then taken for the program's and killed it (3 of 6 runs
#   at 1 kHz, 8 of 8 at 4 kHz on CPython 3.12). On every interpreter
#   installed, 3.12 the most.
# - Raw clone(CLONE_VM | CLONE_THREAD | ...) threads without CLONE_SETTLS,
#   which run on the main thread's TLS and so would share its slot and the
#   handler's stack: under every timer at 100 Hz and 1 kHz they compute as
#   alone, and their signals are counted as stray.
# - A thread whose SIGTRAP handler leaves by siglongjmp is still
#   cancellable: the handler's cancel state is not left behind.
. "$(dirname "$0")/lib.sh"

# same_as_alone TAG ARGS...: the program's status and output under
# stackprof (all options in $RUNOPTS) are those it has alone; the run alone
# is made once per program ($ALONE names it, default TAG)
same_as_alone() {
	local tag=$1 alone=${ALONE:-$1}
	shift
	if [ ! -e "$alone.plain" ]; then
		timeout 120 "$@" >"$alone.plain" 2>"$alone.plain.err"
		echo $? >"$alone.status"
	fi
	local want
	want=$(cat "$alone.status")
	timeout 120 "$SP" run --no-summary $RUNOPTS -o "$tag.prof" -- "$@" >"$tag.txt" 2>"$tag.err"
	local got=$?
	[ "$want" -eq "$got" ] && cmp -s "$alone.plain" "$tag.txt" ||
		{ say "$tag: status $want alone, $got profiled"; diff "$alone.plain" "$tag.txt" | head -5; return 1; }
}

complete() { "$SP" info --no-symbols "$1" 2>/dev/null | grep -q '^status: *complete'; }

# point 8: the program's SIGTRAP handler leaves by siglongjmp, then the
# thread is cancelled at a cancellation point
RUNOPTS=""
same_as_alone cancel "$BIN/probe_handler" cancel
check "cancel: a thread whose SIGTRAP handler left by siglongjmp is cancelled as alone" [ $? -eq 0 ]

# point 4: raw clone threads on the main thread's TLS
for rate in 100 1000; do
	for timer in auto perf posix thread itimer; do
		t="rawclone-$timer-$rate"
		RUNOPTS="-F $rate --timer $timer"
		ALONE=rawclone same_as_alone "$t" "$BIN/probe_handler" rawclone 8 20000000
		check "$t: 8 raw clone threads compute as alone" [ $? -eq 0 ]
		check "$t: its profile is complete" complete "$t.prof"
	done
done
# perf-sigtrap's event is inherited by the raw threads, and itimer's
# SIGPROF lands on any thread: their signals were counted, not sampled
for t in rawclone-auto-1000 rawclone-itimer-1000; do
	[ "$t" = rawclone-auto-1000 ] && ! grep -q 'perf-sigtrap' <("$SP" info --no-symbols "$t.prof") &&
		continue
	check "$t: the raw threads' signals are counted as stray" \
		has <("$SP" info --no-symbols "$t.prof") '/^stray:/' '$2 > 0'
done

# point 2: asyncio on each interpreter, 3.12 (where the probe saw it) the most
find_pythons
[ -z "$PY_MISSING" ] || say "not installed, so not tested:$PY_MISSING"
ASYNCIO="$SP_SOURCE_DIR/workloads/python/probe_asyncio.py"
for PY in "${PYTHONS[@]}"; do
	runs=1
	tasks=800
	case "$PY" in */3.12.*) runs=5 tasks=1500 ;; esac
	v=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	[ "$PY" = /usr/bin/python3 ] && v="debian-$v"
	for rate in 1000 4000; do
		bad=0
		for i in $(seq 1 $runs); do
			RUNOPTS="-F $rate"
			ALONE="py-$v" same_as_alone "py-$v-$rate-$i" "$PY" "$ASYNCIO" $tasks 40 ||
				bad=$((bad + 1))
		done
		check "python $v at $rate Hz: asyncio with $tasks tasks works as alone in $runs of $runs runs" \
			[ "$bad" -eq 0 ]
	done
done
[ ${#PYTHONS[@]} -gt 0 ] || say "no python3: the asyncio part was not run"

finish
