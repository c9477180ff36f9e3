#!/bin/bash
# Whole stacks: 150-deep recursion unwinds to main in full, with and without
# frame pointers; 700-deep recursion is kept truncated at the max depth and
# marked, not dropped.
. "$(dirname "$0")/lib.sh"

for prog in recurse recurse_nofp; do
	"$SP" run --no-summary -o $prog.prof -- "$BIN/$prog" 150 1 >/dev/null
	check "$prog exits 0" [ $? -eq 0 ]
	"$SP" collapse --frame func $prog.prof >$prog.folded
	# samples in recurse_bottom: count recurse frames on their stacks
	awk '/recurse_bottom/ { n = gsub(/;recurse;/, ";recurse;"); s = $0; c = 0;
		while (match(s, /(^|;)recurse(;|$)/)) { c++; s = substr(s, RSTART + RLENGTH - 1) }
		print c, ($0 ~ /^_start;__libc_start_main[^;]*;.*main;recurse/) ? "rooted" : "unrooted", $NF }' \
		$prog.folded >depths.txt
	total=$(awk '{ t += $3 } END { print t + 0 }' depths.txt)
	full=$(awk '$1 == 150 && $2 == "rooted" { t += $3 } END { print t + 0 }' depths.txt)
	say "$prog: $full of $total us in recurse_bottom have all 150 frames and reach _start"
	check "$prog: 150 frames to _start on >= 99% of the deep samples" \
		awk -v a="$full" -v b="$total" 'BEGIN { exit !(b > 0 && a >= 0.99 * b) }'
done

"$SP" run --no-summary -o deep.prof -- "$BIN/recurse" 700 0.5 >/dev/null
check "700-deep run exits 0" [ $? -eq 0 ]
"$SP" info deep.prof >info.txt
check "truncated stacks are counted" has info.txt '/^truncated:/' '$2 > 0'
"$SP" collapse --frame func deep.prof >deep.folded
check "truncated stacks are kept and marked" grep -qE '^\[truncated\];(recurse;)+recurse_bottom' deep.folded
# deep stacks at a high rate: each handler (about 30 us for 2000 frames)
# takes more than an eighth of the 100 us period; it throttles itself
# (counted: about two samples in three), and the skipped time is carried so
# the CPU total stays right
"$SP" run --no-summary -F 10000 --max-depth 4096 -o fast.prof -- "$BIN/recurse" 2000 1 >/dev/null
check "10 kHz, 2000 deep: exits 0" [ $? -eq 0 ]
"$SP" info --no-symbols fast.prof >fast.txt
grep -E '^(samples|throttled|handler)' fast.txt
check "the handler throttles itself (at least one sample in four skipped)" \
	awk '/^samples:/ { s = $2 } /^throttled:/ { t = $2 } END { exit !(t > 0 && t * 3 >= s) }' fast.txt
cpu=$(awk '/^samples:/ { v = $3; gsub(/[(]/, "", v); if (v ~ /ms$/) v = v / 1000; else sub(/s$/, "", v); print v; exit }' fast.txt)
check "the CPU total stays whole (0.8-1.6 s for a 1 s run)" \
	awk -v v="$cpu" 'BEGIN { exit !(v != "" && v >= 0.8 && v <= 1.6) }'
# a different deep stack in nearly every sample (100 to 2099 frames) into
# the smallest ring, which a few milliseconds of them fill: a ring half
# full pokes the writer, which drains it sooner than its pause (20 ms at
# this rate) would (without the poke: 4,300 drops to 500-600 samples kept)
STACKPROF_RING_KB=64 "$SP" run --no-summary -F 10000 --max-depth 4096 -o small.prof -- \
	"$BIN/stress" vary
"$SP" info --no-symbols small.prof >small.txt
grep -E '^(samples|drops)' small.txt
check "a 64 KiB ring at 10 kHz, new deep stacks: at most 10% of the samples dropped" \
	awk '/^samples:/ { s = $2 } /^drops:/ { d = $2 } END { exit !(s > 0 && d * 10 <= s) }' small.txt
finish
