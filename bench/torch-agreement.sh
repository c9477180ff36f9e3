#!/bin/bash
# bench/torch-agreement.sh - does stackprof's operator view split a model's
# time as torch.profiler does? torchvision ResNet18 inference on one thread
# under Debian's torch (/usr/bin/python3, python3-torch 1.13), in one process
# run by `stackprof run --paused -F 1000`: each round runs N iterations under
# torch.profiler (key_averages() self CPU per operator) and then N under
# stackprof.profile() (only those are sampled), taking turns so that both
# see the same model, kernels and machine state (workloads/torch/agreement.py).
#
# Prints the two splits by operator family (convolution, batch norm, max
# pool, linear, ReLU, add, other) side by side, as shares of the time in
# operators, with their total variation (half the sum of the absolute
# differences, in points) and the total variation sampling alone gives for
# that many samples (a simulation: its mean and 99th percentile). Exits 1
# when the total variation is above the bound.
#
# usage: bench/torch-agreement.sh [BUILD_DIR] [-r ROUNDS] [-n ITERS] [-b BATCH] [--bound P]
#   BUILD_DIR   a stackprof build (default ./build)
#   -r ROUNDS   rounds (default 6)
#   -n ITERS    iterations per half round (default 40)
#   -b BATCH    batch size (default 1)
#   --bound P   the largest total variation that passes, in points (default 3)
# Runtime with the defaults: about 25 s on a 2-core machine (~8,000 samples).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build
rounds=6
iters=40
batch=1
bound=3
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=${2:?-r needs a number}; shift 2 ;;
	-n) iters=${2:?-n needs a number}; shift 2 ;;
	-b) batch=${2:?-b needs a number}; shift 2 ;;
	--bound) bound=${2:?--bound needs a number}; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "torch-agreement.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build")
bench_need_torch 2
bench_tmpdir
script=$here/../workloads/torch/agreement.py

"$build/stackprof" run --no-summary --paused -F 1000 -o "$BENCH_TMP/agree.prof" -- \
	"$PY" "$script" run --out "$BENCH_TMP/torch.tsv" --rounds "$rounds" --iters "$iters" \
	--batch "$batch" 2>"$BENCH_TMP/run.err" || {
	echo "torch-agreement.sh: the run failed:" >&2
	cat "$BENCH_TMP/run.err" >&2
	exit 1
}
"$build/stackprof" collapse --ops "$BENCH_TMP/agree.prof" >"$BENCH_TMP/ops.folded" &&
	"$build/stackprof" collapse --ops --metric samples "$BENCH_TMP/agree.prof" >"$BENCH_TMP/ops.samples" ||
	exit 1
echo "ResNet18, batch $batch, one thread; $rounds rounds of $iters iterations under each profiler"
"$PY" "$script" compare "$BENCH_TMP/torch.tsv" "$BENCH_TMP/ops.folded" \
	--samples "$BENCH_TMP/ops.samples" --bound "$bound"
rc=$?
echo "$cmdline"
exit $rc
