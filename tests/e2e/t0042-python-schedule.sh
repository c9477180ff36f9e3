#!/bin/bash
# stackprof.schedule and step() from Python, like torch.profiler.schedule:
# only the active steps are sampled, inside a profile(schedule=...) block
# with prof.step() and on its own with stackprof.step(); a later profile()
# block without a schedule samples every step again.
# Bounds follow from the CPU the script measured for each kind of step
# (splib's "burned" lines), not from what it asked for: on a busy machine a
# step gets its CPU time later, never less of it, and samples are weighted by
# the CPU time they stand for.
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
# the CPU of the active steps (bz2) and of the others (zlib), as measured here
splib.print_burned()
print("steps done")
EOF

# ms FOLDED FUNC: milliseconds of CPU in samples whose stack has the Python
# function FUNC (collapse's default value is microseconds of CPU)
ms() { awk -v w=";$2;" 'index($0, w) { n += $NF } END { printf "%d\n", n / 1000 }' "$1"; }
# burned_ms OUT FUNC: the CPU the script measured for FUNC, in milliseconds
burned_ms() { awk -v f="$2" '$1 == "burned" && $2 == f { printf "%d\n", $3 * 1000 }' "$1"; }

for mode in profile step; do
	"$SP" run --no-summary -F 1000 -o $mode.prof -- "$PY" sched.py $mode >$mode.txt 2>&1
	rc=$?
	cat $mode.txt
	check "$mode: the program ran" [ $rc -eq 0 ]
	"$SP" collapse --frame func $mode.prof >$mode.folded
	bz=$(ms $mode.folded work_bz2)
	de=$(ms $mode.folded work_zlib)
	want=$(burned_ms $mode.txt work_bz2)
	say "$mode: active steps (bz2) ${bz} ms of the ${want} ms they took, other steps (zlib) ${de} ms"
	check "$mode: the active steps were sampled (90-110% of their CPU)" \
		awk -v g="$bz" -v w="$want" 'BEGIN { exit !(w >= 500 && g >= 0.9 * w && g <= 1.1 * w) }'
	check "$mode: the other steps were not (< 3% of those)" \
		awk -v a="$bz" -v i="$de" 'BEGIN { exit !(i < 0.03 * a) }'
done
lz=$(ms profile.folded work_lzma)
want=$(burned_ms profile.txt work_lzma)
say "profile: the block without a schedule: ${lz} ms in work_lzma, which took ${want} ms"
check "a later block without a schedule samples every step (90-110% of its CPU)" \
	awk -v g="$lz" -v w="$want" 'BEGIN { exit !(w >= 300 && g >= 0.9 * w && g <= 1.1 * w) }'
finish
