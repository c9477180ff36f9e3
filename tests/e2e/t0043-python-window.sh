#!/bin/bash
# stackprof.profile() blocks are windows: once a program opened one, the
# commands show only samples taken inside windows, even though `stackprof
# run` sampled from the start; sampling stops when the last window closes;
# an inner block does not close its outer one; a child forked inside a
# window is inside one in its own profile; pprof's Duration is the
# windows' time. The same program without
# profile() shows the work outside, so the checks can see it.
# Bounds follow from the CPU the script measured (splib's "burned" lines),
# so that a busy machine, which delays the work, does not fail them.
. "$(dirname "$0")/lib.sh"
need_python
export PYTHONPATH="$SP_PYTHONPATH:$SP_SOURCE_DIR/tests/e2e"

cat >window.py <<'EOF'
import contextlib
import os
import sys

import splib
import stackprof

profile = stackprof.profile if sys.argv[1] == "window" else contextlib.nullcontext

splib.work_zlib(0.4)  # before: not shown
with profile():
    splib.work_bz2(0.3)
    with profile():  # nested: closing it leaves the outer one open
        pass
    splib.work_bz2(0.3)
    pid = os.fork()
    if pid == 0:
        splib.BURNED.clear()  # the child's own CPU from here
        splib.work_bz2(0.3)  # the child, inside the window it inherited
        print("child burned %.6f" % splib.BURNED["work_bz2"])
        sys.exit(0)
    os.waitpid(pid, 0)
splib.work_lzma(0.4)  # between: not sampled
with profile():
    splib.work_bz2(0.2)
splib.work_lzma(0.3)  # after: not sampled
splib.print_burned()
print("window done")
EOF

# samples FOLDED FUNC: samples whose stack has the native function FUNC
samples() { awk -v w=";$2;" 'index($0, w) { n += $NF } END { print n + 0 }' "$1"; }
# ms FOLDED FUNC: milliseconds of CPU in samples whose stack has the Python function FUNC
ms() { awk -v w=";$2;" 'index($0, w) { n += $NF } END { printf "%d\n", n / 1000 }' "$1"; }
# burned_ms OUT FUNC: the CPU the script measured for FUNC, in milliseconds
burned_ms() { awk -v f="$2" '$1 == "burned" && $2 == f { printf "%d\n", $3 * 1000 }' "$1"; }
# near GOT WANT: GOT is 90-110% of WANT, which is at least 200 ms
near() { awk -v g="$1" -v w="$2" 'BEGIN { exit !(w >= 200 && g >= 0.9 * w && g <= 1.1 * w) }'; }

for mode in window plain; do
	"$SP" run --no-summary -F 1000 -o $mode.prof -- "$PY" window.py $mode >$mode.txt 2>&1
	rc=$?
	cat $mode.txt
	check "$mode: the program ran" [ $rc -eq 0 ]
	"$SP" collapse --frame func --metric samples $mode.prof >$mode.folded
	"$SP" collapse --frame func $mode.prof >$mode.ms.folded
	"$SP" info $mode.prof >$mode.info
	say "$mode: inside $(samples $mode.folded BZ2_bzCompress), before $(samples $mode.folded deflate)," \
		"between and after $(samples $mode.folded lzma_code) samples"
done
say "plain: zlib $(ms plain.ms.folded work_zlib) of $(burned_ms plain.txt work_zlib) ms," \
	"lzma $(ms plain.ms.folded work_lzma) of $(burned_ms plain.txt work_lzma) ms"
check "without profile(): the work before the window is seen (90-110% of its CPU)" \
	near "$(ms plain.ms.folded work_zlib)" "$(burned_ms plain.txt work_zlib)"
check "without profile(): the work after it is seen (90-110% of its CPU)" \
	near "$(ms plain.ms.folded work_lzma)" "$(burned_ms plain.txt work_lzma)"
check "without profile(): info lists no window" bash -c "! grep -q '^windows:' plain.info"

say "window: bz2 $(ms window.ms.folded work_bz2) of $(burned_ms window.txt work_bz2) ms"
check "in the windows: 90-110% of the CPU there" \
	near "$(ms window.ms.folded work_bz2)" "$(burned_ms window.txt work_bz2)"
check "the work before the first window does not appear" [ "$(samples window.folded deflate)" -eq 0 ]
check "the work between and after the windows does not appear" [ "$(samples window.folded lzma_code)" -eq 0 ]
grep '^windows:' window.info
check "info counts two windows" grep -q '^windows: *2 ' window.info
check "and samples outside them (the work before: at least a quarter of its milliseconds)" \
	has window.info '/^windows:/' "\$7 - \$5 >= 0.25 * $(burned_ms window.txt work_zlib)"

# pprof's Duration is the time the windows were open, not the run's
# (go tool pprof prints it, and its share of samples, from it)
if command -v go >/dev/null 2>&1; then
	"$SP" export --format pprof window.prof -o window.pb.gz
	go tool pprof -top window.pb.gz 2>/dev/null | grep '^Duration:' >pprof.dur
	cat pprof.dur
	run_s=$(awk '/^duration:/ { print $2 + 0 }' window.info)
	check "pprof: Duration is the windows' time, well under the run's ${run_s}s" \
		awk -v r="$run_s" '{ d = $2 + 0; exit !(d > 0.5 && d < 0.7 * r) }' pprof.dur
else
	say "go is not installed: pprof's Duration not checked"
fi

# started paused, sampling is on only inside the windows: the file holds
# nothing else, so the work between and after was not sampled at all
STACKPROF_START=0 "$SP" run --no-summary -F 1000 -o paused.prof -- "$PY" window.py window >paused.txt 2>&1
check "paused: the program ran" [ $? -eq 0 ]
"$SP" info paused.prof >paused.info
grep '^windows:' paused.info
check "paused: all but 3 samples or fewer are inside the windows" \
	has paused.info '/^windows:/' '$5 > 0 && $7 - $5 <= 3'
"$SP" collapse --frame func paused.prof >paused.folded
check "paused: the windows' work is all there (90-110% of its CPU)" \
	near "$(ms paused.folded work_bz2)" "$(burned_ms paused.txt work_bz2)"

child=$(ls window.prof.* 2>/dev/null | head -1)
check "the forked child wrote its own profile" [ -n "$child" ]
if [ -n "$child" ]; then
	"$SP" collapse --frame func "$child" >child.folded
	"$SP" info "$child" >child.info
	grep '^windows:' child.info
	check "the child's profile has the window it was forked in" grep -q '^windows: *1 ' child.info
	want=$(awk '$1 == "child" && $2 == "burned" { printf "%d\n", $3 * 1000 }' window.txt)
	say "child: bz2 $(ms child.folded work_bz2) of $want ms"
	check "and shows the child's work in it (90-110% of its CPU)" near "$(ms child.folded work_bz2)" "$want"
fi
finish
