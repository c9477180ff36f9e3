#!/bin/bash
# What a new user's trial of the CLI found, each checked on the committed
# fixtures (tests/export/fixtures):
#   the docs and --help show the text each command prints: folded stacks
#   write a frame's spaces as '_' (file(line):_func, [no_operator]), the
#   tables, top and the SVG keep them ([no operator]);
#   top takes --per-thread as the other views do, with a row per thread and
#   function; diff takes top's --name;
#   a profile cut off at its last flush is read as whole up to there (exit
#   0): one note says how many samples were read, info's status line where
#   the file ends; one cut before its first flush says nothing could be read.
. "$(dirname "$0")/lib.sh"
FIX="$SP_SOURCE_DIR/tests/export/fixtures"
OPS="$FIX/ops-base.prof"
P="$FIX/base.prof"
N="$FIX/new.prof"

# --- [no operator]: each command's --help names it as that command prints it
"$SP" collapse --ops "$OPS" >ops.folded 2>/dev/null
none=$(grep -o '^\[no.operator\]' ops.folded | head -1)
check "collapse --ops: samples in no operator are [no_operator]" [ "$none" = "[no_operator]" ]
check "collapse --help names it as collapse prints it" \
	bash -c "'$SP' collapse --help | grep -qF -- \"'$none'\""
for cmd in table top; do
	"$SP" $cmd --aggregate-by op "$OPS" >$cmd.ops 2>/dev/null
	none=$(grep -o '\[no.operator\]' $cmd.ops | head -1)
	check "$cmd --aggregate-by op: the row is [no operator]" [ "$none" = "[no operator]" ]
	check "$cmd --help names it as $cmd prints it" \
		bash -c "'$SP' $cmd --help | grep -qF -- \"'$none'\""
done
"$SP" flamegraph --ops "$OPS" -o ops.svg 2>/dev/null
check "flamegraph --ops: the SVG shows [no operator]" grep -qF '>[no operator]<' ops.svg
check "flamegraph --help names it so" bash -c "'$SP' flamegraph --help | grep -qF \"'[no operator]'\""

# --- README's --frame pytorch example is a frame as collapse prints it
example=$(sed -n 's/^build\/stackprof collapse --frame pytorch .*: \([^ ]*\)$/\1/p' \
	"$SP_SOURCE_DIR/README.md")
say "README's --frame pytorch frame: $example"
shape='^[^ ;]+\([0-9]+\):_[^ ;]+$' # file(line):_qualname, the space made '_'
"$SP" collapse --frame pytorch "$FIX/py-base.prof" 2>/dev/null | sed 's/ [0-9]*$//' |
	tr ';' '\n' >py.frames
check "collapse --frame pytorch prints Python frames as file(line):_qualname" \
	grep -qE "$shape" py.frames
check "README's example has that shape" grep -qE "$shape" <<<"$example"

# --- --per-thread: every view that reads stacks takes it
for cmd in collapse flamegraph top "export --format speedscope"; do
	"$SP" $cmd --per-thread "$P" >/dev/null 2>err
	check "$cmd --per-thread: exit 0" [ $? -eq 0 ]
done
"$SP" diff --per-thread "$P" "$N" >/dev/null 2>err
check "diff --per-thread: exit 0" [ $? -eq 0 ]

# top --per-thread: a row per (thread, function), a Thread column; the
# threads' rows of a function add up to its row without --per-thread
"$SP" top --row-limit 0 "$P" >all.top 2>/dev/null
"$SP" top --row-limit 0 --per-thread "$P" >thr.top 2>/dev/null
check "top --per-thread: a Thread column before Name" \
	grep -qE '^ +Self +Self % +Total +Total % +Samples  Thread +Name$' thr.top
check "top --per-thread: gemm_kernel is a row in each of its two threads" \
	bash -c "[ \$(grep -c 'gemm_kernel<float, 8>' thr.top) -eq 2 ] &&
		grep -q '  worker pool-1001  gemm_kernel<' thr.top && grep -q '  resnet18-1000 *gemm_kernel<' thr.top"
check "top --per-thread: the thread roots are no rows" \
	bash -c "! grep -qE '  (resnet18-1000|worker pool-1001|1002)\$' thr.top"
# samples per name (column 5; names from the heading's Name column on)
sum_samples() {
	awk 'NR == 2 { start = index($0, "Name") }
		NR > 2 { n[substr($0, start)] += $5 } END { for (k in n) print k "|" n[k] }' "$1" | sort
}
sum_samples all.top >all.sum
sum_samples thr.top >thr.sum
check "top --per-thread: each function's samples over its threads add up to its row" \
	bash -c "[ -s all.sum ] && cmp -s all.sum thr.sum"
"$SP" top --per-thread --thread 'worker pool' "$P" >one.top 2>/dev/null
check "top --per-thread --thread: only that thread's rows" \
	bash -c "awk 'NR > 2' one.top | grep -q . && ! awk 'NR > 2' one.top | grep -v '  worker pool-1001  '"

# --- diff --name: top's filter, on the compared rows and the closing counts
"$SP" diff "$P" "$N" >d.all 2>/dev/null
"$SP" diff --name '^(gemm|relu)' "$P" "$N" >d.name 2>/dev/null
check "diff --name: exit 0" [ $? -eq 0 ]
check "diff --name: the heading says which names" grep -q "; names matching '^(gemm|relu)' only\$" d.name
check "diff --name: the rows are diff's rows whose names match" \
	bash -c "cmp -s <(awk -F'  +' '\$NF ~ /^(gemm|relu)/' d.all) <(awk -F'  +' 'NR > 5 && NF > 7' d.name)"
check "diff --name: the summary counts those rows" grep -qx 'added 0, removed 1, increased 1, decreased 0, unchanged 0' d.name
"$SP" diff --collapsed --name gemm "$P" "$N" >/dev/null 2>err
check "diff --collapsed --name: a usage error" bash -c "[ $? -eq 2 ] && grep -q -- '--name selects rows' err"

# --- a cut-off profile: whole up to its last flush, where it ends, what was read
# the ends of base.prof's flushes: zlib's sync flush marker, 00 00 ff ff
flushes=$(perl -0777 -ne 'while (/\x00\x00\xff\xff/g) { print pos(), "\n" }' "$P")
f1=$(echo "$flushes" | head -1)
f2=$(echo "$flushes" | sed -n 2p)
say "base.prof: $(stat -c %s "$P") bytes, flushes end at: $(echo $flushes)"
samples1=$(head -c "$f1" "$P" >f1.prof && "$SP" info --no-symbols f1.prof 2>/dev/null |
	awk '$1 == "samples:" { print $2 }')
# cut_check NAME BYTES WHERE: top on the first BYTES of base.prof reads it
# as whole up to its last flush: exit 0, rows, one note with the samples
# read; info's status line says where the file ends (WHERE, a regex)
cut_check() {
	local name=$1 n=$2 where=$3
	head -c "$n" "$P" >$name.prof
	"$SP" top $name.prof >$name.out 2>$name.err
	local rc=$?
	grep -v 'libfixture.so' $name.err >$name.warn
	check "$name ($n bytes): top exits 0, rows printed" bash -c "[ $rc -eq 0 ] && [ \$(wc -l <$name.out) -gt 2 ]"
	check "$name: one line on stderr" [ "$(wc -l <$name.warn)" -eq 1 ]
	check "$name: a note that it ends at its last flush, with the samples read ($samples1)" \
		grep -qxF "stackprof: note: $name.prof ends at its last flush (the process was killed or ended without finishing the profile): $samples1 samples read, the last moments are missing" $name.warn
	"$SP" info --no-symbols $name.prof >$name.info 2>/dev/null
	check "$name: info exits 0, its status line says where the file ends: $where" \
		bash -c "[ $? -eq 0 ] && grep -qE '^status: *cut off at its last flush: the file ends at byte $n$where; $samples1 samples read, up to its last flush\$' $name.info"
}
cut_check at-flush "$f1" ", right after a flush"
cut_check in-flush $((f1 + 1)) ", in the middle of a flush"
mid=$(((f1 + f2) / 2))
cut_check mid $mid "(, in a record after its last flush|, in the middle of a flush)"
# cut inside the header: an error, and nothing is said to be kept
head -c 30 "$P" >head.prof
"$SP" info head.prof >head.out 2>head.err
rc=$?
check "a profile cut in its header: exit 1, nothing printed" bash -c "[ $rc -eq 1 ] && [ ! -s head.out ]"
check "it says where the file ends and that nothing could be read" \
	grep -qE "^stackprof: head.prof: cut off before its first flush .*: the file ends at byte 30, before its first flush; nothing could be read: its header is not complete\$" head.err
check "no 'of 30 bytes', nothing said to be kept" bash -c "! grep -qE ' of 30 bytes|kept' head.err"
finish
