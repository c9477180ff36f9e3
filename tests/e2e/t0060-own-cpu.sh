#!/bin/bash
# `stackprof info` says what stackprof's own code cost the program: the
# handler, the writer (its thread, and the final flush on whichever thread
# does it) and the set-up (start-up, and each thread's attach). The writer's
# figure is checked against the kernel's own count of the writer thread's
# run time (/proc/self/task/TID/schedstat), read by the program just before
# it exits; the set-up's grows with the threads it sets up.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x $PY ] || skip "Debian's python3 is not installed"

cat >spin.py <<'EOF'
import os, time
end = time.thread_time() + 1.5
x = 0
while time.thread_time() < end:
    x += 1
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        if f.read().strip() == "stackprof-wr":
            with open(f"/proc/self/task/{tid}/schedstat") as s:
                print("writer_ns", s.read().split()[0])
EOF
"$SP" run --no-summary -F 1000 -o spin.prof -- $PY spin.py >spin.out
check "the program runs and sees the writer thread" grep -q '^writer_ns [0-9]' spin.out
"$SP" info spin.prof >spin.info
check "info has a line for stackprof's own CPU" grep -q '^own CPU: ' spin.info
# "own CPU:     0.52% of the sampled CPU: handler 2.1ms, writer 6.8ms, set-up 1.4ms":
# the writer is field 11, the set-up 13
to_ns='function ns(v) { if (v ~ /us$/) return v * 1e3; if (v ~ /ms$/) return v * 1e6; return v * 1e9 }'
read -r writer setup <<<"$(awk "$to_ns"' /^own CPU:/ { w = $11; s = $13; sub(/,$/, "", w); print ns(w), ns(s) }' spin.info)"
kernel=$(awk '/^writer_ns/ { print $2 }' spin.out)
say "writer: ${writer} ns in the profile, ${kernel} ns by the kernel before the final flush; set-up ${setup} ns"
# the profile's count takes in the final flush too (a few ms at most on
# this profile): at least the kernel's, and not far above it
check "the writer's CPU is at least what the kernel counted" \
	awk -v w="$writer" -v k="$kernel" 'BEGIN { exit !(w >= 0.95 * k) }'
check "and at most 20 ms more" awk -v w="$writer" -v k="$kernel" 'BEGIN { exit !(w <= k + 20e6) }'
check "set-up is counted" awk -v s="$setup" 'BEGIN { exit !(s > 0) }'

# the run summary says the same as info
"$SP" run -F 1000 -o sum.prof -- $PY spin.py >/dev/null 2>sum.err
"$SP" info sum.prof 2>/dev/null | sed -n 's/^own CPU: *//p' >sum.info
check "the run summary has the own CPU line, as info has it" \
	bash -c "[ -s sum.info ] && grep -qF \"stackprof: own CPU: \$(cat sum.info)\" sum.err"

# 2,400 short threads: each attach (a ring, a signal stack, a timer) is set-up
"$SP" run --no-summary -F 1000 -o churn.prof -- "$BIN/stress" churn >/dev/null
read -r churn_setup <<<"$("$SP" info churn.prof | awk "$to_ns"' /^own CPU:/ { print ns($13) }')"
say "set-up: ${churn_setup} ns with thousands of threads, ${setup} ns with one"
check "set-up grows with the threads set up" \
	awk -v c="$churn_setup" -v s="$setup" 'BEGIN { exit !(c > 3 * s) }'
finish
