#!/bin/bash
# shellcheck disable=SC2046 # median/iqr take their numbers as words: $(...) unquoted on purpose
# bench/torch-ab.sh - what sampling costs torchvision's ResNet18 under
# Debian's python3 and torch, measured inside one process, so that the
# machine's drift and the noise of start-up (import torch) fall out of it
# (issue 16, point 8: at most 1% at 100 Hz).
#
# bench/torch-overhead.sh compares whole processes with and without the
# preload; on a shared VM their CPU times move by several points from run
# to run, more than the 1% being measured. Here one process runs under the
# preload and alternates passes of ITERS inferences with sampling on
# (stackprof.start()) and off (stackprof.stop(), which disarms every
# thread's timer: no interrupt, no signal, no handler), in pairs ordered
# on-off, off-on, ... Each pass ends with stackprof.flush() inside its
# timing, so the writer's work for a pass's samples is counted in that
# pass. A pass's cost is time.process_time(): every thread of the process,
# the writer included, user and system time. The ratio on / off per pair,
# median and interquartile range over the rounds, is what sampling costs:
# the kernel's timer and signal delivery, the handler, and the writer.
#
# What it leaves out is what the library costs by being there, sampling
# or not: its set-up (`set-up` in `stackprof info`'s own CPU, 1-8 ms a
# run), printed from the run's profile as a share of its CPU; and the
# writer's passes, every 100 ms, printed as the writer thread's CPU time
# (its schedstat) in the passes with sampling off, as a share of their
# process CPU (each such pass ends with a flush, which a plain run does not
# have: a little more than the writer costs an idle run). Add both to the
# ratio for the whole.
#
# Rows: "python on" (the default: Python frames read) and "python off"
# (STACKPROF_PYTHON=0), each its own process.
#
# usage: bench/torch-ab.sh [BUILD_DIR] [-r ROUNDS] [-k ITERS] [-F HZ]
#                          [-b BATCH] [-t THREADS] [--quick]
#   BUILD_DIR   a stackprof build (default ./build)
#   -r ROUNDS   pairs of passes per row (default 15)
#   -k ITERS    inferences per pass (default 4: about 1 s of CPU at batch 5)
#   -F HZ       STACKPROF_FREQ (default 100)
#   -b BATCH    batch size (default 5)
#   -t THREADS  torch.set_num_threads (default 1)
#   --quick     -r 5 -k 2
# Runtime with the defaults: about 2 minutes a row. Skips (exit 77)
# without /usr/bin/python3 with torch and torchvision.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build rounds=15 iters=4 hz=100 batch=5 threads=1
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=${2:?-r needs a number}; shift 2 ;;
	-k) iters=${2:?-k needs a number}; shift 2 ;;
	-F) hz=${2:?-F needs a rate}; shift 2 ;;
	-b) batch=${2:?-b needs a batch}; shift 2 ;;
	-t) threads=${2:?-t needs a number}; shift 2 ;;
	--quick) rounds=5 iters=2; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; /shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "torch-ab.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build") || exit 2
SP=$build/stackprof
bench_need_torch 77
bench_tmpdir
T=$BENCH_TMP

cat >"$T/ab.py" <<'EOF'
import os
import sys
import time

import torch
import torchvision

import stackprof

rounds, iters, batch, threads = (int(a) for a in sys.argv[1:5])
torch.set_num_threads(threads)
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(batch, 3, 224, 224)
assert stackprof.active(), "not under the stackprof preload"
tasks = "/proc/self/task/"
writer = [t for t in os.listdir(tasks) if open(tasks + t + "/comm").read().strip() == "stackprof-wr"]
assert len(writer) == 1, "no stackprof writer thread"
writer = tasks + writer[0] + "/schedstat"


def writer_cpu():
    with open(writer) as f:
        return int(f.read().split()[0]) / 1e9  # its time on a CPU (ns in schedstat), in s


def timed(on):
    (stackprof.start if on else stackprof.stop)()
    p0, t0, w0 = time.process_time(), time.thread_time(), writer_cpu()
    for _ in range(iters):
        y = model(x)
    stackprof.flush()  # the writer's work for this pass's samples, in this pass
    return time.process_time() - p0, time.thread_time() - t0, writer_cpu() - w0, y


with torch.no_grad():
    ref = model(x)  # oneDNN makes its JIT kernels here
    timed(True)
    timed(False)
    for r in range(rounds):
        got = {}
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            p, t, w, y = timed(on)
            assert torch.equal(y, ref), "the output changed"
            got[on] = (p, t, w)
        print("round", *(got[on][i] for i in range(3) for on in (False, True)), flush=True)
stackprof.start()  # the profile's summary counts the whole run
EOF

printf 'bench/torch-ab.sh: torchvision ResNet18, %s, torch %s, batch %s, %s thread(s), %s Hz,\n' \
	"$("$PY" --version 2>&1)" "$("$PY" -c 'import torch; print(torch.__version__)')" "$batch" "$threads" "$hz"
printf 'sampling on/off in alternate passes of %s inferences in one process under the preload\n' "$iters"
bench_machine
printf '%-11s %6s  %-24s %-24s %9s %9s  %s\n' row rounds "process CPU on/off (IQR)" "main thread on/off (IQR)" \
	"per pass" "samples" "presence: set-up, writer when off"
for row in on off; do
	pyon=1
	[ "$row" = off ] && pyon=0
	out=$T/$row.txt
	if ! PYTHONPATH="$here/../python" LD_PRELOAD="$build/libstackprof.so" STACKPROF_FREQ="$hz" \
		STACKPROF_PYTHON=$pyon STACKPROF_OUT="$T/$row.prof" STACKPROF_QUIET=1 \
		"$PY" "$T/ab.py" "$rounds" "$iters" "$batch" "$threads" >"$out" 2>&1; then
		cat "$out" >&2
		exit 1
	fi
	# round: process CPU off on, main thread off on, writer off on (s)
	proc=$(awk '$1 == "round" { print $3 / $2 }' "$out")
	thr=$(awk '$1 == "round" { print $5 / $4 }' "$out")
	idle=$(median $(awk '$1 == "round" { print 100 * $6 / $2 }' "$out"))
	pass=$(median $(awk '$1 == "round" { print $2 }' "$out"))
	info=$("$SP" info --no-symbols "$T/$row.prof" 2>/dev/null)
	samples=$(awk '/^samples:/ { print $2 }' <<<"$info")
	# set-up as a share of the run's sampled CPU
	setup=$(awk '/^samples:/ { gsub(/[(s]/, "", $3); cpu = $3 }
		/^own CPU:/ { for (i = 1; i <= NF; i++) if ($i == "set-up") su = $(i + 1) }
		function ms(v) { return v ~ /us,?$/ ? v / 1000 : v ~ /ms,?$/ ? v + 0 : v * 1000 }
		END { if (cpu > 0) printf "%.3f", ms(su) / cpu / 10 }' <<<"$info")
	presence="$(fmt %.3f "$setup")%, $(fmt %.3f "$idle")%"
	printf '%-11s %6s  %-24s %-24s %8ss %9s  %s\n' "python $row" "$(wc -w <<<"$proc")" \
		"$(fmt %.4f "$(median $proc)") $(iqr $proc)" "$(fmt %.4f "$(median $thr)") $(iqr $thr)" \
		"$(fmt %.3f "$pass")" "$samples" "$presence"
done
echo "per pass: median process CPU of a pass with sampling off; samples: the whole run's"
echo "presence: what the library costs whether sampling is on or off, not in the ratio: its set-up"
echo "  (share of the run's CPU) and the writer thread's CPU in the passes with sampling off"
echo "command: $cmdline"
