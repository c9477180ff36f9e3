#!/bin/sh
# run-errors.sh STACKPROF SRCDIR GEN_FIXTURES - every command on bad input: a
# clear message on stderr and exit 1 (2 for usage); output into a pipe that
# closes early ends quietly with exit 0; a full disk is an error.
set -u
SP=$1
SRC=$2
GEN=$3
FIX=$SRC/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() {
	echo "FAIL: $*"
	fail=$((fail + 1))
}

# expect STATUS STDERR_REGEX cmd... : the exit status and a matching message
expect() {
	want=$1
	pattern=$2
	shift 2
	"$SP" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" != "$want" ]; then
		bad "stackprof $* exited $rc, expected $want; stderr: $(cat "$TMP/err")"
	elif [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$TMP/err"; then
		bad "stackprof $*: stderr does not match /$pattern/: $(cat "$TMP/err")"
	else
		ok
	fi
}

# files that are not profiles, each described: collapsed stacks text (the
# output of collapse, given back to it), an empty file; a profile followed
# by another one
"$SP" collapse "$FIX/base.prof" >"$TMP/stacks.folded" 2>/dev/null
: >"$TMP/empty.prof"
cat "$FIX/base.prof" "$FIX/base.prof" >"$TMP/twice.prof"
# base.prof with a byte changed after its first flush (zlib's sync flush
# marker, 00 00 ff ff): the first flush is read, then the damage is found
f1=$(perl -0777 -ne 'if (/\x00\x00\xff\xff/g) { print pos() }' "$FIX/base.prof")
{ head -c $((f1 + 10)) "$FIX/base.prof"; printf '\377'; tail -c +$((f1 + 12)) "$FIX/base.prof"; } >"$TMP/damaged.prof"

for cmd in "info" "collapse" "table" "top" "flamegraph" "export --format pprof" \
	"export --format chrome" "export --format speedscope"; do
	# shellcheck disable=SC2086
	expect 1 "stacks.folded: not a stackprof profile: this looks like collapsed stacks text" \
		$cmd "$TMP/stacks.folded"
	# shellcheck disable=SC2086
	expect 1 "empty.prof: empty file, not a stackprof profile" $cmd "$TMP/empty.prof"
	# shellcheck disable=SC2086
	expect 1 "twice.prof: .* bytes follow the end of the profile .*another profile" \
		$cmd "$TMP/twice.prof"
	# a usage error: the error and one line pointing to --help
	# shellcheck disable=SC2086
	expect 2 "^Try 'stackprof ${cmd%% *} --help' for more information.\$" $cmd --bogus "$FIX/base.prof"
	[ "$(wc -l <"$TMP/err")" -eq 2 ] || bad "$cmd --bogus: not two lines: $(cat "$TMP/err")"
	# shellcheck disable=SC2086
	expect 1 "^stackprof: .*$TMP/missing.prof" $cmd "$TMP/missing.prof"
	# shellcheck disable=SC2086
	expect 1 "^stackprof: .*junk.prof" $cmd "$FIX/junk.prof"
	# a profile cut off after a flush is whole up to there: one note, what
	# was read, exit 0
	# shellcheck disable=SC2086
	expect 0 "^stackprof: note: .*truncated.prof ends at its last flush" $cmd "$FIX/truncated.prof"
	[ -s "$TMP/out" ] || bad "$cmd on a truncated profile printed nothing"
	[ "$(grep -c . "$TMP/err")" -eq 1 ] || bad "$cmd on a truncated profile: not one line: $(cat "$TMP/err")"
	# a damaged one (a byte changed in its first flush): a warning, what was
	# read before the damage, exit 1
	# shellcheck disable=SC2086
	expect 1 "^stackprof: warning: .*damaged.prof: (compressed data is corrupt|checksum mismatch)" \
		$cmd "$TMP/damaged.prof"
	# shellcheck disable=SC2086
	expect 2 "" $cmd
	# shellcheck disable=SC2086
	expect 2 "" $cmd --no-such-option "$FIX/base.prof"
	# shellcheck disable=SC2086
	expect 0 "" $cmd --help
	grep -q '^usage: stackprof' "$TMP/out" && grep -q '^examples:' "$TMP/out" ||
		bad "$cmd --help has no usage or examples"
done
expect 1 "missing.prof" diff "$FIX/base.prof" "$TMP/missing.prof"
expect 1 "junk.prof" diff "$FIX/junk.prof" "$FIX/base.prof"
expect 0 "^stackprof: note: .*truncated.prof ends at its last flush" diff "$FIX/base.prof" "$FIX/truncated.prof"
expect 1 "^stackprof: warning: .*damaged.prof" diff "$FIX/base.prof" "$TMP/damaged.prof"
expect 2 "expected BASE and NEW" diff "$FIX/base.prof"
expect 2 "" diff --help-me "$FIX/base.prof" "$FIX/new.prof"
expect 2 "--metric" collapse --metric ms "$FIX/base.prof"
expect 2 "--frame" collapse --frame nonsense "$FIX/base.prof"
expect 2 "--thread" collapse --thread 1001,,1002 "$FIX/base.prof"
# a thread or range the profile does not have: said, with what it has
expect 1 "has no thread '12x' .*its threads: 1001 worker pool, 1002 \(unnamed\)" collapse --thread 12x "$FIX/base.prof"
expect 1 "has no thread '99999'" top --thread 1001,99999 "$FIX/base.prof"
expect 1 "has no thread '99999'" diff --thread 99999 "$FIX/base.prof" "$FIX/new.prof"
expect 1 "has no range named 'nosuch'; its ranges: .*LINEAR PASS" top --range nosuch "$FIX/base.prof"
expect 2 "--sort-by" table --sort-by cuda_time "$FIX/base.prof"
expect 2 "--name" top --name '(' "$FIX/base.prof"
expect 2 "--min-time" top --min-time 10parsecs "$FIX/base.prof"
expect 2 "--order-by" top --order-by speed "$FIX/base.prof"
expect 2 "--sort" diff --sort size "$FIX/base.prof" "$FIX/new.prof"
expect 2 "--minwidth" flamegraph --minwidth 3em "$FIX/base.prof"
expect 2 "--format" export --format svg "$FIX/base.prof"
expect 2 "--format" export "$FIX/base.prof"
expect 1 "cannot write" collapse -o "$TMP/no/such/dir/x" "$FIX/base.prof"
# --event: a kind nobody knows is a usage error; a kind the profile has no
# sample of is an error that lists what it has; in every view
for cmd in collapse table top flamegraph "export --format pprof -o $TMP/x.pb.gz" \
	"export --format chrome" "export --format speedscope" "diff $FIX/events.prof"; do
	# shellcheck disable=SC2086
	expect 2 "^stackprof: --event: unknown event kind 'bogus' \(stackprof knows cpu, wall, alloc, free, user; .*events.prof holds cpu 13 samples \(13.000ms\), user 5 samples \(7 count\)\)" \
		$cmd --event bogus "$FIX/events.prof"
	# shellcheck disable=SC2086
	expect 1 "^stackprof: --event: .*events.prof holds no alloc samples; it holds cpu 13 samples" \
		$cmd --event alloc "$FIX/events.prof"
	# a version 1 file holds cpu samples only
	# shellcheck disable=SC2086
	expect 1 "base.prof holds no user samples; it holds cpu 126 samples" $cmd --event user "$FIX/base.prof"
	# a trace is a timeline: a kind that is not time is refused (export/chrome.h)
	case $cmd in
	*chrome*) want=2 pattern="^stackprof: --format chrome draws time, and user samples weigh count" ;;
	*) want=0 pattern="" ;;
	esac
	# shellcheck disable=SC2086
	expect $want "$pattern" $cmd --event user "$FIX/events.prof"
done
# the refusal comes before -o FILE is created
expect 2 "draws time" export --format chrome --event user -o "$TMP/user.json" "$FIX/events.prof"
[ ! -e "$TMP/user.json" ] || bad "export --format chrome --event user created its -o FILE"
expect 2 "--event: give an event kind" top --event '' "$FIX/events.prof"
# merged views: every profile must hold the kind asked for
expect 1 "base.prof holds no user samples" collapse --event user "$FIX/events.prof" "$FIX/base.prof"

# a full disk is an error with a message, not a silent short file
if [ -w /dev/full ]; then
	for cmd in collapse table top flamegraph "export --format speedscope"; do
		# shellcheck disable=SC2086
		expect 1 "writing" $cmd -o /dev/full "$FIX/base.prof"
		# shellcheck disable=SC2086
		"$SP" $cmd "$FIX/base.prof" >/dev/full 2>"$TMP/err"
		rc=$?
		if [ "$rc" = 1 ] && grep -q "No space" "$TMP/err"; then
			ok
		else
			bad "$cmd >/dev/full exited $rc: $(cat "$TMP/err")"
		fi
	done
fi

# `| head -1`: the reader stops early; stackprof must end quietly with 0
"$GEN" --big "$TMP/big.prof" 20000 5000 || exit 1
for cmd in collapse "table -n 5 --row-limit 0" "top -t 0" flamegraph \
	"export --format chrome" "diff"; do
	extra=""
	[ "$cmd" = diff ] && extra="$TMP/big.prof"
	# shellcheck disable=SC2086
	{
		"$SP" $cmd "$TMP/big.prof" $extra 2>"$TMP/err"
		echo $? >"$TMP/rc"
	} | head -1 >/dev/null
	rc=$(cat "$TMP/rc")
	if [ "$rc" != 0 ] || [ -s "$TMP/err" ]; then
		bad "$cmd | head -1 exited $rc with stderr: $(cat "$TMP/err")"
	else
		ok
	fi
done
echo "errors: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
