#!/bin/bash
# shellcheck disable=SC2046 # median/iqr take their numbers as words: $(...) unquoted on purpose
# bench/accuracy.sh - how close each profiler's per-function CPU split is to
# the truth, on a program that measures its own split.
#
# The program is workloads/programs/split.c (tests/bin/split in the build): two
# threads run split_a / split_b / split_c (each a call of the leaf `spin`) in
# the proportion 5:3:2, thread split-3x doing three times the work of
# split-1x; every call is timed with CLOCK_THREAD_CPUTIME_ID and the true
# shares are printed ("truth func split_a 0.49912", "truth thread split-1x
# 2.01"). Each profiler runs it; a function's share is the weight of the
# samples whose stack holds that function's frame, among the samples whose
# stack holds any of split_a/b/c (as tests/e2e/t0003-split.sh does).
#
# Configurations (each run REPS times, in alternation; medians reported):
#   stackprof  100 Hz, STACKPROF_TIMER=posix       (per-thread POSIX CPU timer)
#   stackprof 1000 Hz, STACKPROF_TIMER=auto        (perf task-clock where allowed)
#   stackprof 1000 Hz, STACKPROF_TIMER=posix       (tick-limited: overrun-weighted)
#   stackprof 1000 Hz, STACKPROF_TIMER=thread      (sampler thread, opt-in: its bias)
#   stackprof 4000 Hz, STACKPROF_TIMER=auto        (t0003-split's rate)
#   perf record -F 1000 -e cpu-clock -g            (frame pointers)
#   perf record -F 1000 -e cpu-clock --call-graph dwarf
#   gperftools CPUPROFILE_FREQUENCY=100 and 1000   (if libprofiler.so is installed)
# Weights: stackprof's default metric (CPU us, i.e. 1 + overruns periods or
# the task-clock growth), perf's sample period, gperftools' sample counts.
#
# Columns: |share - truth| per function in percentage points, their max, the
# total variation distance (half the sum of the three, in points), the
# samples in the split_[abc] frames, and the ratio of thread split-3x's
# samples to split-1x's divided by the ratio of their true CPU times (1.000 is
# exact; gperftools' profile has no threads). Every column is the median of
# the REPS runs, taken per column.
#
# usage: bench/accuracy.sh [BUILD_DIR] [-r REPS] [-s SECONDS] [--quick]
#   BUILD_DIR    a stackprof build (default ./build)
#   -r REPS      runs of each configuration (default 3)
#   -s SECONDS   CPU seconds of the split-1x thread per run (default 2; the
#                run takes ~4x that in CPU, about 3x in wall time)
#   --quick      -r 1 -s 1 (about a minute)
# Runtime with the defaults: about 5-6 minutes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build
reps=3
secs=2
while [ $# -gt 0 ]; do
	case $1 in
	-r) reps=${2:?-r needs a number}; shift 2 ;;
	-s) secs=${2:?-s needs seconds}; shift 2 ;;
	--quick) reps=1; secs=1; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; /shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "accuracy.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build") || exit 2
SP=$build/stackprof
LIB=$build/libstackprof.so
SPLIT=$build/tests/bin/split
[ -x "$SPLIT" ] || { echo "accuracy.sh: $SPLIT is missing (build the tests)" >&2; exit 2; }
bench_tmpdir
T=$BENCH_TMP

configs=(sp100-posix sp1000-auto sp1000-posix sp1000-thread sp4000-auto)
notes=()
if have_perf; then
	configs+=(perf1000-fp perf1000-dwarf)
else
	notes+=("perf: not usable here (not installed or perf_event_paranoid forbids it): skipped")
fi
if have_gperf && have_pprof; then
	configs+=(gperf100 gperf1000)
else
	notes+=("gperftools: $GPERF_LIB or google-pprof missing: skipped")
fi

# shares FOLDED: "a b c" shares (0..1) of split_a/b/c frames, their total weight, their lines.
shares() {
	awk '{
		v = $NF; s = $0; sub(/ [^ ]*$/, "", s)
		n = split(s, f, ";"); hit = ""
		for (i = 1; i <= n; i++) {
			g = f[i]; sub(/<[0-9a-fA-Fx]*>$/, "", g)
			if (g == "split_a" || g == "split_b" || g == "split_c") hit = g
		}
		if (hit != "") { tot += v; m[hit] += v; lines++ }
	}
	END {
		if (tot == 0) { print "- - - 0 0"; exit }
		printf "%.6f %.6f %.6f %s %d\n", m["split_a"] / tot, m["split_b"] / tot, m["split_c"] / tot, tot, lines
	}' "$1"
}

# perf script output -> folded stacks rooted at the thread name, weighted by period.
perf_folded() {
	perf script -i "$1" -F comm,tid,period,ip,sym 2>/dev/null | awk '
		function flush(  s, i) {
			if (nf) {
				s = comm
				for (i = nf; i >= 1; i--) s = s ";" fr[i]
				print s, period
			}
			nf = 0
		}
		/^[^ \t]/ { flush(); period = $NF; comm = $1; for (i = 2; i <= NF - 2; i++) comm = comm "_" $i; next }
		/^[ \t]+[0-9a-f]+ / { sym = $2; for (i = 3; i <= NF; i++) sym = sym "_" $i; fr[++nf] = sym; next }
		/^[ \t]*$/ { flush() }
		END { flush() }'
}

# run_one CONFIG REP: runs split under CONFIG; prints
# "CONFIG REP err_a err_b err_c max tv split_samples ratio31/truth31 note"
run_one() {
	local cfg=$1 rep=$2 d=$T/$1.$2
	mkdir -p "$d"
	local truth=$d/truth.txt folded=$d/folded n1=- n3=- nsamp=- note=
	case $cfg in
	sp*)
		local hz=${cfg#sp} kind=${cfg#*-}
		hz=${hz%%-*}
		LD_PRELOAD=$LIB STACKPROF_OUT=$d/s.prof STACKPROF_FREQ=$hz STACKPROF_TIMER=$kind \
			STACKPROF_QUIET=1 "$SPLIT" "$secs" >"$truth" 2>"$d/err" || note="exit $?"
		"$SP" collapse --frame func "$d/s.prof" >"$folded" 2>>"$d/err"
		"$SP" info "$d/s.prof" >"$d/info" 2>>"$d/err"
		n1=$(awk '$2 == "split-1x" && $4 == "samples" { print $3 }' "$d/info")
		n3=$(awk '$2 == "split-3x" && $4 == "samples" { print $3 }' "$d/info")
		note="$(awk '/^timer:/ { print $2 }' "$d/info" | tr -d ,)"
		;;
	perf*)
		local cg=-g
		[ "$cfg" = perf1000-dwarf ] && cg="--call-graph dwarf,16384"
		# shellcheck disable=SC2086
		perf record -q -F 1000 -e cpu-clock $cg -o "$d/perf.data" -- "$SPLIT" "$secs" \
			>"$truth" 2>"$d/err" || note="exit $?"
		perf_folded "$d/perf.data" >"$folded"
		rm -f "$d/perf.data"
		n1=$(awk -F';' '$1 == "split-1x" { n++ } END { print n + 0 }' "$folded")
		n3=$(awk -F';' '$1 == "split-3x" { n++ } END { print n + 0 }' "$folded")
		;;
	gperf*)
		LD_PRELOAD=$GPERF_LIB CPUPROFILE=$d/g.prof CPUPROFILE_FREQUENCY=${cfg#gperf} \
			"$SPLIT" "$secs" >"$truth" 2>"$d/err" || note="exit $?"
		"$(pprof_cmd)" --collapsed "$SPLIT" "$d/g.prof" >"$folded" 2>/dev/null
		note="interrupts $(sed -n 's|.*interrupts/evictions/bytes = \([0-9]*\)/.*|\1|p' "$d/err")"
		;;
	esac
	read -r sa sb sc tot lines < <(shares "$folded")
	case $cfg in
	sp*) nsamp=$("$SP" collapse --frame func --metric samples "$d/s.prof" 2>/dev/null >"$d/folded.n" &&
		shares "$d/folded.n" | awk '{ print $4 }') ;;
	perf*) nsamp=$lines ;; # one line per sample
	gperf*) nsamp=$tot ;;
	esac
	awk -v cfg="$cfg" -v rep="$rep" -v sa="$sa" -v sb="$sb" -v sc="$sc" -v ns="$nsamp" \
		-v n1="$n1" -v n3="$n3" -v note="$note" '
		$1 == "truth" && $2 == "func" { t[$3] = $4 }
		$1 == "truth" && $2 == "thread" { c[$3] = $4 }
		END {
			if (sa == "-") { printf "%s %s - - - - - %s - no split_[abc] frame in any stack %s\n", cfg, rep, ns, note; exit }
			# a handful of samples (perf -g: only those in split_x before its call)
			# is no measurement
			if (ns + 0 < 50) { printf "%s %s - - - - - %s - only %d sample(s) hold a split_[abc] frame %s\n", cfg, rep, ns, ns, note; exit }
			ea = 100 * (sa - t["split_a"]); eb = 100 * (sb - t["split_b"]); ec = 100 * (sc - t["split_c"])
			ea = ea < 0 ? -ea : ea; eb = eb < 0 ? -eb : eb; ec = ec < 0 ? -ec : ec
			mx = ea > eb ? ea : eb; mx = mx > ec ? mx : ec
			r = "-"
			if (n1 + 0 > 0 && c["split-1x"] > 0) r = sprintf("%.4f", (n3 / n1) / (c["split-3x"] / c["split-1x"]))
			printf "%s %s %.3f %.3f %.3f %.3f %.3f %s %s %s\n", cfg, rep, ea, eb, ec, mx, (ea + eb + ec) / 2, ns, r, note
		}' "$truth"
}

echo "accuracy: split.c, ${secs}s of CPU in split-1x (3x that in split-3x), $reps run(s) per configuration" >&2
raw=$T/raw.txt
: >"$raw"
for ((rep = 1; rep <= reps; rep++)); do
	for cfg in "${configs[@]}"; do
		printf '  run %d/%d %-16s' "$rep" "$reps" "$cfg" >&2
		run_one "$cfg" "$rep" | tee -a "$raw" | awk '{ printf " tv %s max %s\n", $7, $6 }' >&2
	done
done

label() {
	case $1 in
	sp*) local x=${1#sp}; echo "stackprof ${x%%-*} Hz ${x#*-}" ;;
	perf1000-fp) echo "perf -F1000 cpu-clock -g (fp)" ;;
	perf1000-dwarf) echo "perf -F1000 cpu-clock dwarf" ;;
	gperf100) echo "gperftools 100 Hz" ;;
	gperf1000) echo "gperftools 1000 Hz" ;;
	esac
}

echo
echo "Accuracy against the measured truth (split.c; median of $reps run(s) per row)"
bench_machine
echo
printf '%-31s %7s %7s %7s %7s %7s %8s %9s  %s\n' "profiler / config" "|err_a|" "|err_b|" "|err_c|" "max" "TV" "samples" "3x/1x÷tr" "timer / note"
printf '%-31s %7s %7s %7s %7s %7s %8s %9s  %s\n' "" "(pts)" "(pts)" "(pts)" "(pts)" "(pts)" "in abc" "" ""
for cfg in "${configs[@]}"; do
	col() { median $(awk -v c="$cfg" -v k="$1" '$1 == c { print $k }' "$raw"); }
	note=$(awk -v c="$cfg" '$1 == c { $1 = $2 = $3 = $4 = $5 = $6 = $7 = $8 = $9 = ""; sub(/^ +/, ""); print; exit }' "$raw")
	printf '%-31s %7s %7s %7s %7s %7s %8s %9s  %s\n' "$(label "$cfg")" \
		"$(fmt %.2f "$(col 3)")" "$(fmt %.2f "$(col 4)")" "$(fmt %.2f "$(col 5)")" \
		"$(fmt %.2f "$(col 6)")" "$(fmt %.2f "$(col 7)")" "$(fmt %.0f "$(col 8)")" \
		"$(fmt %.3f "$(col 9)")" "$note"
done
echo
echo "truth (last run): $(awk '$2 == "func" { printf "%s %.2f%%  ", $3, 100 * $4 }' "$(ls -d "$T"/*/truth.txt | tail -1)")"
for n in "${notes[@]}"; do echo "note: $n"; done
echo "sampling noise alone: a 50% share estimated from n independent samples has a standard"
echo "  deviation of 50/sqrt(n) points (n=800: 1.8, n=8000: 0.56)"
echo "target (DESIGN.md): each function within 1 point of the truth"
echo
echo "command: $cmdline"
