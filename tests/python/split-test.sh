#!/bin/bash
# split-test.sh BUILD_DIR VERSION: Python frames on one interpreter
# (issue 16): VERSION is 3.10, 3.11, 3.12 or 3.13 (pyenv's build, with a
# shared libpython) or "debian" (/usr/bin/python3, the interpreter linked
# into the executable). workloads/python/split.py measures its own CPU
# split; profiled at 1 kHz:
# - each function's share is within 2 points of total variation of the
#   truth (the functions are reached through two call paths, a 120-deep
#   recursion, a generator, a method, a lambda compiled anew on every call,
#   hashlib, and a second thread);
# - the 120-deep recursion is whole, down to the thread's root;
# - the C extension's native frames sit below the Python frame that called it;
# - the lambdas, whose code objects die after each call, keep their name
#   and file; unreadable frames stay under 0.5% of samples;
# - both threads carry Python frames, and the second is named by its
#   threading name (py-worker) in --per-thread views and in info;
# - top --aggregate-by python counts as py-spy does: each function's total
#   within 2 points of its truth, and hash_work's self time holds the
#   hashlib code it called.
. "$(dirname "$0")/../e2e/lib.sh"
VERSION=${2:?usage: $0 BUILD_DIR VERSION}
pick_python "$VERSION"
SPLIT=$SP_SOURCE_DIR/workloads/python/split.py

"$SP" run --no-summary -F 1000 -o s.prof -- "$PY" "$SPLIT" 3 >s.truth
check "split.py exits 0 under stackprof" [ $? -eq 0 ]
"$SP" info s.prof >s.info
grep -E '^(timer|samples|python):' s.info
check "info says Python frames were read" has s.info '/^python:/' '/frames read/'
"$SP" collapse --frame func --metric us s.prof >s.us
"$SP" collapse --metric samples s.prof >s.lines

# a sample belongs to the function Meter.run called (split.py's "callee" lines)
awk -f "$SP_SOURCE_DIR/bench/pysplit-tv.awk" s.truth s.us >s.shares
cat s.shares
tv=$(awk '$1 == "TV" { print $2 }' s.shares)
check "each function within 2 points of total variation of the truth (TV $tv)" \
	awk -v t="$tv" 'BEGIN { exit !(t != "" && t <= 2) }'

check "the 120-deep recursion is whole, from the thread's root to deep_leaf" \
	awk '{ n = split($0, f, ";"); run = 0; best = 0
		for (i = 1; i <= n; i++) { if (f[i] == "recurse") { if (++run > best) best = run } else run = 0 }
		if (best >= 120 && f[1] ~ /^(_start|__libc_start|main)/ && $0 ~ /;deep_leaf[; ]/) { ok = 1; exit } }
		END { exit !ok }' s.us
check "hashlib's native frames sit below hash_work" \
	grep -qE ';hash_work_\([^)]*split\.py:[0-9]+\);[^ ]*(_hashlib|_hashopenssl|EVP_|SHA256|sha256)' s.lines
# the frame right below regex_work, in each of its samples: _sre's own
awk '{ if (!match($0, /;regex_work;[^; ]+/)) next
	f = substr($0, RSTART + 12, RLENGTH - 12); n += $NF; if (f ~ /sre|SRE/) s += $NF }
	END { printf "%d %d\n", s, n }' s.us >s.sre
read sre_us regex_us <s.sre
say "regex_work: $sre_us of $regex_us us have an _sre frame below the line"
check "the re module's engine, built into the interpreter, sits below regex_work (>= 90%)" \
	[ "$regex_us" -gt 0 -a $((sre_us * 10)) -ge $((regex_us * 9)) ]
check "the lambdas compiled anew keep their name and file" grep -q ';<lambda>_(<fresh-lambda>:1)' s.lines
check "the generator and the method are frames of their own" \
	bash -c "grep -q ';drive_gen;gen_values' s.us && grep -qE ';(Worker\.)?step[; ]' s.us"
total=$(awk '{ s += $NF } END { print s }' s.lines)
bad=$(grep -E 'unreadable Python frame|Python code not recorded' s.lines | awk '{ s += $NF } END { print s + 0 }')
check "unreadable Python frames: $bad of $total samples (< 0.5%)" awk -v b="$bad" -v t="$total" 'BEGIN { exit !(t > 0 && b < 0.005 * t) }'
check "the second thread carries Python frames" grep -q ';thread_main;Meter.run;thread_work\|;thread_main;run;thread_work' s.us
# the eval loop's own frames: folded by default, kept on request
# (one CI run in many had one stack with an eval frame left under <module>,
# not reproduced in 22 runs since: a tolerance of 0.2% of the time, while
# without the fold it is 6.4% of the time on 3.12, more on 3.10)
plumb_us=$(grep -E ';<module>;([^;]+;)*_PyEval_EvalFrameDefault;' s.us | awk '{ s += $NF } END { print s + 0 }')
all_us=$(awk '{ s += $NF } END { print s + 0 }' s.us)
say "eval-loop frames between Python frames: $plumb_us of $all_us us"
check "no eval-loop frame between two Python frames by default (<= 0.2% of the time)" \
	awk -v p="$plumb_us" -v t="$all_us" 'BEGIN { exit !(t > 0 && p <= 0.002 * t) }'
"$SP" collapse --frame func --python-plumbing s.prof >s.plumb
check "--python-plumbing keeps them" grep -qE ';<module>;([^;]+;)*_PyEval_EvalFrameDefault;' s.plumb

# the thread's name from threading, not its comm (python3)
"$SP" collapse --per-thread --frame func s.prof >s.threads
check "the second thread's root is named py-worker in --per-thread views" \
	awk '$0 ~ /;thread_work[; ]/ { n++; if ($0 !~ /^py-worker-[0-9]+;/) bad++ } END { exit !(n > 0 && !bad) }' s.threads
check "info lists the thread as py-worker" grep -qE '^ +[0-9]+ +py-worker ' s.info
# top by Python function counts as py-spy does: each function's total is
# its share of the truth, and hash_work's own time holds hashlib's native
# code (in the function view that time is hashlib's)
"$SP" top --aggregate-by python --row-limit 0 s.prof >s.py
"$SP" top --row-limit 0 s.prof >s.fn
# a method is Worker.step, or step on 3.10 (no co_qualname there)
pct() { awk -v f="$2" -v c="$3" 'BEGIN { g = f; sub(/^[A-Za-z_]+\./, "", g) }
	$6 == f || $6 == g { x = $c; sub(/%$/, "", x); print x + 0; found = 1; exit }
	END { if (!found) print 0 }' "$1"; }
awk '$2 == "truth" { print $1, $3 }' s.shares | sed 's/%$//' >s.truthpct
while read -r fn truth; do
	got=$(pct s.py "$fn" 4)
	say "python view: $fn total $got%, truth $truth%"
	check "python view: $fn's total within 2 points of the truth" \
		awk -v a="$got" -v b="$truth" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 2) }'
done <s.truthpct
hs=$(pct s.py hash_work 2) ht=$(pct s.py hash_work 4) fs=$(pct s.fn hash_work 2)
say "hash_work: python view self $hs% of total $ht%; function view self $fs%"
check "python view: hash_work's self holds hashlib's native time (>= 90% of its total)" \
	awk -v s="$hs" -v t="$ht" 'BEGIN { exit !(t > 0 && s >= 0.9 * t) }'
check "function view: the same time is hashlib's, not hash_work's (self < half the python view's)" \
	awk -v f="$fs" -v s="$hs" 'BEGIN { exit !(f < 0.5 * s) }'
finish
