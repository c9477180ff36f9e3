#!/bin/bash
# stackprof's messages and the descriptors they go to (issue 30, points 1,
# 15, 16 and 17):
# - a program that closes stderr and opens its data file (fd 2), then takes
#   SIGPROF: the data file holds only its own bytes, under every timer, by
#   `run` and by plain LD_PRELOAD; stackprof's notices still reach the
#   stderr the program was started with, also when the program dup2'ed its
#   own log over fd 2;
# - RLIMIT_NOFILE lowered to 16, then a fork: the child's profile can't be
#   made; the message names the limit, no empty PATH.<pid> is left, and run
#   exits 1 (or with the program's own status);
# - -o with a newline (or any control character), -o '', and a --schedule
#   the library would refuse: usage errors (exit 2) before the program
#   starts; the library given such a STACKPROF_OUT says so once and runs the
#   program unprofiled; a directory whose name holds a newline does not
#   split the manifest.
. "$(dirname "$0")/lib.sh"
LIB="$BUILD/libstackprof.so"
P="$BIN/probe_stderr"
export STACKPROF_VERBOSE=1 # notices at start and at exit, under every timer

# alone TAG MODE: the program alone; its status, stdout and data file
alone() {
	timeout 60 "$P" "$2" "$1.data" >"$1.out" 2>"$1.err"
	echo $? >"$1.rc"
}
# same TAG REF: TAG's status, stdout and data file are REF's
same() {
	[ "$(cat "$1.rc")" = "$(cat "$2.rc")" ] && cmp -s "$1.out" "$2.out" &&
		cmp -s "$1.data" "$2.data" && return 0
	say "status $(cat "$2.rc") alone, $(cat "$1.rc") profiled; the data file:"
	diff "$2.data" "$1.data" | head -5
	return 1
}

for mode in close dup2 keep; do
	alone "alone-$mode" "$mode"
	check "$mode: the program alone is ok" grep -q "^probe $mode: ok" "alone-$mode.out"
	timers="auto perf posix thread itimer"
	# with stderr as it was, two timers show the notices still reach it
	[ "$mode" = keep ] && timers="auto posix"
	for timer in $timers; do
		t="run-$mode-$timer"
		timeout 60 "$SP" run --no-summary -F 100 --timer "$timer" -o "$t.prof" -- \
			"$P" "$mode" "$t.data" >"$t.out" 2>"$t.err"
		echo $? >"$t.rc"
		check "$t: status, output and data file are as alone" same "$t" "alone-$mode"
		t="preload-$mode-$timer"
		timeout 60 env STACKPROF_OUT="$t.prof" STACKPROF_TIMER="$timer" STACKPROF_FREQ=100 \
			LD_PRELOAD="$LIB" "$P" "$mode" "$t.data" >"$t.out" 2>"$t.err"
		echo $? >"$t.rc"
		check "$t: status, output and data file are as alone" same "$t" "alone-$mode"
		# the stderr the program was started with still gets the notices
		check "$t: the exit notice reaches the original stderr" \
			grep -q "stackprof\[[0-9]*\]: profile written to .*$t.prof\$" "$t.err"
		if [ "$timer" != auto ] && [ "$mode" != close ]; then
			check "$t: the SIGPROF notice reaches the original stderr" \
				grep -q 'the program takes SIGPROF; stackprof steps aside' "$t.err"
		fi
	done
done

# --- RLIMIT_NOFILE lowered to 16 before a fork
alone alone-nofile nofile
(
	ulimit -n 1024
	timeout 60 "$SP" run --no-summary -o nf.prof -- "$P" nofile run-nofile.data >run-nofile.out 2>nf.err
	echo $? >run-nofile.rc
	# the program's own failure status wins over run's
	timeout 60 "$SP" run --no-summary -o nf7.prof -- sh -c "\"$P\" nofile nf7.data; exit 7" \
		>/dev/null 2>nf7.err
	echo $? >nf7.rc
	timeout 60 env STACKPROF_OUT=nfp.prof LD_PRELOAD="$LIB" "$P" nofile preload-nofile.data \
		>preload-nofile.out 2>nfp.err
	echo $? >preload-nofile.rc
)
check "nofile: the program's output and data are as alone" \
	bash -c 'cmp -s run-nofile.out alone-nofile.out && cmp -s run-nofile.data alone-nofile.data'
check "nofile: run exits 1 when the child's profile could not be made ($(cat run-nofile.rc))" \
	[ "$(cat run-nofile.rc)" = 1 ]
check "nofile: the message names the descriptor limit" grep -q 'RLIMIT_NOFILE' nf.err
check "nofile: and not a wrong reason" bash -c '! grep -q "Invalid argument" nf.err'
check "nofile: run names the child's profile that failed" grep -q 'nf.prof\.[0-9]* failed' nf.err
check "nofile: no empty profile is left" bash -c '[ -z "$(find . -name "nf*.prof*" -size 0)" ]'
check "nofile: the program's own status is kept (7)" [ "$(cat nf7.rc)" = 7 ]
check "nofile: plain preload runs as alone" same preload-nofile alone-nofile
check "nofile: plain preload says why" grep -q 'RLIMIT_NOFILE' nfp.err
check "nofile: plain preload leaves no empty profile" \
	bash -c '[ -z "$(find . -name "nfp.prof*" -size 0)" ]'

# --- paths and settings the CLI must refuse before the program starts
# refused ARGS...: run with ARGS exits 2, says why, and never starts its program
refused() {
	rm -f ran
	timeout 30 "$SP" run "$@" -- sh -c 'touch ran' >refused.out 2>refused.err
	local rc=$?
	[ $rc -eq 2 ] && [ ! -e ran ] && [ -s refused.err ] && return 0
	say "exit $rc, program ran: $([ -e ran ] && echo yes || echo no)"
	cat refused.err
	return 1
}
check "-o with a newline is refused" refused -o $'new\nline.prof'
check "and the message says why" grep -q 'control character' refused.err
check "-o with a tab is refused" refused -o $'tab\there.prof'
check "no file with a newline was made" bash -c '[ -z "$(find . -name "*line.prof*")" ]'
check "-o '' is refused" refused -o ''
check "and the message says why" grep -q -- "-o wants a file name" refused.err
for s in -1,-2,-3 1,2 1,2,0 1,2,3,4,5 1,,3 1,2,3, 99999999999,1,1 ' 1,2,3' +1,2,3; do
	check "--schedule '$s' is refused" refused --schedule "$s"
done
check "--schedule 1,2,3 is taken" bash -c "\"$SP\" run --no-summary --schedule 1,2,3 -o s.prof -- true 2>/dev/null"
check "--schedule 0,0,1,2 is taken" bash -c "\"$SP\" run --no-summary --schedule 0,0,1,2 -o s4.prof -- true 2>/dev/null"

# the library given a STACKPROF_OUT with a newline: the program as alone, one
# message, no profile; its children say nothing more
timeout 60 env STACKPROF_OUT=$'nl\nout.prof' LD_PRELOAD="$LIB" "$P" keep lib-nl.data >lib-nl.out 2>lib-nl.err
echo $? >lib-nl.rc
check "STACKPROF_OUT with a newline: the program runs as alone" same lib-nl alone-keep
check "and says so once" [ "$(grep -c 'control character' lib-nl.err)" = 1 ]
check "and makes no file" bash -c '[ -z "$(find . -name "nl*")" ]'

# a directory whose name holds a newline: the manifest keeps the path whole
mkdir $'dir\nname'
(cd $'dir\nname' && STACKPROF_VERBOSE=0 timeout 60 "$SP" run -o p.prof -- "$P" keep d.data >/dev/null 2>../nldir.err)
check "a newline in the directory: run exits 0" [ $? -eq 0 ]
check "the profile is there" [ -s $'dir\nname/p.prof' ]
check "run reads every profile the manifest names" \
	bash -c '! grep -q "No such file\|warning\|no samples" nldir.err'
check "and lists the child's profile whole" grep -q $'name/p.prof.[0-9]* ([1-9][0-9]* samples)' nldir.err
finish
