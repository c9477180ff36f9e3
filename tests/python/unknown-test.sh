#!/bin/bash
# unknown-test.sh BUILD_DIR: interpreters whose frames stackprof must not
# read (issue 16, point 3) get native stacks exactly as without Python
# support, and one line in the run summary and in `info` saying why:
# - fakepy-* (tests/python/fakepy.c) export what a CPython exports, with a
#   version stackprof does not know (3.9, 3.14), a 3.11 runtime of another
#   size, a 3.13 without _Py_DebugOffsets, and a free-threaded 3.13;
# - a real CPython of another version (pyenv's 3.9, 3.8, 3.7 or 3.6), where
#   one is installed.
# Each keeps its output and exit status, and its stacks reach the thread
# root through its own function, with no Python frame.
. "$(dirname "$0")/../e2e/lib.sh"

# refused LABEL WHY-REGEX EXPECT-RC FUNCTION PROGRAM...: runs PROGRAM
# plainly and under stackprof and checks both as above
refused() {
	local label=$1 why=$2 want_rc=$3 fn=$4
	shift 4
	"$@" >plain.out 2>&1
	local plain_rc=$?
	"$SP" run -F 1000 -o u.prof -- "$@" >u.out 2>u.err
	local rc=$?
	check "$label: exit status $rc passes through (plain: $plain_rc, expected $want_rc)" \
		[ "$rc" = "$plain_rc" -a "$rc" = "$want_rc" ]
	check "$label: same output" cmp -s plain.out u.out
	grep -E 'Python|python' u.err | sed 's/^/  /'
	check "$label: the run summary says why, in one line" \
		grep -qE "^stackprof: Python [0-9.]+: frames not read: .*$why.*; native stacks only$" u.err
	"$SP" info u.prof >u.info
	check "$label: info says the same" \
		grep -qE "^python: +Python [0-9.]+: frames not read: .*$why.*; native stacks only$" u.info
	check "$label: no code objects named" grep -qE '; 0 code objects named$' u.info
	"$SP" collapse --frame func --metric samples u.prof >u.folded
	check "$label: its own function is sampled, from the thread's root" \
		grep -qE "^(_start|__libc_start_main|main|__libc_start_call_main)[^ ]*;([^;]*;)*$fn[; ]" u.folded
	check "$label: stacks reach a thread root" has u.info '/^thread root:/' '$3 + 0 >= 95'
}

for c in 39:"stackprof knows CPython 3.10 to 3.13" 314:"stackprof knows CPython 3.10 to 3.13" \
	311:"its runtime is 4096 bytes, not the [0-9]+ of the layout stackprof knows" \
	313:"its _Py_DebugOffsets are missing" \
	313t:"a free-threaded build, whose frames stackprof does not read"; do
	name=${c%%:*}
	refused "fakepy-$name" "${c#*:}" 3 fake_work "$BUILD/tests/fakepy-$name"
done

# a real interpreter of a version stackprof does not read
real=
for v in 3.9 3.8 3.7 3.6; do
	d=$(ls -d "$(pyenv root 2>/dev/null)/versions/$v."* 2>/dev/null | sort -V | tail -1)
	if [ -n "$d" ] && [ -x "$d/bin/python3" ]; then
		real=$d/bin/python3
		break
	fi
done
if [ -n "$real" ]; then
	refused "CPython $("$real" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
		"stackprof knows CPython 3.10 to 3.13" 0 _PyEval_EvalFrameDefault \
		"$real" -c 'import time
t = time.process_time()
while time.process_time() - t < 0.3:
    pass
print("done")'
else
	say "note: no pyenv CPython 3.6-3.9 here; only the fake interpreters were checked"
fi
finish
