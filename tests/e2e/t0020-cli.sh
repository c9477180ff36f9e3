#!/bin/bash
# One CLI style (issue 14 item 4): every command reads its options with the
# same parser, so an unknown option reads the same everywhere and a usage
# error is the error plus one line pointing to --help; `stackprof help CMD`
# is `CMD --help`; top, table and diff spell the row limit and the sort key
# the same way (PyTorch's --row-limit and --sort-by, the old spellings kept
# as aliases); stdout is "stdout" in every message; run stops at its command.
. "$(dirname "$0")/lib.sh"
FIX="$SP_SOURCE_DIR/tests/export/fixtures"
P="$FIX/base.prof"
N="$FIX/new.prof"
commands="run info collapse table top diff flamegraph export symbolize cache"

for cmd in $commands; do
	"$SP" $cmd --no-such-option "$P" >out 2>err
	rc=$?
	check "$cmd --no-such-option: exit 2" [ $rc -eq 2 ]
	check "$cmd --no-such-option: names the option" \
		grep -q "^stackprof: $cmd: unknown option '--no-such-option'\$" err
	check "$cmd --no-such-option: two lines, the second pointing to --help" \
		[ "$(wc -l <err)" -eq 2 -a "$(sed -n 2p err)" = "Try 'stackprof $cmd --help' for more information." ]
	"$SP" help $cmd >help.out 2>&1
	check "stackprof help $cmd: exit 0" [ $? -eq 0 ]
	"$SP" $cmd --help >dash.out 2>&1
	check "stackprof help $cmd is $cmd --help" cmp -s help.out dash.out
	check "$cmd --help has a usage line and examples" \
		bash -c "grep -q '^usage: stackprof $cmd ' help.out && grep -q '^examples:' help.out"
	"$SP" $cmd -h >h.out 2>&1
	check "$cmd -h is $cmd --help" cmp -s help.out h.out
done
"$SP" help no-such-command >out 2>err
check "help of an unknown command: exit 2" [ $? -eq 2 ]

# a value error is a usage error too: one line and the pointer
"$SP" table --row-limit many "$P" >out 2>err
check "a bad value: exit 2" [ $? -eq 2 ]
check "a bad value: two lines" [ "$(wc -l <err)" -eq 2 ]
"$SP" top "$P" --row-limit >out 2>err
check "a missing value: exit 2, named" bash -c "[ $? -eq 2 ] && grep -q \"'--row-limit' needs a value\" err"

# the row limit and the sort key, spelled the same in top, table and diff
for cmd in top table diff; do
	ops="$P"
	[ $cmd = diff ] && ops="$P $N"
	"$SP" $cmd $ops --row-limit 3 >ref 2>/dev/null
	check "$cmd --row-limit 3 limits the rows" [ -s ref ]
	for spelling in "-l 3" "-l3" "-t 3" "--top 3" "--limit 3" "--row-limit=3"; do
		"$SP" $cmd $ops $spelling >alt 2>/dev/null
		check "$cmd $spelling is --row-limit 3" cmp -s ref alt
	done
	"$SP" $cmd $ops --row-limit -1 >all1 2>/dev/null
	"$SP" $cmd $ops --row-limit 0 >all0 2>/dev/null
	check "$cmd: --row-limit -1 (torch's spelling) is 0, every row" cmp -s all0 all1
	check "$cmd: --row-limit 3 prints fewer rows than 0" [ "$(wc -l <ref)" -lt "$(wc -l <all0)" ]
done
"$SP" top "$P" --sort-by total >ref 2>/dev/null
for spelling in "--order-by total" "--sort total" "-s total" "--sort-by cpu_time_total"; do
	"$SP" top "$P" $spelling >alt 2>/dev/null
	check "top $spelling is --sort-by total" cmp -s ref alt
done
"$SP" table "$P" --sort-by cpu_time_total >ref 2>/dev/null
for spelling in "--sort-by total" "--order-by cpu_time_total" "-s total"; do
	"$SP" table "$P" $spelling >alt 2>/dev/null
	check "table $spelling is --sort-by cpu_time_total" cmp -s ref alt
done
"$SP" diff "$P" "$N" --sort-by abs >ref 2>/dev/null
"$SP" diff "$P" "$N" --sort abs >alt 2>/dev/null
check "diff --sort abs is --sort-by abs" cmp -s ref alt
"$SP" top "$P" --sort-by self >self 2>/dev/null
check "top --sort-by total orders otherwise than self" bash -c '! cmp -s ref self'

# options after operands, --opt=value, bundles
"$SP" info "$P" -m >a 2>/dev/null
"$SP" info -m "$P" >b 2>/dev/null
check "info: options after the profile" cmp -s a b
"$SP" collapse --frame=func "$P" >a 2>/dev/null
"$SP" collapse --frame func "$P" >b 2>/dev/null
check "collapse --frame=func is --frame func" cmp -s a b

# one name for stdout
if [ -w /dev/full ]; then
	for cmd in info collapse top; do
		"$SP" $cmd "$P" >/dev/full 2>err
		check "$cmd >/dev/full: 'writing stdout'" grep -q '^stackprof: writing stdout: No space' err
	done
	"$SP" symbolize -e "$BIN/chain" 0x1000 >/dev/full 2>err
	check "symbolize >/dev/full: 'writing stdout'" grep -q '^stackprof: writing stdout: No space' err
fi

# run: the options end at the command; what follows is the command's
"$SP" run --no-summary -o r1.prof sh -c 'echo "$@" >args1' sh -o x --help >/dev/null 2>&1
check "run CMD -o x --help: CMD gets them" [ "$(cat args1 2>/dev/null)" = "-o x --help" ]
"$SP" run --no-summary -o r2.prof -- sh -c 'echo "$@" >args2' sh -F 5 >/dev/null 2>&1
check "run -- CMD -F 5: CMD gets them" [ "$(cat args2 2>/dev/null)" = "-F 5" ]
check "run -o before CMD is run's" [ -s r1.prof -a -s r2.prof ]
"$SP" run --freq=1000 --no-summary -o r3.prof -- true
check "run --freq=1000" grep -q '1000 Hz requested' <("$SP" info --no-symbols r3.prof)
"$SP" run --no-summary >out 2>err
check "run without a command: exit 2, two lines" \
	bash -c "[ $? -eq 2 ] && [ \$(wc -l <err) -eq 2 ] && grep -q 'no command given' err"
# every --aggregate-by key the error message names is accepted by top and
# diff, and named in their --help (line was accepted but named nowhere)
"$SP" top --aggregate-by no-such-key "$P" >/dev/null 2>agg.err
keys=$(sed -n "s/.*is not \(.*\)\$/\1/p" agg.err | sed 's/ or /, /; s/, /\n/g')
say "aggregate-by keys: $(echo $keys)"
check "the message names line" grep -qx line <<<"$keys"
for k in $keys; do
	check "top --aggregate-by $k works" "$SP" top --aggregate-by "$k" --row-limit 1 "$P"
	check "diff --aggregate-by $k works" "$SP" diff --aggregate-by "$k" "$P" "$N"
	for cmd in top diff; do
		check "$cmd --help names $k" bash -c "'$SP' $cmd --help | sed -n '/--aggregate-by/,/^ *--[a-z]/p' | grep -qw -- '$k'"
	done
done
# a wrapper that runs the real work in a child: the summary and the next
# steps are the busy child's, not the wrapper's empty profile
"$SP" run -o w.prof -- sh -c '"$0" 1 >/dev/null' "$BIN/chain" 2>wrap.err
check "through a wrapper: the summary says it is of the child's profile" \
	grep -q '^stackprof: the summary is of .*/w\.prof\.[0-9]*, the profile with the most samples' wrap.err
check "through a wrapper: the summary is chain's, with its work" grep -q 'leaf_spin' wrap.err
check "through a wrapper: next steps name the child's profile" \
	grep -q '^stackprof: next: stackprof flamegraph .*/w\.prof\.[0-9]* ' wrap.err
# a wrapper that execs the program (pyenv's shim does): PATH holds the
# program's profile, not the wrapper's empty one, and nothing is left beside it
"$SP" run -o e.prof -- sh -c 'exec "$0" 1 >/dev/null' "$BIN/chain" 2>exec.err
check "through an exec: PATH holds the exec'ed program's profile" \
	bash -c "'$SP' collapse --frame func e.prof | grep -q ';leaf_spin '"
check "through an exec: the summary says so" grep -q '^stackprof: .*/e\.prof holds the profile of the image the program exec' exec.err
check "through an exec: no other profile is left" bash -c '! ls e.prof.* >/dev/null 2>&1'
# short commands a wrapper runs take no samples: their profiles are removed
"$SP" run -o t.prof -- sh -c '/bin/true; /bin/true | cat; "$0" 1 >/dev/null' "$BIN/chain" 2>tidy.err
check "short commands' empty profiles are removed, and counted" \
	grep -Eq '^stackprof: [3-9] other processes or images took no samples; their profiles were removed' tidy.err
check "the busy child's profile stays" [ "$(ls t.prof.* 2>/dev/null | wc -l)" -eq 1 ]
# --no-summary says nothing, whichever profile a summary would have shown
"$SP" run --no-summary -o ns.prof -- sh -c '"$0" 0.3 >/dev/null' "$BIN/chain" 2>ns.err
check "--no-summary through a wrapper: nothing on stderr" [ ! -s ns.err ]
# a shim first on PATH that works a little itself, runs a short command, then
# execs the real interpreter (pyenv's shim through /usr/bin/env takes a
# sample or two): PATH holds the interpreter's profile, the shim keeps its
# own samples under another name, with and without --no-summary
need_python
mkdir shimbin
cat >shimbin/python3 <<EOF
#!/bin/sh
i=0
while [ \$i -lt 30000 ]; do i=\$((i + 1)); done
/bin/true
exec "$PY" "\$@"
EOF
chmod +x shimbin/python3
cat >busy.py <<'EOF'
import time
t0 = time.thread_time()
while time.thread_time() - t0 < 0.4:
    sum(range(1000))
EOF
for opt in --summary --no-summary; do
	[ "$opt" = --summary ] && opt=""
	label=${opt:-with a summary}
	PATH="$PWD/shimbin:$PATH" "$SP" run $opt -F 1000 -o shim$opt.prof -- python3 busy.py 2>shim$opt.err
	check "shim, $label: the run succeeds" [ $? -eq 0 ]
	"$SP" top --row-limit 3 shim$opt.prof >shim$opt.top 2>&1
	check "shim, $label: PATH holds the interpreter's profile (<module> on top)" \
		has shim$opt.top '/ <module>$/' '$2 + 0 > 50'
	others=$(ls shim$opt.prof.* 2>/dev/null)
	check "shim, $label: the shim's own samples are kept beside it, and nothing else" \
		[ "$(echo "$others" | grep -c .)" -eq 1 ]
	"$SP" info --no-symbols "$others" >shim$opt.info 2>&1
	check "shim, $label: ... and they are the shell's" grep -q '^command: */bin/sh' shim$opt.info
done
check "shim: the summary says which image PATH holds, and where the shim's went" \
	grep -q '^stackprof: .*/shim\.prof holds the profile of the image the program exec.* is .*/shim\.prof\.[0-9]' shim.err
check "shim --no-summary: nothing on stderr" [ ! -s shim--no-summary.err ]
# STACKPROF_OVERWRITE=1: the exec'ed image takes PATH itself, and the
# manifest names it twice; the tidy must not remove it as an empty other
STACKPROF_OVERWRITE=1 "$SP" run -o ov.prof -- sh -c 'exec /bin/true' 2>ov.err
check "STACKPROF_OVERWRITE=1 and an exec: PATH is still there, and reads" \
	"$SP" info --no-symbols ov.prof
# nothing sampled: the summary says why, and suggests no flame graph of it
"$SP" run --paused -o paused.prof -- "$BIN/chain" 1 >/dev/null 2>paused.err
check "--paused, never started: the summary says why there are no samples" \
	grep -q '^stackprof: no samples: sampling started paused' paused.err
check "--paused, never started: no 'next:' steps, no unwound share of nothing" \
	bash -c "! grep -qE 'next:|unwound to a thread root' paused.err"
finish
