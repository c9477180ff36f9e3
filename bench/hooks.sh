#!/bin/bash
# shellcheck disable=SC2046 # median/iqr take their numbers as words: $(...) unquoted on purpose
# bench/hooks.sh - what stackprof.torch.label_modules' hooks cost a model:
# torchvision ResNet18 under Debian's torch, one intra-op thread, run under
# the preloaded sampler (STACKPROF_FREQ=100, the default rate) in one process.
#
# Each round times K inference iterations without the hooks and K with them
# (label_modules before, handle.remove() after), in alternating order (off
# on / on off), so that the machine's drift stays out of the ratio. The
# reported figure is the median over rounds of the paired ratio with/without,
# with its interquartile range, for the thread's CPU time (the steadier
# measure on a shared machine) and for wall time. The hooks' cost per module
# call is the median difference divided by the module calls of one forward.
# The model's output is checked to be the same with and without the hooks.
# The same cost is also measured alone, where nothing hides it: a Sequential
# of 75 nn.Identity, timed the same way (its line says "identity").
# label_modules registers process-wide hooks, which torch calls for every
# module of the process: the "bystander" rows time a model that is not
# labelled (ResNet18 at the first batch size, and the Identity Sequential)
# with and without another module labelled (an nn.Linear that never runs).
# Without the preload label_modules registers nothing, so costs nothing.
# The "busy thread" row times ResNet18 at the first batch size while a
# second Python thread spins all along, so the GIL is contended: a call
# into the sampler that let the GIL go would wait for it back each time.
#
# usage: bench/hooks.sh [BUILD_DIR] [-r ROUNDS] [-k ITERS] [-b "1 8"]
#   BUILD_DIR   a stackprof build (default ./build)
#   -r ROUNDS   rounds per batch size (default 15)
#   -k ITERS    iterations per half round (default 6 at batch 1, 2 at batch 8)
#   -b BATCHES  batch sizes (default "1 8")
# Runtime with the defaults: about two minutes on a 2-core machine.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cmdline=$(bench_cmdline "$0" "$@")

build=./build
rounds=15
iters=""
batches="1 8"
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=${2:?-r needs a number}; shift 2 ;;
	-k) iters=${2:?-k needs a number}; shift 2 ;;
	-b) batches=${2:?-b needs batch sizes}; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "hooks.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
build=$(bench_build "$build")
bench_need_torch 2
bench_tmpdir

cat >"$BENCH_TMP/hooks.py" <<'EOF'
import sys
import threading
import time

import torch
import torchvision

import stackprof
import stackprof.torch

batch, rounds, iters, first = (int(a) for a in sys.argv[1:5])
torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(batch, 3, 224, 224)
assert stackprof.active(), "not under the stackprof preload"


def timed(hooks, target=None):
    h = stackprof.torch.label_modules(model if target is None else target) if hooks else None
    c0, w0 = time.thread_time(), time.perf_counter()
    for _ in range(iters):
        y = model(x)
    c, w = time.thread_time() - c0, time.perf_counter() - w0
    if h is not None:
        h.remove()
    return c / iters, w / iters, y


def rounds_of(key, target=None):
    timed(False, target)
    timed(True, target)  # warm-up: oneDNN's kernels, the hooks' first frames
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        got = {}
        for hooks in order:
            c, w, y = timed(hooks, target)
            got[hooks] = (c, w)
            assert torch.equal(y, ref), "the output changed"
        print(key, got[False][0], got[True][0], got[False][1], got[True][1])


bystander = torch.nn.Linear(1, 1)  # labelled, never called
with torch.no_grad():
    calls = []
    counters = [m.register_forward_pre_hook(lambda m, a: calls.append(1)) for m in model.modules()]
    ref = model(x)
    for c in counters:
        c.remove()
    print("calls", len(calls))
    rounds_of("round")
    if first:
        rounds_of("oround", bystander)
        # the same with a second Python thread busy all along: the GIL is
        # contended, so any call that let it go would wait for it back
        busy = [True]

        def spin():
            n = 0
            while busy[0]:
                n += 1

        spinner = threading.Thread(target=spin, daemon=True)
        spinner.start()
        rounds_of("cround")
        busy[0] = False
        spinner.join()

    # the hooks alone: 76 module calls that do nothing
    if first:
        model = torch.nn.Sequential(*[torch.nn.Identity() for _ in range(75)])
        x = ref = torch.zeros(1)
        iters = 2000
        print("idcalls", 76)
        rounds_of("idround")
        rounds_of("oidround", bystander)
EOF

printf 'bench/hooks.sh: label_modules on torchvision ResNet18, %s, torch %s, 1 thread, under the preload at 100 Hz\n' \
	"$("$PY" --version 2>&1)" "$("$PY" -c 'import torch; print(torch.__version__)')"
bench_machine
# report LABEL CALLS-KEY ROUND-KEY FILE: one line of the table
report() {
	local calls cpu wall dcpu dwall off
	calls=$(awk -v k="$2" '$1 == k { print $2 }' "$4")
	cpu=$(awk -v k="$3" '$1 == k { print $3 / $2 }' "$4")
	wall=$(awk -v k="$3" '$1 == k { print $5 / $4 }' "$4")
	dcpu=$(awk -v k="$3" -v n="$calls" '$1 == k { print ($3 - $2) / n * 1e6 }' "$4")
	dwall=$(awk -v k="$3" -v n="$calls" '$1 == k { print ($5 - $4) / n * 1e6 }' "$4")
	off=$(awk -v k="$3" '$1 == k { print $2 * 1e3 }' "$4")
	printf '%13s %6s %7s  %-24s %-24s %s us, %s us (%s ms/iter without)\n' "$1" "$calls" "$rounds" \
		"$(fmt %.4f "$(median $cpu)") $(iqr $cpu)" "$(fmt %.4f "$(median $wall)") $(iqr $wall)" \
		"$(fmt %.2f "$(median $dcpu)")" "$(fmt %.2f "$(median $dwall)")" "$(fmt %.3f "$(median $off)")"
}

printf '%13s %6s %7s  %-24s %-24s %s\n' batch calls rounds "CPU with/without (IQR)" "wall with/without (IQR)" "per module call (CPU, wall)"
for b in $batches; do
	k=${iters:-$([ "$b" -le 1 ] && echo 6 || echo 2)}
	out="$BENCH_TMP/b$b.txt"
	if ! PYTHONPATH="$here/../python" LD_PRELOAD="$build/libstackprof.so" STACKPROF_FREQ=100 \
		STACKPROF_OUT="$BENCH_TMP/b$b.prof" STACKPROF_QUIET=1 \
		"$PY" "$BENCH_TMP/hooks.py" "$b" "$rounds" "$k" "$([ "$b" = "${batches%% *}" ] && echo 1 || echo 0)" >"$out" 2>&1; then
		cat "$out" >&2
		exit 1
	fi
	report "$b" calls round "$out"
	[ "$b" = "${batches%% *}" ] && id_out=$out && first_b=$b
done
report identity idcalls idround "$id_out"
report "bystander $first_b" calls oround "$id_out"
report "busy thread $first_b" calls cround "$id_out"
report "bystander id" idcalls oidround "$id_out"
echo "command: $cmdline"
