# shellcheck shell=bash
# bench/lib.sh - helpers shared by bench/accuracy.sh, bench/overhead.sh and
# bench/handler-cost.sh. Sourced, not run.
#
# The machine these run on is shared and noisy, so every script measures
# ratios within one run, alternates configurations, repeats and reports
# medians. Nothing here changes the product or the source tree: outputs go to
# a temporary directory that is removed on exit (BENCH_KEEP=1 keeps it).

# The exact command line, for the last line of every report.
bench_cmdline() {
	local s
	s=$(printf '%q ' "$@")
	printf '%s\n' "${s% }"
}

# bench_build DIR: absolute path of a build directory holding stackprof and
# libstackprof.so, or exits 2.
bench_build() {
	local d=${1:-./build}
	if [ ! -x "$d/stackprof" ] || [ ! -f "$d/libstackprof.so" ]; then
		echo "$(basename "$0"): no stackprof build in '$d' (build it:" \
			"cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j2)" >&2
		exit 2
	fi
	(cd "$d" && pwd)
}

# bench_tmpdir: a fresh temp dir in $BENCH_TMP, removed on exit.
bench_tmpdir() {
	BENCH_TMP=$(mktemp -d /tmp/stackprof-bench.XXXXXX) || exit 1
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "(keeping outputs in $BENCH_TMP)" >&2
	else
		trap 'rm -rf "$BENCH_TMP"' EXIT
	fi
}

# median V...: the median of numbers ("-" for none; non-numbers ignored).
median() {
	printf '%s\n' "$@" | awk '$1 ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ { v[n++] = $1 + 0 }
		END {
			if (!n) { print "-"; exit }
			for (i = 1; i < n; i++) for (j = i; j > 0 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			m = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
			print m
		}'
}

# iqr V...: "(q1-q3)" of numbers, 3 decimals, or "-" with fewer than 3.
iqr() {
	printf '%s\n' "$@" | awk '$1 ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ { print $1 + 0 }' | sort -g | awk '
		{ v[n++] = $1 }
		END {
			if (n < 3) { print "-"; exit }
			printf "(%.3f-%.3f)\n", q(0.25), q(0.75)
		}
		function q(p,   h, i) { h = (n - 1) * p; i = int(h); return v[i] + (h - i) * (v[i + 1] - v[i]) }'
}

# fmt PRINTF-FORMAT VALUE: formats a number, passes "-" through.
fmt() {
	case $2 in
	- | '') printf '%s' - ;;
	*) LC_ALL=C printf "$1" "$2" ;;
	esac
}

# The machine, for the report header.
bench_machine() {
	local model
	model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	printf 'machine: %s CPUs (nproc), %s, kernel %s, perf_event_paranoid %s, load avg %s\n' \
		"$(nproc)" "${model:-unknown CPU}" "$(uname -r)" \
		"$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?')" \
		"$(cut -d' ' -f1-3 /proc/loadavg)"
}

GPERF_LIB=${GPERF_LIB:-/usr/lib/x86_64-linux-gnu/libprofiler.so.0}
have_gperf() { [ -f "$GPERF_LIB" ]; }
have_pprof() { command -v google-pprof >/dev/null || command -v pprof >/dev/null; }
pprof_cmd() { if command -v google-pprof >/dev/null; then echo google-pprof; else echo pprof; fi; }
# perf is usable if it can record a software event on a trivial command.
have_perf() {
	command -v perf >/dev/null &&
		perf record -q -e cpu-clock -o /dev/null -- true >/dev/null 2>&1
}

# stackprof_field PROFILE: "samples bytes timer" from `stackprof info --no-symbols`.
stackprof_field() {
	"$SP" info --no-symbols "$1" 2>/dev/null | awk '
		/^profile:/ { b = $3; sub(/^\(/, "", b) }
		/^samples:/ { s = $2 }
		/^timer:/ { t = $2; sub(/,$/, "", t) }
		END { print (s == "" ? "-" : s), (b == "" ? "-" : b), (t == "" ? "-" : t) }'
}

# empty_kind PROFILE: the timer PROFILE ran, as bench/empty_timer.c's
# EMPTY_KIND names it (posix, trap, perf), or "-" when it has none.
empty_kind() {
	case $(stackprof_field "$1" | awk '{ print $3 }') in
	posix-cputimer) echo posix ;;
	perf-sigtrap) echo trap ;;
	perf-task-clock) echo perf ;;
	*) echo - ;;
	esac
}

# bench_need_torch CODE: PY is Debian's python3 with torch and torchvision,
# or the script says what to install and exits CODE (77: a skip).
bench_need_torch() {
	PY=/usr/bin/python3
	"$PY" -c 'import torch, torchvision' 2>/dev/null && return 0
	echo "$(basename "$0"): $PY with torch and torchvision is needed" \
		"(apt-get install python3-torch python3-torchvision)" >&2
	exit "$1"
}

# bench_python VERSION: pyenv's newest CPython VERSION (3.10 ...), its
# python3's path, or nothing when it is not installed (as tests/e2e/lib.sh's
# pick_python finds it, without skipping).
bench_python() {
	local root
	root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
	ls -d "$root"/versions/"$1".*/bin/python3 2>/dev/null | sort -V | tail -1
}
