#!/bin/bash
# shellcheck disable=SC2046 # median/iqr take their numbers as words: $(...) unquoted on purpose
# bench/accuracy.sh - how close each profiler's per-function CPU split is to
# the truth, on programs that measure their own split. Two workloads, one
# table each (both by default; --split or --periodic for one):
#
# 1. split (workloads/programs/split.c, tests/bin/split in the build): two
# threads run split_a / split_b / split_c (each a call of the leaf `spin`) in
# the proportion 5:3:2, thread split-3x doing three times the work of
# split-1x, in rounds of random order and length; every call is timed with
# CLOCK_THREAD_CPUTIME_ID and the true shares are printed ("truth func
# split_a 0.49912", "truth thread split-1x 2.01"). Each profiler runs it; a
# function's share is the weight of the samples whose stack holds that
# function's frame, among the samples whose stack holds any of split_a/b/c
# (as tests/e2e/t0003-split.sh does).
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
# 2. periodic (workloads/programs/periodic.c, tests/bin/periodic): 2 threads
# repeat one 12 ms cycle of CPU, periodic_a/b/c/d for 6, 2, 2 and 2 ms, each
# phase a fixed amount of work, and print the true split in the same form.
# A timer that fires only on the kernel's 4 ms tick samples 3 fixed points of
# that cycle (issue 15; periodic.c explains the lengths). Rows, REPS_P runs
# each, in alternation:
#   stackprof default        no STACKPROF_FREQ, no STACKPROF_TIMER: what users get
#   stackprof 100 Hz KIND    STACKPROF_TIMER=posix, perf, trap, thread, itimer
#   stackprof 1000 Hz default
#   perf record -e cpu-clock -F 100 --call-graph dwarf (where perf is usable)
# Columns: the total variation distance (TV) from the truth, in points, as
# the mean over the runs and their range; the noise floor: the median TV
# of an ideal unbiased random sampler with the same number of samples
# (bench/tvfloor.awk: 1000 multinomial draws from the run's truth, fixed
# seed), averaged over the runs; TV / floor; the samples in the four
# functions; the mean |share - truth| per function; the timer that ran.
# Targets (issue 15): the default at 100 Hz no worse than the floor (TV /
# floor <= 1); the default at 1 kHz at most 0.5 points.
#
# usage: bench/accuracy.sh [BUILD_DIR] [--split | --periodic] [-r REPS] [-s SECONDS]
#                          [-R REPS_P] [-S SECONDS_P] [--quick]
#   BUILD_DIR    a stackprof build (default ./build)
#   --split      the split table only
#   --periodic   the periodic table only
#   -r REPS      split: runs of each configuration (default 3)
#   -s SECONDS   split: CPU seconds of the split-1x thread per run (default 2;
#                the run takes ~4x that in CPU, about 3x in wall time)
#   -R REPS_P    periodic: runs of each row (default 5)
#   -S SECONDS_P periodic: CPU seconds per thread (default 3: 6 s of CPU and
#                ~600 samples a run at 100 Hz)
#   --quick      -r 1 -s 1 -R 2 -S 2 (about 2 minutes)
# Runtime with the defaults: about 5-6 minutes for split, 4-5 for periodic.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build
reps=3
secs=2
preps=5
psecs=3
do_split=1
do_periodic=1
while [ $# -gt 0 ]; do
	case $1 in
	-r) reps=${2:?-r needs a number}; shift 2 ;;
	-s) secs=${2:?-s needs seconds}; shift 2 ;;
	-R) preps=${2:?-R needs a number}; shift 2 ;;
	-S) psecs=${2:?-S needs seconds}; shift 2 ;;
	--split) do_periodic=0; shift ;;
	--periodic) do_split=0; shift ;;
	--quick) reps=1; secs=1; preps=2; psecs=2; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; /shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "accuracy.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build") || exit 2
SP=$build/stackprof
LIB=$build/libstackprof.so
SPLIT=$build/tests/bin/split
PERIODIC=$build/tests/bin/periodic
FLOOR_AWK=$here/tvfloor.awk
for p in $( ((do_split)) && echo "$SPLIT") $( ((do_periodic)) && echo "$PERIODIC"); do
	[ -x "$p" ] || { echo "accuracy.sh: $p is missing (build the tests)" >&2; exit 2; }
done
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

# split_table: runs the split configurations and prints their table
split_table() {
	echo "accuracy: split.c, ${secs}s of CPU in split-1x (3x that in split-3x), $reps run(s) per configuration" >&2
	raw=$T/raw.txt
	: >"$raw"
	for ((rep = 1; rep <= reps; rep++)); do
		for cfg in "${configs[@]}"; do
			printf '  run %d/%d %-16s' "$rep" "$reps" "$cfg" >&2
			run_one "$cfg" "$rep" | tee -a "$raw" | awk '{ printf " tv %s max %s\n", $7, $6 }' >&2
		done
	done

	split_label() {
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
		printf '%-31s %7s %7s %7s %7s %7s %8s %9s  %s\n' "$(split_label "$cfg")" \
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
}
# ---- periodic ---------------------------------------------------------------

pconfigs=(pd100-default pd100-posix pd100-perf pd100-trap pd100-thread pd100-itimer pd1000-default)
pnotes=()
if have_perf; then
	pconfigs+=(pdperf100)
else
	pnotes+=("perf: not usable here (not installed or perf_event_paranoid forbids it): skipped")
fi

# pshares TRUTH FOLDED: "function truth share weight" for each function of the
# truth, in its order; a sample counts for the truth's function whose frame
# is on its stack (one periodic_[abcd] per stack); weight: of all of them
pshares() {
	awk 'FNR == NR { if ($1 == "truth" && $2 == "func") { t[$3] = $4; o[++k] = $3 } next }
		{
			v = $NF; s = $0; sub(/ [^ ]*$/, "", s)
			n = split(s, f, ";")
			for (i = 1; i <= n; i++) { g = f[i]; sub(/<[0-9a-fA-Fx]*>$/, "", g); if (g in t) { m[g] += v; tot += v; break } }
		}
		END { for (i = 1; i <= k; i++) printf "%s %.6f %.6f %s\n", o[i], t[o[i]], tot ? m[o[i]] / tot : 0, tot + 0 }' "$1" "$2"
}

# pd_one CONFIG REP: runs periodic under CONFIG; prints
# "CONFIG REP tv samples floor err_a err_b err_c err_d timer" (points)
pd_one() {
	local cfg=$1 rep=$2 d=$T/periodic/$1.$2
	mkdir -p "$d"
	local truth=$d/truth.txt timer=- n
	case $cfg in
	pd[0-9]*)
		local x=${cfg#pd} env=(env -u STACKPROF_FREQ -u STACKPROF_TIMER LD_PRELOAD="$LIB"
			STACKPROF_OUT="$d/s.prof" STACKPROF_QUIET=1)
		[ "$x" = 100-default ] || env+=(STACKPROF_FREQ="${x%%-*}")
		[ "${x#*-}" = default ] || env+=(STACKPROF_TIMER="${x#*-}")
		"${env[@]}" "$PERIODIC" -s "$psecs" -t 2 >"$truth" 2>"$d/err"
		"$SP" collapse --frame func "$d/s.prof" >"$d/folded" 2>>"$d/err"
		"$SP" collapse --frame func --metric samples "$d/s.prof" >"$d/folded.n" 2>>"$d/err"
		timer=$(stackprof_field "$d/s.prof" | awk '{ print $3 }')
		n=$(pshares "$truth" "$d/folded.n" | awk 'NR == 1 { print $4 }')
		;;
	pdperf*)
		perf record -q -F "${cfg#pdperf}" -e cpu-clock --call-graph dwarf -o "$d/perf.data" -- \
			"$PERIODIC" -s "$psecs" -t 2 >"$truth" 2>"$d/err"
		perf_folded "$d/perf.data" >"$d/folded"
		rm -f "$d/perf.data"
		timer=cpu-clock
		# one line per sample
		awk '{ $NF = 1; print }' "$d/folded" >"$d/folded.n"
		n=$(pshares "$truth" "$d/folded.n" | awk 'NR == 1 { print $4 }')
		;;
	esac
	local floor
	floor=$(awk -v n="${n:-0}" -v reps=1000 -v seed=1 -f "$FLOOR_AWK" "$truth" 2>/dev/null | awk '{ print $1 }')
	pshares "$truth" "$d/folded" | awk -v cfg="$cfg" -v rep="$rep" -v n="${n:-0}" -v fl="${floor:--}" -v tm="$timer" '
		{ d = 100 * ($3 - $2); e[NR] = d < 0 ? -d : d; tv += e[NR] / 2 }
		END {
			if (n + 0 < 50) { printf "%s %s - %d - - - - - %s\n", cfg, rep, n, tm; exit }
			printf "%s %s %.3f %d %s %.3f %.3f %.3f %.3f %s\n", cfg, rep, tv, n, fl, e[1], e[2], e[3], e[4], tm
		}'
}

periodic_table() {
	echo "accuracy: periodic.c, 2 threads x ${psecs}s of CPU, $preps run(s) per row" >&2
	local praw=$T/praw.txt rep cfg
	: >"$praw"
	for ((rep = 1; rep <= preps; rep++)); do
		for cfg in "${pconfigs[@]}"; do
			printf '  run %d/%d %-18s' "$rep" "$preps" "$cfg" >&2
			pd_one "$cfg" "$rep" | tee -a "$praw" | awk '{ printf " tv %s over %s samples, floor %s (%s)\n", $3, $4, $5, $10 }' >&2
		done
	done

	plabel() {
		case $1 in
		pdperf*) echo "perf -F${1#pdperf} cpu-clock dwarf" ;;
		pd100-default) echo "stackprof default" ;;
		pd*) local x=${1#pd}; echo "stackprof ${x%%-*} Hz ${x#*-}" ;;
		esac
	}
	# mean COLUMN of CONFIG's runs ("-" if none is a number)
	pmean() {
		awk -v c="$1" -v k="$2" '$1 == c && $k ~ /^[0-9.]+$/ { s += $k; n++ } END { if (n) print s / n; else print "-" }' "$praw"
	}
	echo
	echo "Accuracy on a loop that repeats (periodic.c: 2 threads x ${psecs}s of CPU, a 12 ms cycle of 6/2/2/2 ms; mean of $preps run(s) per row)"
	bench_machine
	echo
	printf '%-30s %7s %13s %7s %7s %8s %6s %6s %6s %6s  %s\n' "profiler / config" "TV" "(runs)" "floor" "TV /" "samples" "|err|" "|err|" "|err|" "|err|" "timer"
	printf '%-30s %7s %13s %7s %7s %8s %6s %6s %6s %6s  %s\n' "" "(pts)" "(min-max)" "(pts)" "floor" "in abcd" "a" "b" "c" "d" ""
	for cfg in "${pconfigs[@]}"; do
		local tv fl range timer
		tv=$(pmean "$cfg" 3)
		fl=$(pmean "$cfg" 5)
		range=$(awk -v c="$cfg" '$1 == c && $3 ~ /^[0-9.]+$/ { v = $3 + 0; if (!n++ || v < lo) lo = v; if (n == 1 || v > hi) hi = v }
			END { if (n) printf "(%.2f-%.2f)", lo, hi; else print "-" }' "$praw")
		timer=$(awk -v c="$cfg" '$1 == c { print $10 }' "$praw" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
		printf '%-30s %7s %13s %7s %7s %8s %6s %6s %6s %6s  %s\n' "$(plabel "$cfg")" "$(fmt %.2f "$tv")" "$range" \
			"$(fmt %.2f "$fl")" "$(fmt %.2f "$(awk -v a="$tv" -v b="$fl" 'BEGIN { if (a == "-" || b + 0 <= 0) print "-"; else print a / b }')")" \
			"$(fmt %.0f "$(pmean "$cfg" 4)")" "$(fmt %.2f "$(pmean "$cfg" 6)")" "$(fmt %.2f "$(pmean "$cfg" 7)")" \
			"$(fmt %.2f "$(pmean "$cfg" 8)")" "$(fmt %.2f "$(pmean "$cfg" 9)")" "${timer:--}"
	done
	echo
	echo "truth (last run): $(awk '$2 == "func" { printf "%s %.2f%%  ", $3, 100 * $4 }' "$(ls -d "$T"/periodic/*/truth.txt | tail -1)")"
	for n in "${pnotes[@]}"; do echo "note: $n"; done
	echo "TV: total variation distance from the truth, half the sum of |share - truth|, in points (mean over runs)"
	echo "floor: median TV of an ideal unbiased random sampler with the run's sample count"
	echo "  (bench/tvfloor.awk: 1000 multinomial draws from the truth, seed 1), mean over runs"
	echo "targets (issue 15): stackprof default TV / floor <= 1; stackprof 1000 Hz default TV <= 0.5"
	echo
}

((do_split)) && split_table
((do_periodic)) && periodic_table
echo "command: $cmdline"
