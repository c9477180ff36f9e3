#!/bin/bash
# cli.sh STACKPROF SHAPES [SPLIT [ZDEBUG]] - `stackprof symbolize`: usage and error
# exits, messages, unknown addresses, streaming, and the exact
# eu-addr2line -f -i -C output on every function of the shapes program
# (inline chain, C++ name; DWARF 4 in compressed sections). SPLIT is the
# same program stripped, its DWARF in a file named by .gnu_debuglink: its
# answers must be the same; so must ZDEBUG's, the program with .zdebug
# (GNU-style compressed) sections, when it exists. Exit 0 pass, 1 fail.
set -u
sp=${1:?usage: cli.sh STACKPROF SHAPES [SPLIT]}
shapes=${2:?usage: cli.sh STACKPROF SHAPES [SPLIT]}
split=${3:-}
zdebug=${4:-}
fails=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS PATTERN -- ARGS...: exit status and a stderr pattern
expect() {
	local want=$1 pat=$2
	shift 3
	"$sp" symbolize "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
	local got=$?
	[ "$got" -eq "$want" ] || fail "symbolize $*: exit $got, want $want"
	[ -z "$pat" ] || grep -q -- "$pat" "$tmp/err" || fail "symbolize $*: stderr lacks '$pat': $(cat "$tmp/err")"
}

"$sp" symbolize --help > "$tmp/help" || fail "--help exit $?"
grep -q '^usage: stackprof symbolize' "$tmp/help" || fail "--help has no usage line"
grep -q 'examples:' "$tmp/help" || fail "--help has no examples"
expect 2 'give -e ELF' -- 0x10
expect 2 "unknown option '--bogus'" -- --bogus -e "$shapes" 0x10
expect 2 "option '-e' needs a value" -- -e
expect 1 'cannot open /nonexistent/x: No such file' -- -e /nonexistent/x 0x10
echo 'not elf' > "$tmp/text"
expect 1 'is not an ELF file' -- -e "$tmp/text" 0x10
expect 1 'cannot read' -- -e "$tmp" 0x10

# a bad address is reported and skipped; the others are still answered
"$sp" symbolize -e "$shapes" 0x10 xyz 0x10 > "$tmp/out" 2> "$tmp/err"
st=$?
[ "$st" -eq 1 ] || fail "bad address: exit $st, want 1"
grep -q "'xyz' is not a hex address" "$tmp/err" || fail "bad address message: $(cat "$tmp/err")"
printf '??\n??:0\n??\n??:0\n' | cmp -s - "$tmp/out" || fail "unknown address output: $(cat "$tmp/out")"
printf '0x10\nnope\n\n10\n' | "$sp" symbolize -e "$shapes" > "$tmp/out" 2> "$tmp/err"
st=$?
[ "$st" -eq 1 ] || fail "bad stdin line: exit $st, want 1"
[ "$(wc -l < "$tmp/out")" -eq 4 ] || fail "stdin: a bad line stopped the rest: $(cat "$tmp/out")"

# streaming: an answer comes back before the input ends
coproc SYM { "$sp" symbolize -e "$shapes"; }
sym_pid=$SYM_PID
echo 0x10 >&"${SYM[1]}"
if read -r -t 10 l1 <&"${SYM[0]}" && read -r -t 10 l2 <&"${SYM[0]}"; then
	[ "$l1 $l2" = "?? ??:0" ] || fail "streamed answer '$l1 $l2'"
else
	fail "no answer before end of input (output not flushed)"
fi
exec {SYM[1]}>&-
wait "$sym_pid" 2>/dev/null

# the same bytes as eu-addr2line on every function: entry, +1, +7
if command -v eu-addr2line > /dev/null && command -v nm > /dev/null; then
	nm --defined-only "$shapes" | awk '$2 ~ /^[tTwW]$/ { print $1 }' | sort -u |
		while read -r a; do
			printf '0x%x\n0x%x\n0x%x\n' $((16#$a)) $((16#$a + 1)) $((16#$a + 7))
		done > "$tmp/addrs"
	"$sp" symbolize -e "$shapes" < "$tmp/addrs" > "$tmp/ours" 2>/dev/null
	eu-addr2line -f -i -C -e "$shapes" < "$tmp/addrs" > "$tmp/eu" 2>/dev/null
	diff "$tmp/ours" "$tmp/eu" > "$tmp/diff" || fail "differs from eu-addr2line -f -i -C:
$(head -20 "$tmp/diff")"
	grep -q '^ns::foo(int)$' "$tmp/ours" || fail "no demangled ns::foo(int) in the output"
	grep -q '^sp_shape_helper inlined at .*shapes.c:[0-9]*:[0-9]* in sp_shape_leaf$' "$tmp/ours" ||
		fail "no inline line for sp_shape_helper"
	# as arguments too, and --no-inline is eu-addr2line without -i
	"$sp" symbolize -e "$shapes" $(cat "$tmp/addrs") | cmp -s - "$tmp/ours" ||
		fail "arguments and stdin differ"
	"$sp" symbolize -e "$shapes" --no-inline < "$tmp/addrs" > "$tmp/ours1"
	eu-addr2line -f -C -e "$shapes" < "$tmp/addrs" > "$tmp/eu1" 2>/dev/null
	cmp -s "$tmp/ours1" "$tmp/eu1" || fail "--no-inline differs from eu-addr2line -f -C"
	"$sp" symbolize -e "$shapes" -s < "$tmp/addrs" > "$tmp/ours1"
	eu-addr2line -f -i -C -s -e "$shapes" < "$tmp/addrs" > "$tmp/eu1" 2>/dev/null
	cmp -s "$tmp/ours1" "$tmp/eu1" || fail "--basenames differs from eu-addr2line -s"
	"$sp" symbolize -e "$shapes" --no-demangle < "$tmp/addrs" | grep -q '^_ZN2ns3fooEi$' ||
		fail "--no-demangle still demangles"
	if [ -n "$split" ]; then
		"$sp" symbolize -e "$split" < "$tmp/addrs" > "$tmp/split" 2> "$tmp/err"
		cmp -s "$tmp/split" "$tmp/ours" || fail "debug info through .gnu_debuglink differs:
$(diff "$tmp/split" "$tmp/ours" | head -10)"
		[ ! -s "$tmp/err" ] || fail "warnings for the split copy: $(cat "$tmp/err")"
	fi
	if [ -n "$zdebug" ] && [ -e "$zdebug" ]; then
		"$sp" symbolize -e "$zdebug" < "$tmp/addrs" | cmp -s - "$tmp/ours" ||
			fail ".zdebug sections give other answers"
	fi
else
	echo "note: no eu-addr2line or nm; output comparison skipped"
fi

[ "$fails" -eq 0 ] || { echo "cli.sh: $fails failure(s)"; exit 1; }
echo "cli.sh: ok"
