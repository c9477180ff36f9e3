# bench/pysplit-tv.awk - how far a profile of workloads/python/split.py is
# from the split it measured itself: the total variation distance between
# the per-function shares, in percentage points. Used by
# tests/python/split-test.sh and bench/python-cost.sh.
#
#   awk -f bench/pysplit-tv.awk TRUTH FOLDED
#
# TRUTH is split.py's output: "truth func NAME SHARE" lines and "callee
# FRAME NAME" lines. FOLDED is `stackprof collapse --frame func` (any
# metric). A stack belongs to NAME when FRAME is the frame right under
# Meter.run (run on 3.10, which has no qualnames) in it; stacks with no
# such frame (start-up, the timing around the calls) are not counted.
# Prints one line per function,
#   "  NAME  truth 12.3%  profile 12.1%"
# and last "TV 0.84" (half the sum of |profile share - truth share|, times
# 100, to 0.01).
FNR == NR {
	if ($1 == "truth" && $2 == "func") { truth[$3] = $4; order[++k] = $3 }
	if ($1 == "callee") map[$2] = $3
	next
}
{
	v = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";")
	for (i = 1; i < n; i++)
		if ((f[i] == "Meter.run" || f[i] == "run") && (f[i + 1] in map)) {
			got[map[f[i + 1]]] += v; tot += v; break
		}
}
END {
	for (i = 1; i <= k; i++) {
		p = tot ? got[order[i]] / tot : 0; d = p - truth[order[i]]
		tv += d < 0 ? -d : d
		printf "  %-12s truth %5.1f%%  profile %5.1f%%\n", order[i], 100 * truth[order[i]], 100 * p
	}
	printf "TV %.2f\n", 50 * tv
}
