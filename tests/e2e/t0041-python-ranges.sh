#!/bin/bash
# record_function in a sampled program: nested ranges are nested frames
# where they were opened (issue 17 point 5): a with block's range just
# inside the frame of the with statement, a decorator's just inside its
# wrapper, around the decorated call; the decorator form labels every
# call; a block or a decorated function that raises leaves no range behind
# on later samples; ranges belong to the thread that opened them. A stack
# that does not reach its root (cut at STACKPROF_MAX_DEPTH, or an unwind
# error) can't place its ranges: they go under its [truncated] or
# [unwind error] marker, never at the root.
. "$(dirname "$0")/lib.sh"
need_python
export PYTHONPATH="$SP_PYTHONPATH:$SP_SOURCE_DIR/tests/e2e"

cat >ranges.py <<'EOF'
import threading

import splib
import stackprof


@stackprof.record_function("DECORATED")
def decorated():
    splib.work_bz2(0.3)


@stackprof.record_function("DECO_RAISES")
def deco_raises():
    splib.work_zlib(0.2)
    raise RuntimeError("deco")


def with_raises():
    with stackprof.record_function("WITH_RAISES"):
        splib.work_zlib(0.2)
        raise RuntimeError("with")


with stackprof.record_function("OUTER"):
    decorated()
    decorated()
for fn in (deco_raises, with_raises):
    try:
        fn()
    except RuntimeError:
        pass


def worker():
    with stackprof.record_function("WORKER"):
        splib.work_bz2(0.3)


t = threading.Thread(target=worker)
t.start()
splib.work_lzma(0.4)  # no range: neither the ones that raised nor the worker's
t.join()
print("ranges done")
EOF

"$SP" run --no-summary -F 1000 -o r.prof -- "$PY" ranges.py >r.txt 2>&1
rc=$?
cat r.txt
check "the program ran ($PY)" [ $rc -eq 0 ]
"$SP" collapse --frame func --metric samples r.prof >r.folded

# lines WORK RE: samples of stacks with the native function WORK, and of
# those the ones whose stack matches RE (! RE: does not match it)
lines() {
	local w=$1 neg=0
	shift
	[ "$1" = "!" ] && { neg=1; shift; }
	awk -v w=";$w;" -v p="$1" -v neg=$neg \
		'index($0, w) { n += $NF; if (($0 ~ p) != neg) m += $NF } END { print n + 0, m + 0 }' r.folded
}
W='[^;]*wrapper'
read -r bz bz_ok < <(lines BZ2_bzCompress \
	"^_start;.*;<module>;OUTER;$W;DECORATED;decorated;work_bz2;|;Thread\.run;worker;WORKER;work_bz2;")
read -r de de_ok < <(lines deflate \
	"^_start;.*;<module>;($W;DECO_RAISES;deco_raises|with_raises;WITH_RAISES);work_zlib;")
read -r lz lz_ok < <(lines lzma_code ! '(OUTER|DECORATED|WORKER|DECO_RAISES|WITH_RAISES);')
say "bz2: $bz samples, $bz_ok under OUTER;DECORATED or WORKER"
say "zlib: $de samples, $de_ok under DECO_RAISES or WITH_RAISES"
say "lzma: $lz samples, $lz_ok under no range"
check "the bz2 work was sampled (>= 200 samples)" [ "$bz" -ge 200 ]
check "nested and decorated: >= 95% of it under OUTER;DECORATED or WORKER" \
	awk -v a="$bz_ok" -v b="$bz" 'BEGIN { exit !(a >= 0.95 * b) }'
check "both decorated calls: OUTER;...wrapper;DECORATED;decorated holds >= 300 samples" \
	[ "$(awk '/;<module>;OUTER;[^;]*wrapper;DECORATED;decorated;.*;BZ2_bzCompress;/ { n += $NF } END { print n + 0 }' r.folded)" -ge 300 ]
check "the worker thread's range: worker;WORKER holds >= 150 samples" \
	[ "$(awk '/;worker;WORKER;.*;BZ2_bzCompress;/ { n += $NF } END { print n + 0 }' r.folded)" -ge 150 ]
check "no range at the root of a stack" bash -c "! grep -qE '^(OUTER|DECORATED|WORKER|DECO_RAISES|WITH_RAISES);' r.folded"
check "the zlib work was sampled (>= 200 samples)" [ "$de" -ge 200 ]
check "inside blocks that raised: >= 95% of it under their range" \
	awk -v a="$de_ok" -v b="$de" 'BEGIN { exit !(a >= 0.95 * b) }'
check "the lzma work was sampled (>= 200 samples)" [ "$lz" -ge 200 ]
check "after them, >= 99% of it under no range at all (<module>;work_lzma)" \
	awk -v a="$lz_ok" -v b="$lz" 'BEGIN { exit !(a >= 0.99 * b) }'
check "no range ever nests under a range that raised" \
	bash -c "! grep -qE '(DECO_RAISES|WITH_RAISES);(OUTER|DECORATED|WORKER|DECO_RAISES|WITH_RAISES);' r.folded"

# every stack cut at 8 frames: its ranges follow the [truncated] root
STACKPROF_MAX_DEPTH=8 "$SP" run --no-summary -F 1000 -o t.prof -- "$PY" ranges.py >t.txt 2>&1
check "the program ran with stacks cut at 8 frames" [ $? -eq 0 ]
"$SP" collapse --frame func --metric samples t.prof >t.folded
check "cut stacks: ranges under the [truncated] root (>= 200 samples), none at the root" \
	awk '/^\[truncated\];(OUTER|WORKER|DECO_RAISES|WITH_RAISES);/ { n += $NF }
		/^(OUTER|DECORATED|WORKER|DECO_RAISES|WITH_RAISES);/ { bad++ }
		END { exit !(n >= 200 && !bad) }' t.folded
finish
