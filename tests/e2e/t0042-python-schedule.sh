#!/bin/bash
# stackprof.schedule and step() from Python, like torch.profiler.schedule:
# only the active steps are sampled, inside a profile(schedule=...) block
# with prof.step() and on its own with stackprof.step(); a later profile()
# block without a schedule samples every step again.
. "$(dirname "$0")/lib.sh"
need_python
export PYTHONPATH="$SP_PYTHONPATH:$SP_SOURCE_DIR/tests/e2e"

cat >sched.py <<'EOF'
import sys

import splib
import stackprof

# wait 2, warmup 1, active 3, twice: steps 3-5 and 9-11 of 0-13 are sampled
ACTIVE = {3, 4, 5, 9, 10, 11}


def work(i):
    if i in ACTIVE:
        splib.work_bz2(0.1)
    else:
        splib.work_zlib(0.1)


s = stackprof.schedule(wait=2, warmup=1, active=3, repeat=2)
if sys.argv[1] == "profile":
    with stackprof.profile(schedule=s) as prof:
        for i in range(14):
            work(i)
            prof.step()
    with stackprof.profile() as prof:  # no schedule: every step
        for i in range(4):
            splib.work_lzma(0.1)
            prof.step()
else:
    for i in range(14):
        work(i)
        stackprof.step()
print("steps done")
EOF

for mode in profile step; do
	"$SP" run --no-summary -F 1000 -o $mode.prof -- "$PY" sched.py $mode >$mode.txt 2>&1
	rc=$?
	cat $mode.txt
	check "$mode: the program ran" [ $rc -eq 0 ]
	"$SP" collapse --frame func --metric samples $mode.prof >$mode.folded
	bz=$(awk '/;BZ2_bzCompress;/ { n += $NF } END { print n + 0 }' $mode.folded)
	de=$(awk '/;deflate;/ { n += $NF } END { print n + 0 }' $mode.folded)
	say "$mode: active steps (bz2) $bz samples, other steps (zlib) $de samples"
	check "$mode: the active steps were sampled (>= 400 of ~600)" [ "$bz" -ge 400 ]
	check "$mode: the other steps were not (< 3% of those)" \
		awk -v a="$bz" -v i="$de" 'BEGIN { exit !(i < 0.03 * a) }'
done
lz=$(awk '/;lzma_code;/ { n += $NF } END { print n + 0 }' profile.folded)
say "profile: the block without a schedule: $lz samples of lzma"
check "a later block without a schedule samples every step (>= 250 of ~400)" [ "$lz" -ge 250 ]
finish
