#!/bin/bash
# lifecycle-test.sh BUILD_DIR VERSION: Python code that dies, and Python's
# own signal handling, under stackprof on one interpreter (issue 16, points
# 5 and 7); VERSION as split-test.sh (3.10 to 3.13, or debian).
# - workloads/python/codedeath.py: functions compiled by exec() and a module
#   rewritten and reloaded each round, each dropped before the next round
#   compiles the next; every round spends its CPU on one line of its own.
#   At 1 kHz each (file, line) gets its measured share within 2 points of
#   total variation, no sample lands on a line no round ran, and unreadable
#   frames stay under 0.5%;
# - workloads/python/signals.py: signal.signal handlers all run (100 of 100
#   SIGUSR1, SIGALRM from an interval timer), SIGINT raises
#   KeyboardInterrupt, and a Ctrl-C sent to the process group ends the
#   program exactly as without stackprof (status, traceback).
. "$(dirname "$0")/../e2e/lib.sh"
VERSION=${2:?usage: $0 BUILD_DIR VERSION}
pick_python "$VERSION"
W=$SP_SOURCE_DIR/workloads/python

# ---- code that dies
mkdir mod
"$SP" run --no-summary -F 1000 -o d.prof -- "$PY" "$W/codedeath.py" mod 3 >d.truth
check "codedeath.py exits 0 under stackprof" [ $? -eq 0 ]
"$SP" collapse --metric samples --strip-path none d.prof >d.lines
# each sample's (file, line): the frame of exec_fn_N or work, innermost
awk 'FNR == NR { if ($1 == "truth") { key = $5 " (" $3 ":" $4 ")"; truth[key] = $6 } next }
{
	v = $NF; tot += v
	if (!match($0, /;(exec_fn_[0-9]+|work)_\([^()]*:[0-9]+\)/)) next
	f = substr($0, RSTART + 1, RLENGTH - 1); sub(/_\(/, " (", f)
	if (f in truth) got[f] += v; else { stray += v; print "  stray: " f " " v }
	in_rounds += v
}
END {
	for (k in truth) {
		p = in_rounds ? got[k] / in_rounds : 0; d = p - truth[k]; tv += d < 0 ? -d : d
		printf "  %-36s truth %5.1f%%  profile %5.1f%%\n", k, 100 * truth[k], 100 * p
	}
	printf "TV %.2f\nSTRAY %d\nROUNDS %d\n", 50 * tv, stray, in_rounds
}' d.truth d.lines >d.shares
cat d.shares
tv=$(awk '$1 == "TV" { print $2 }' d.shares)
stray=$(awk '$1 == "STRAY" { print $2 }' d.shares)
rounds=$(awk '$1 == "ROUNDS" { print $2 }' d.shares)
check "enough samples in the rounds ($rounds >= 1500)" [ "${rounds:-0}" -ge 1500 ]
check "each round's line within 2 points of total variation of the truth (TV $tv)" \
	awk -v t="$tv" 'BEGIN { exit !(t != "" && t <= 2) }'
check "no sample on a line no round ran ($stray)" awk -v s="$stray" -v n="$rounds" 'BEGIN { exit !(s < 0.005 * n) }'
total=$(awk '{ s += $NF } END { print s }' d.lines)
bad=$(grep -E 'unreadable Python frame|Python code not recorded' d.lines | awk '{ s += $NF } END { print s + 0 }')
check "unreadable Python frames: $bad of $total samples (< 0.5%)" \
	awk -v b="$bad" -v t="$total" 'BEGIN { exit !(t > 0 && b < 0.005 * t) }'
"$SP" info d.prof | grep -E '^python:' -A2

# ---- signals
"$SP" run --no-summary -F 1000 -o h.prof -- "$PY" "$W/signals.py" handlers 100 >h.out 2>&1
check "handlers: exits 0 under stackprof" [ $? -eq 0 ]
cat h.out
check "every SIGUSR1 reached its signal.signal handler" grep -qx 'usr1 100 of 100' h.out
check "SIGALRM handlers ran (>= 20 in 0.5 s of 10 ms intervals)" \
	awk '$1 == "alrm" { found = 1; exit !($2 >= 20) } END { if (!found) exit 1 }' h.out
"$SP" run --no-summary -F 1000 -o i.prof -- "$PY" "$W/signals.py" sigint >i.out 2>&1
check "SIGINT still raises KeyboardInterrupt" grep -qx 'KeyboardInterrupt ok' i.out

# Ctrl-C: SIGINT to the whole process group, as a terminal sends it; job
# control gives each background job a group of its own (and leaves SIGINT
# as it is, not ignored)
set -m
ctrl_c() {
	"$@" >c.out 2>c.err &
	local pid=$! i
	for i in $(seq 200); do
		grep -q ready c.out && break
		sleep 0.05
	done
	sleep 0.2
	kill -INT -- -"$pid"
	wait "$pid"
}
ctrl_c "$PY" "$W/signals.py" ctrl-c
plain_rc=$?
ctrl_c "$SP" run --no-summary -F 1000 -o c.prof -- "$PY" "$W/signals.py" ctrl-c
rc=$?
set +m
check "Ctrl-C: same exit status as without stackprof ($rc, plain $plain_rc)" [ "$rc" = "$plain_rc" ]
check "Ctrl-C: Python ends by KeyboardInterrupt" grep -qx 'KeyboardInterrupt' c.err
check "Ctrl-C: the profile is whole" "$SP" info c.prof
finish
