#!/bin/bash
# Issue 16 point 9 with the real pprof reader: a profile of
# workloads/python/split.py under Debian's python3, exported to pprof and
# read back by `go tool pprof` (golang-go), gives the same stacks as
# `collapse --frame func`, Python frames included and in their place, and
# Python lines in -lines. The export once wrote a whole location where the
# stack held part of it (Python frames between the eval loop's frame and
# the call machinery inlined into it), which dropped <module>; and pprof's
# C++ name heuristic turned a system name "<module>" into "".
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no /usr/bin/python3"
command -v go >/dev/null 2>&1 || skip "go is not installed (Debian's golang-go has go tool pprof)"
export HOME="$TMP" GOCACHE="$TMP/gocache" GOPATH="$TMP/gopath"

"$SP" run -o split.prof -- "$PY" "$SP_SOURCE_DIR/workloads/python/split.py" 1 >/dev/null 2>run.err ||
	{
		cat run.err
		fail "stackprof run"
		finish
	}
"$SP" export --format pprof split.prof -o split.pb.gz 2>/dev/null || fail "export pprof"
"$SP" collapse --frame func split.prof >split.func 2>/dev/null || fail "collapse"
go tool pprof -traces split.pb.gz >traces.txt 2>go.err || {
	cat go.err
	fail "go tool pprof -traces reads the export"
}
go tool pprof -top -lines -nodecount=1000 split.pb.gz >lines.txt 2>>go.err ||
	fail "go tool pprof -lines reads the export"

# -traces: one block per sample group, leaf first, after the label lines;
# "(inline)" marks inlined frames. Folded root first, as collapse writes.
awk '
/^-----------\+/ { if (n) emit(); n = 0; next }
/^ *(thread|thread_id|range): / { next }
/^(File|Build ID|Type|Time|Duration|Showing):|^ *Duration|^\// { next }
{
	line = $0
	sub(/^ +/, "", line)
	# the first frame of a block follows the sample value
	if (n == 0) sub(/^[0-9.]+[mun]?s +/, "", line)
	sub(/ \(inline\)$/, "", line)
	if (line != "") f[n++] = line
}
function emit(   s, i) {
	s = f[n - 1]
	for (i = n - 2; i >= 0; i--) s = s ";" f[i]
	print s
}
END { if (n) emit() }' traces.txt | sort -u >pprof.stacks
# collapse escapes spaces; the pprof names keep them
sed 's/ [0-9]*$//' split.func | sort -u >collapse.stacks
sed 's/ /_/g' pprof.stacks | sort -u >pprof.escaped
n_py=$(grep -c 'Meter.run' collapse.stacks)
check "collapse has Python stacks ($n_py with Meter.run)" [ "$n_py" -ge 3 ]
check "go tool pprof -traces gives collapse's stacks, Python frames included" \
	cmp -s pprof.escaped collapse.stacks
if ! cmp -s pprof.escaped collapse.stacks; then
	say "only in pprof:"
	comm -23 pprof.escaped collapse.stacks | head -3 | cut -c1-400
	say "only in collapse:"
	comm -13 pprof.escaped collapse.stacks | head -3 | cut -c1-400
fi
check "<module> keeps its name in pprof" grep -q '<module>' pprof.stacks
check "-lines: spin has a split.py line" has lines.txt '/ spin .*split\.py:[0-9]+$/'
check "-lines: Meter.run has a split.py line" has lines.txt '/ Meter\.run .*split\.py:[0-9]+$/'
finish
