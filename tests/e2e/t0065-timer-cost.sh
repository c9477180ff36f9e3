#!/bin/bash
# Which timer ran, why, and what its interrupts cost on this host (issue
# 26, point 2). `stackprof run` measures perf-sigtrap's interrupt once per
# host (CPU model and kernel) with an empty handler and keeps the figure
# in the cache (host-timer); the library records it, and `info` and the
# summary say it.
#   - a first run measures and keeps one line for this host; a second run
#     reuses it (the file unchanged);
#   - info: "timer why: auto's first pick", the interrupts' cost, and
#     their share; the summary's timer line says why;
#   - --timer posix: "asked for", and no interrupt figure (it is
#     perf-sigtrap's);
#   - an unknown STACKPROF_TIMER is said and taken as auto;
#   - the warning: a figure that makes sampling cost more than 2% (set by
#     STACKPROF_TIMER_IRQ_NS, which `run` passes on) gives the choices; a
#     small one gives none.
. "$(dirname "$0")/lib.sh"
unset STACKPROF_TIMER_IRQ_NS

probe=$(STACKPROF_TIMER_IRQ_NS=0 "$SP" run --no-summary -o probe.prof -- "$BIN/chain" 1 2>&1 >/dev/null; "$SP" info probe.prof)
echo "$probe" | grep -q '^timer: *perf-sigtrap' ||
	skip "the default timer here is not perf-sigtrap (perf_event_paranoid or seccomp): no interrupt to measure"
rm -rf "$STACKPROF_CACHE_DIR"

"$SP" run -o a.prof -- "$BIN/chain" 1 >/dev/null 2>a.err
check "a first run measured the host and kept one line for it" \
	bash -c "[ \$(wc -l <'$STACKPROF_CACHE_DIR/host-timer') -eq 1 ]"
cat "$STACKPROF_CACHE_DIR/host-timer"
ns=$(awk -F'\t' '{ print $2 }' "$STACKPROF_CACHE_DIR/host-timer")
# a bare machine's interrupt may be too small to see (0); a guest's is not
check "... a figure in ns, at most 1000 us ($ns)" \
	awk -v n="${ns:--1}" 'BEGIN { exit !(n ~ /^[0-9]+$/ && n <= 1000000) }'
cp "$STACKPROF_CACHE_DIR/host-timer" kept
"$SP" run --no-summary -o b.prof -- "$BIN/chain" 1 >/dev/null 2>&1
check "a second run reused it: the file is as it was" cmp -s kept "$STACKPROF_CACHE_DIR/host-timer"

"$SP" info a.prof >a.info
sed -n '/^timer/,/^samples/p' a.info
check "info: why the timer ran" grep -q "^timer why: *auto's first pick" a.info
us=$(awk -v n="$ns" 'BEGIN { printf "%.1f", n / 1000 }')
check "info: its interrupts' cost on this host ($us us)" \
	grep -qE "^interrupts: +$us us each on this host .*: [0-9.]+% of the sampled CPU" a.info
check "info: own CPU has the interrupts' estimate beside it" \
	grep -qE '^ +and the timer.s interrupts: ~[0-9.]+ ?[mu]?s more \([0-9]+ samples at this host.s measured price\)' a.info
check "the summary's timer line says why" \
	grep -q "timer perf-sigtrap (fixed period, auto's first pick) at" a.err

"$SP" run --no-summary --timer posix -o p.prof -- "$BIN/chain" 1 >/dev/null 2>&1
"$SP" info p.prof >p.info
check "--timer posix: asked for" grep -q '^timer why: *asked for (STACKPROF_TIMER=posix)' p.info
check "... and no interrupt figure (the one measured is perf-sigtrap's)" \
	bash -c "! grep -q '^interrupts:' p.info"
STACKPROF_TIMER_IRQ_NS=0 "$SP" run --no-summary -o n.prof -- "$BIN/chain" 1 >/dev/null 2>&1
check "perf-sigtrap with no figure: info says it was not measured" \
	bash -c "'$SP' info n.prof | grep -q '^interrupts: *not measured'"

STACKPROF_TIMER=bogus "$SP" run --no-summary -o u.prof -- "$BIN/chain" 1 >/dev/null 2>u.err
check "an unknown STACKPROF_TIMER is said, with the words it takes" \
	grep -q 'STACKPROF_TIMER=bogus ignored: expected auto or one of .*posix.*trap' u.err
check "... and taken as auto" bash -c "'$SP' info u.prof | grep -q \"^timer why: *auto's first pick\""

# 100 us an interrupt at 1 kHz: 10% and more; the warning gives the choices
STACKPROF_TIMER_IRQ_NS=100000 "$SP" run -F 1000 -o w.prof -- "$BIN/chain" 1 >/dev/null 2>w.err
grep warning w.err
check "a costly timer: the summary says what a sample cost and the choices" \
	grep -qE 'warning: each sample cost the program ~1[0-9][0-9] us of CPU here .*-F [0-9]+ \(~1%\), or --timer posix' w.err
STACKPROF_TIMER_IRQ_NS=1000 "$SP" run -F 100 -o c.prof -- "$BIN/chain" 1 >/dev/null 2>c.err
check "a cheap one: no warning" bash -c "! grep -q 'warning: each sample cost' c.err"

# --no-cache keeps nothing: measured, not written
rm -rf "$STACKPROF_CACHE_DIR"
"$SP" run --no-summary --no-cache -o nc.prof -- "$BIN/chain" 1 >/dev/null 2>&1
check "--no-cache: measured but not kept" bash -c "[ ! -e '$STACKPROF_CACHE_DIR/host-timer' ] &&
	'$SP' info nc.prof | grep -q '^interrupts: *[0-9.]* us each'"
# cache clear takes the figure away: the next run measures again
"$SP" run --no-summary -o k.prof -- "$BIN/chain" 1 >/dev/null 2>&1
"$SP" cache clear >clear.txt
check "cache clear removes the host's figure too" \
	bash -c "grep -q 'timer figure' clear.txt && [ ! -e '$STACKPROF_CACHE_DIR/host-timer' ]"
finish
