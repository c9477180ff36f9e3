#!/bin/bash
# What a new user's trial of the CLI found, each checked on the committed
# fixtures (tests/export/fixtures):
#   the docs and --help show the text each command prints: folded stacks
#   write a frame's spaces as '_' (file(line):_func, [no_operator]), the
#   tables, top and the SVG keep them ([no operator]).
. "$(dirname "$0")/lib.sh"
FIX="$SP_SOURCE_DIR/tests/export/fixtures"
OPS="$FIX/ops-base.prof"

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
finish
