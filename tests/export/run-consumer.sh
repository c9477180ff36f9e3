#!/bin/sh
# run-consumer.sh KIND STACKPROF SRCDIR NODE_PREFIX GEN_FIXTURES - feeds stackprof's outputs
# to the programs that read them (or faithful stand-ins), on the fixtures:
#   folded      flamegraph.pl's input rules (folded-check.pl) on collapse and
#               diff --collapsed in every frame style
#   pprof       npm pprof-format decodes the export (pprof-check.mjs)
#   speedscope  ajv against speedscope.schema.json (speedscope-check.mjs), cpu
#               and --event user
#   chrome      JSON.parse plus the trace viewers' nesting rule (chrome-check.mjs)
#   svg         the flame graphs are well-formed XML (xmllint, else python3)
#   svgjs       the SVG's script zooms, searches and resets in jsdom
#   big         100k samples / 20k unique stacks: fast enough, SVG stays small
# Exits 77 when the consumer is not installed here.
set -u
KIND=$1
SP=$2
SRC=$3
NODE=$4
GEN=$5
FIX=$SRC/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

need() {
	command -v "$1" >/dev/null 2>&1 || {
		echo "SKIP: $1 is not installed"
		exit 77
	}
}

case $KIND in
folded)
	need perl
	for style in 'func (file:line)' func pytorch; do
		for extra in "" --per-thread --inline-mark; do
			# shellcheck disable=SC2086
			"$SP" collapse --frame "$style" $extra "$FIX/base.prof" >"$TMP/f" || exit 1
			perl "$SRC/folded-check.pl" --total 146005 "$TMP/f" || {
				echo "FAIL: collapse --frame '$style' $extra"
				exit 1
			}
		done
	done
	"$SP" collapse --metric samples "$FIX/base.prof" >"$TMP/f" || exit 1
	perl "$SRC/folded-check.pl" --total 126 "$TMP/f" || exit 1
	"$SP" diff --collapsed "$FIX/base.prof" "$FIX/new.prof" >"$TMP/d" || exit 1
	perl "$SRC/folded-check.pl" --diff "$TMP/d" || exit 1
	"$SP" diff --collapsed --normalize --per-thread "$FIX/base.prof" "$FIX/new.prof" >"$TMP/d" ||
		exit 1
	perl "$SRC/folded-check.pl" --diff "$TMP/d" || exit 1
	echo "folded: flamegraph.pl would read every line"
	;;
pprof)
	need node
	"$SP" export --format pprof "$FIX/base.prof" -o "$TMP/p.pb.gz" || exit 1
	node "$SRC/pprof-check.mjs" "$TMP/p.pb.gz" "$NODE" --fixture || exit $?
	"$SP" export --format pprof --per-thread --no-ranges "$FIX/new.prof" -o "$TMP/q.pb.gz" ||
		exit 1
	node "$SRC/pprof-check.mjs" "$TMP/q.pb.gz" "$NODE"
	;;
speedscope)
	need node
	"$SP" export --format speedscope "$FIX/base.prof" -o "$TMP/s.json" || exit 1
	node "$SRC/speedscope-check.mjs" "$TMP/s.json" "$SRC/speedscope.schema.json" "$NODE" \
		--fixture || exit $?
	"$SP" export --format speedscope --frame pytorch "$FIX/new.prof" -o "$TMP/t.json" || exit 1
	node "$SRC/speedscope-check.mjs" "$TMP/t.json" "$SRC/speedscope.schema.json" "$NODE" ||
		exit $?
	# a kind that is not time: its unit must be one speedscope knows ("none" for counts)
	"$SP" export --format speedscope --event user "$FIX/events.prof" -o "$TMP/u.json" || exit 1
	node "$SRC/speedscope-check.mjs" "$TMP/u.json" "$SRC/speedscope.schema.json" "$NODE" \
		--events-user
	;;
chrome)
	need node
	"$SP" export --format chrome "$FIX/base.prof" -o "$TMP/c.json" || exit 1
	node "$SRC/chrome-check.mjs" "$TMP/c.json" --fixture || exit 1
	"$SP" export --format chrome --per-thread "$FIX/new.prof" -o "$TMP/d.json" || exit 1
	node "$SRC/chrome-check.mjs" "$TMP/d.json"
	;;
svg)
	"$SP" flamegraph "$FIX/base.prof" --title 'a <b> & "c"' -o "$TMP/a.svg" || exit 1
	"$SP" flamegraph "$FIX/new.prof" --diff "$FIX/base.prof" --reverse -o "$TMP/b.svg" || exit 1
	"$SP" flamegraph "$FIX/base.prof" --per-thread --inline-mark --frame pytorch \
		--minwidth 0 -o "$TMP/c.svg" || exit 1
	"$SP" flamegraph --event user "$FIX/events.prof" -o "$TMP/d.svg" || exit 1
	for f in a b c d; do
		if command -v xmllint >/dev/null 2>&1; then
			xmllint --noout "$TMP/$f.svg" || exit 1
		elif [ -x /usr/bin/python3 ]; then
			/usr/bin/python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' \
				"$TMP/$f.svg" || exit 1
		else
			echo "SKIP: neither xmllint nor python3 to parse the SVG"
			exit 77
		fi
		grep -q '<script type="text/ecmascript">' "$TMP/$f.svg" || exit 1
	done
	# every fixture frame is drawn: 1 root + 34 frames with --minwidth 0
	n=$(grep -c '^<g><title>' "$TMP/c.svg")
	[ "$n" -ge 30 ] || {
		echo "FAIL: only $n frames drawn"
		exit 1
	}
	echo "svg: well-formed, $n frames"
	;;
svgjs)
	need node
	"$SP" flamegraph "$FIX/base.prof" -o "$TMP/a.svg" || exit 1
	node "$SRC/flamegraph-js-check.mjs" "$TMP/a.svg" "$NODE"
	;;
big)
	"$GEN" --big "$TMP/big.prof" 100000 20000 || exit 1
	start=$(date +%s)
	"$SP" collapse "$TMP/big.prof" >"$TMP/big.folded" || exit 1
	"$SP" flamegraph "$TMP/big.prof" -o "$TMP/big.svg" || exit 1
	"$SP" table "$TMP/big.prof" -n 5 --row-limit 20 >/dev/null || exit 1
	"$SP" export --format pprof "$TMP/big.prof" -o "$TMP/big.pb.gz" || exit 1
	end=$(date +%s)
	lines=$(wc -l <"$TMP/big.folded")
	size=$(wc -c <"$TMP/big.svg")
	echo "big: $lines folded stacks, SVG $size bytes, four commands in $((end - start)) s"
	[ "$lines" -ge 15000 ] || {
		echo "FAIL: expected about 20000 distinct stacks"
		exit 1
	}
	# elision keeps the SVG small: flamegraph.pl's rule, frames under the minimum width go
	[ "$size" -lt 8000000 ] || {
		echo "FAIL: SVG too large"
		exit 1
	}
	# generous: the four commands take well under a second each on a laptop
	[ $((end - start)) -lt 60 ] || {
		echo "FAIL: too slow"
		exit 1
	}
	;;
*)
	echo "unknown kind $KIND"
	exit 2
	;;
esac
