#!/bin/sh
# run-golden.sh - runs every case of golden-cases.txt and compares stdout
# with golden/<name>.txt (and the exit status with the expected one).
#
#   run-golden.sh STACKPROF SRCDIR            test: fails on any difference
#   run-golden.sh STACKPROF SRCDIR --regen    rewrite the golden files
#   run-golden.sh STACKPROF SRCDIR --regen GEN_FIXTURES
#                                             also rewrite the fixtures first
# Regenerate only after checking the new output by eye; commit both.
set -u
SP=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
MODE=${3:-test}
FIX=$SRC/fixtures
GOLD=$SRC/golden
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ "$MODE" = --regen ] && [ $# -ge 4 ]; then
	"$4" "$FIX" || exit 1
fi

pass=0
fail=0
while IFS='|' read -r name status args; do
	name=$(echo "$name" | sed 's/^ *//; s/ *$//')
	case "$name" in '' | '#'*) continue ;; esac
	status=$(echo "$status" | tr -d ' ')
	args=$(echo "$args" | sed "s|FIX/||g")
	# relative paths, so that outputs naming the profile do not depend on the checkout;
	# eval: the case file quotes arguments the way a shell user would
	(cd "$FIX" && eval "\"\$SP\" $args") >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	if [ "$MODE" = --regen ]; then
		cp "$TMP/$name.out" "$GOLD/$name.txt"
		echo "regenerated golden/$name.txt (exit $rc)"
		continue
	fi
	if [ "$rc" != "$status" ]; then
		echo "FAIL $name: exit status $rc, expected $status"
		cat "$TMP/$name.err"
		fail=$((fail + 1))
	elif ! diff -u "$GOLD/$name.txt" "$TMP/$name.out" >"$TMP/$name.diff"; then
		echo "FAIL $name: output differs from golden/$name.txt:"
		head -40 "$TMP/$name.diff"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done <"$SRC/golden-cases.txt"
[ "$MODE" = --regen ] && exit 0
echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
