#!/bin/bash
# Signals the program blocked stay blocked, as far as it can tell (issue 30,
# points 9 to 11): a signal of stackprof's is never delivered to, dequeued
# by or visible to the program.
# - The shutdown design: every signal blocked, workers, then sigtimedwait,
#   sigwaitinfo, sigwait and a signalfd wait for the worker's SIGUSR1; the
#   program's own SIGTRAP and SIGPROF, raised while blocked, stay pending
#   for it and come out of its wait. (Before: the waits returned
#   stackprof's SIGTRAP or SIGPROF, with every timer.)
# - The ppoll, pselect and epoll_pwait idiom (every signal blocked but
#   during the wait): no wait cut short, 200 of each, as alone. (Before: 20 of 200 at
#   100 Hz, 200 of 200 at 4 kHz, on the default timer.)
# - SIGTRAP and SIGPROF blocked across exec: sigprocmask and
#   pthread_sigmask report them blocked, on the main thread and on a new
#   thread, and the image is sampled all the same. (Before: reported open.)
# Every timer, at 100 Hz and 4 kHz; the Python version of the first case
# (signal.pthread_sigmask, then sigwait, sigtimedwait, sigwaitinfo) on
# Debian's python3 and one pyenv version.
. "$(dirname "$0")/lib.sh"

P="$BIN/probe_blocked"
PY_PROBE="$SP_SOURCE_DIR/workloads/python/probe_sigwait.py"

# alone TAG ARGS...: the program's output and status alone, once
alone() {
	local tag=$1
	shift
	timeout 60 "$@" >"$tag.plain" 2>"$tag.plain.err"
	echo $? >"$tag.plain.rc"
}

# same_as TAG RUN ARGS...: status and output under stackprof ($RUNOPTS) are
# those of the run alone saved as TAG
same_as() {
	local tag=$1 run=$2
	shift 2
	timeout 60 "$SP" run --no-summary $RUNOPTS -o "$run.prof" -- "$@" >"$run.txt" 2>"$run.err"
	local got=$? want
	want=$(cat "$tag.plain.rc")
	[ "$want" -eq "$got" ] && cmp -s "$tag.plain" "$run.txt" ||
		{ say "status $want alone, $got profiled"; diff "$tag.plain" "$run.txt" | head; return 1; }
}

# report_sampled PATH: a profile at PATH or PATH.<pid> of the image that
# reported its mask holds samples (run keeps the busier image's at PATH)
report_sampled() {
	local f
	for f in "$1" "$1".*; do
		[ -f "$f" ] || continue
		"$SP" info --no-symbols "$f" >"$f.info" 2>/dev/null
		grep -q '^command:.* report$' "$f.info" && has "$f.info" '/^samples:/' '$2 > 0' && return 0
	done
	return 1
}

alone wait "$P" wait
alone ppoll "$P" ppoll 200
alone exec "$P" exec
check "alone: the probe gets the signals it waits for" [ "$(cat wait.plain.rc)" -eq 0 ]
check "alone: no wait is cut short" [ "$(grep -c ' 0 of 200' ppoll.plain)" -eq 3 ]
check "alone: the blocked signals are inherited across exec" [ "$(cat exec.plain.rc)" -eq 0 ]

for rate in 100 4000; do
	for timer in auto perf posix thread itimer; do
		t="$timer-$rate"
		RUNOPTS="-F $rate --timer $timer"
		same_as wait "wait-$t" "$P" wait
		check "$t: every signal blocked: sigtimedwait, sigwaitinfo, sigwait and signalfd get the worker's SIGUSR1, and the program's own SIGTRAP and SIGPROF wait for it" [ $? -eq 0 ]
		same_as ppoll "ppoll-$t" "$P" ppoll 200
		check "$t: ppoll, pselect and epoll_pwait with every signal blocked but during the wait: none cut short" [ $? -eq 0 ]
		"$SP" info --no-symbols "ppoll-$t.prof" >"ppoll-$t.info" 2>&1
		check "$t: and the profile counts no wait cut short (syscalls_cut)" \
			eval "! grep -q '^eintr: *[1-9]' ppoll-$t.info"
		same_as exec "exec-$t" "$P" exec
		check "$t: SIGTRAP and SIGPROF blocked across exec are reported blocked" [ $? -eq 0 ]
		check "$t: the exec'ed image is sampled while its mask blocks the timer's signal" \
			report_sampled "exec-$t.prof"
		rm -f ./*"-$t.prof"*
	done
done

find_pythons
pys=()
[ -x /usr/bin/python3 ] && pys+=(/usr/bin/python3)
for p in "${PYTHONS[@]}"; do
	[ "$p" != /usr/bin/python3 ] && { pys+=("$p"); break; }
done
[ -z "$PY_MISSING" ] || say "not installed, so not tested:$PY_MISSING"
if [ ${#pys[@]} -eq 0 ]; then
	say "SKIP: the Python case: no python3"
fi
for py in "${pys[@]}"; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	alone "py$v" "$py" "$PY_PROBE"
	check "python $v alone: the waits get the signals it sent" [ "$(cat "py$v.plain.rc")" -eq 0 ]
	for run in "auto 100" "auto 4000" "posix 4000"; do
		set -- $run
		RUNOPTS="-F $2 --timer $1"
		same_as "py$v" "py$v-$1-$2" "$py" "$PY_PROBE"
		check "python $v, $1 at $2 Hz: pthread_sigmask reports SIGTRAP and SIGPROF blocked; sigwait, sigtimedwait and sigwaitinfo get only the program's signals" [ $? -eq 0 ]
	done
done
finish
