#!/bin/bash
# A program that runs nothing costs the writer little: it wakes every
# 100 ms (every 20 ms until 2026-11-28), and a periodic flush
# with nothing new writes nothing, for up to ten flush intervals (2 s).
# A busy program still flushes every 200 ms, and a sleeping one killed
# outright keeps stats at most 2 s old. Counted in the file: the
# CHECKPOINT records (type 9), one per flush.
. "$(dirname "$0")/lib.sh"

PY=python3
command -v $PY >/dev/null || skip "no python3 to read the records"
# flushes PROFILE: the checkpoints in the stream (after the 8-byte magic)
flushes() {
	$PY - "$1" <<'PYEOF'
import sys, zlib
raw = zlib.decompressobj().decompress(open(sys.argv[1], "rb").read()[8:])
def uleb(b, i):
    r = s = 0
    while True:
        x = b[i]; i += 1; r |= (x & 0x7f) << s; s += 7
        if x < 0x80:
            return r, i
i = n = 0
while i < len(raw):
    t = raw[i]
    size, i = uleb(raw, i + 1)
    n += t == 9
    i += size
print(n)
PYEOF
}
duration() { "$SP" info --no-symbols "$1" 2>/dev/null | awk '$1 == "duration:" { v = $2; if (v ~ /ms$/) v /= 1000; print v + 0 }'; }

"$SP" run --no-summary -o idle.prof -- sleep 3
n=$(flushes idle.prof)
say "sleep 3: $n flushes (every 200 ms would be 15)"
# the first (start-up's records), one forced after 2 s, the last, and
# one for a thread name or module record that came late
check "a sleeping program: at most 5 flushes in 3 s" [ "$n" -le 5 ]
check "its profile is complete" grep -q '^status: *complete$' <("$SP" info --no-symbols idle.prof)
check "and lasts the 3 s" awk -v d="$(duration idle.prof)" 'BEGIN { exit !(d >= 2.9) }'

# the writer's wake-ups while the program sleeps 3 s: its voluntary
# context switches, one a pass (every 20 ms would be 150)
cat >wakes.py <<'PYEOF'
import os, time
time.sleep(3)
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        if f.read().strip() == "stackprof-wr":
            for line in open(f"/proc/self/task/{tid}/status"):
                if line.startswith("voluntary_ctxt_switches:"):
                    print(line.split()[1])
PYEOF
wakes=$("$SP" run --no-summary -o wakes.prof -- $PY wakes.py)
say "the writer woke $wakes times in 3 s of sleep"
check "a sleeping program: the writer wakes at most 60 times in 3 s" \
	bash -c "[ -n '$wakes' ] && [ '$wakes' -le 60 ]"

"$SP" run --no-summary -o busy.prof -- "$BIN/recurse" 150 1 >/dev/null
n=$(flushes busy.prof)
d=$(duration busy.prof)
say "a busy run of ${d} s: $n flushes"
check "a busy program still flushes every 200 ms (at least 70% of them)" \
	awk -v n="$n" -v d="$d" 'BEGIN { exit !(n >= 0.7 * d / 0.2) }'

# a flush interval under the writer's pause (100 ms): the writer wakes
# for each flush as it falls due (at a pass every 100 ms, 10 a second)
"$SP" run --no-summary --flush-ms 40 -o fast.prof -- "$BIN/recurse" 150 1 >/dev/null
n=$(flushes fast.prof)
d=$(duration fast.prof)
say "a busy run of ${d} s with --flush-ms 40: $n flushes"
check "--flush-ms 40: a flush every 40 ms (at least 70% of them)" \
	awk -v n="$n" -v d="$d" 'BEGIN { exit !(n >= 0.7 * d / 0.04) }'

# killed in its sleep: the last stats written at most 2 s before
"$SP" run --no-summary -o killed.prof -- sleep 30 &
runner=$!
sleep 4.5
pkill -KILL -P $runner
{ wait $runner; } 2>/dev/null
d=$(duration killed.prof)
say "killed after 4.5 s of sleep: the profile's duration is $d s"
check "a sleeping program killed outright: stats at most 2 s old" \
	awk -v d="$d" 'BEGIN { exit !(d >= 1.4) }'
finish
