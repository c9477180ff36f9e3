#!/bin/bash
# The program's descriptors are its own (issue 13, item 1): a program that
# closes every descriptor from 3 up (close_range, closefrom, a close() loop,
# a loop over /proc/self/fd), dup2s its log over every number, or closes
# by raw system call, then writes a file of its own, finds exactly its own
# bytes there and every write succeeds; threads that exit meanwhile close
# nothing of its. The profile goes on being written where stackprof could
# keep its descriptor, at 100 Hz and 1 kHz, with every timer.
. "$(dirname "$0")/lib.sh"

# hostile checks its own file and exits 1 if it is not exactly its own.
# It starts with only 0-2 open, as a daemon would, so the numbers a
# profiler takes first are the ones the program's own files get next.
run_mode() { # TAG MODE RUN-OPTIONS...
	local tag=$1 mode=$2
	shift 2
	(
		for fd in $(ls /proc/$BASHPID/fd); do
			[ "$fd" -gt 2 ] && eval "exec $fd>&-"
		done
		exec timeout 120 "$SP" run --no-summary -o "$tag.prof" "$@" -- \
			"$BIN/hostile" "$mode" "$tag.out" >"$tag.txt" 2>"$tag.err"
	)
	local rc=$?
	[ $rc -eq 0 ] || { cat "$tag.txt" "$tag.err"; return 1; }
}

# samples_in PROF FUNC: the profile is complete and has samples in FUNC
# (and shows the profile's status and stacks when not)
samples_in() {
	"$SP" info --no-symbols "$1" >"$1.info" 2>&1 &&
		grep -q '^status: *complete' "$1.info" &&
		"$SP" collapse --frame func --metric samples "$1" >"$1.folded" 2>&1 &&
		grep -q ";\($2\)[; ]" "$1.folded" && return 0
	head -30 "$1.info"
	head -20 "$1.folded" 2>/dev/null
	return 1
}

for rate in 100 1000; do
	for timer in auto trap perf posix thread itimer; do
		t="$timer-$rate"
		for mode in closerange closeloop closefrom dup2all procfd; do
			# dup2all takes 3..1023: with room above, stackprof's move there
			(ulimit -n 4096 && run_mode "$mode-$t" "$mode" -F "$rate" --timer "$timer")
			check "$t $mode: the program's file is exactly its own" [ $? -eq 0 ]
			# ITIMER_PROF starves a thread that reads CLOCK_THREAD_CPUTIME_ID
			# (hostile_work) on a machine this busy (docs/SAMPLER.md, "Timers")
			n=$("$SP" info --no-symbols "$mode-$t.prof" | awk '/^samples:/ { print $2 }')
			if [ "$timer" = itimer ] && [ "${n:-0}" -lt 10 ]; then
				say "$t $mode: the kernel sent ITIMER_PROF ${n:-0} times: samples after the close not checked"
				check "$t $mode: the profile is complete" \
					grep -q '^status: *complete' <("$SP" info --no-symbols "$mode-$t.prof")
			else
				check "$t $mode: the profile is complete, with samples after the close" \
					samples_in "$mode-$t.prof" 'own_file\|write_lines'
			fi
		done
		check "$t threadexit: exiting threads close nothing of the program's" \
			run_mode "tx-$t" threadexit -F "$rate" --timer "$timer"
	done
	# every number up to the limit taken: stackprof gives its own up, and
	# the program still gets exactly its own bytes; the profile file is
	# opened again by its path once numbers are free
	(ulimit -n 1024 && run_mode "all-$rate" dup2all -F "$rate")
	check "$rate Hz dup2 over every number: the program's file is exactly its own" [ $? -eq 0 ]
	check "$rate Hz dup2 over every number: stackprof says it gave its descriptor up" \
		grep -q 'gives its own up' "all-$rate.err"
	check "$rate Hz dup2 over every number: the profile is complete" \
		grep -q '^status: *complete' <("$SP" info --no-symbols "all-$rate.prof")
	# closed behind the interposers' back: the profile's number now names
	# the program's file, which must still get nothing but its own bytes
	check "$rate Hz rawclose: the program's file is exactly its own" \
		run_mode "raw-$rate" rawclose -F "$rate"
	check "$rate Hz rawclose: stackprof says it lost its descriptor" \
		grep -q 'no longer names' "raw-$rate.err"
done

# the numbers stackprof keeps are out of the program's low range: the top
# 64 under the descriptor limit (1024 at most), whatever the limit the test
# runs under
"$SP" run --no-summary -o low.prof -- /bin/sh -c 'ulimit -n; ls -l /proc/$$/fd' >low.txt 2>&1
lim=$(head -1 low.txt)
[ "$lim" = unlimited ] || [ "$lim" -gt 1024 ] && lim=1024
floor=$((lim > 128 ? lim - 64 : lim / 2))
check "stackprof's descriptors sit above the program's (>= $floor under a limit of $lim)" \
	awk -v floor="$floor" '/->/ { n = $(NF - 2) + 0; if (n > 2 && $NF ~ /low\.prof$|perf_event|stackprof-manifest/) { seen = 1; if (n < floor) bad = 1 } }
	     END { exit bad || !seen }' low.txt
finish
