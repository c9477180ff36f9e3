#!/bin/bash
# stackprof.profile() blocks are windows: once a program opened one, the
# commands show only samples taken inside windows, even though `stackprof
# run` sampled from the start; sampling stops when the last window closes;
# an inner block does not close its outer one; a child forked inside a
# window is inside one in its own profile; pprof's Duration is the
# windows' time. The same program without
# profile() shows the work outside, so the checks can see it.
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
        splib.work_bz2(0.3)  # the child, inside the window it inherited
        sys.exit(0)
    os.waitpid(pid, 0)
splib.work_lzma(0.4)  # between: not sampled
with profile():
    splib.work_bz2(0.2)
splib.work_lzma(0.3)  # after: not sampled
print("window done")
EOF

# samples FOLDED FUNC: samples whose stack has the native function FUNC
samples() { awk -v w=";$2;" 'index($0, w) { n += $NF } END { print n + 0 }' "$1"; }

for mode in window plain; do
	"$SP" run --no-summary -F 1000 -o $mode.prof -- "$PY" window.py $mode >$mode.txt 2>&1
	rc=$?
	cat $mode.txt
	check "$mode: the program ran" [ $rc -eq 0 ]
	"$SP" collapse --frame func --metric samples $mode.prof >$mode.folded
	"$SP" info $mode.prof >$mode.info
	say "$mode: inside $(samples $mode.folded BZ2_bzCompress), before $(samples $mode.folded deflate)," \
		"between and after $(samples $mode.folded lzma_code) samples"
done
check "without profile(): the work before the window is seen (>= 250 samples)" \
	[ "$(samples plain.folded deflate)" -ge 250 ]
check "without profile(): the work after it is seen (>= 400 samples)" \
	[ "$(samples plain.folded lzma_code)" -ge 400 ]
check "without profile(): info lists no window" bash -c "! grep -q '^windows:' plain.info"

check "in the windows: >= 600 of ~800 samples" [ "$(samples window.folded BZ2_bzCompress)" -ge 600 ]
check "the work before the first window does not appear" [ "$(samples window.folded deflate)" -eq 0 ]
check "the work between and after the windows does not appear" [ "$(samples window.folded lzma_code)" -eq 0 ]
grep '^windows:' window.info
check "info counts two windows" grep -q '^windows: *2 ' window.info
check "and samples outside them (the work before)" \
	has window.info '/^windows:/' '$7 - $5 >= 250'

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
	has paused.info '/^windows:/' '$5 >= 600 && $7 - $5 <= 3'

child=$(ls window.prof.* 2>/dev/null | head -1)
check "the forked child wrote its own profile" [ -n "$child" ]
if [ -n "$child" ]; then
	"$SP" collapse --frame func --metric samples "$child" >child.folded
	"$SP" info "$child" >child.info
	grep '^windows:' child.info
	check "the child's profile has the window it was forked in" grep -q '^windows: *1 ' child.info
	check "and shows the child's work in it (>= 200 of ~300 samples)" \
		[ "$(samples child.folded BZ2_bzCompress)" -ge 200 ]
fi
finish
