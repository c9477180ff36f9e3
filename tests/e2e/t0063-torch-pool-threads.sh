#!/bin/bash
# A pool thread's work is its caller's operator: with torch.set_num_threads(2)
# oneDNN runs a convolution on the calling thread and an OpenMP worker whose
# stacks hold no operator (start_thread;libgomp;...;jit kernel). The script
# alternates a matmul and a convolution and measures the process's CPU
# (every thread's) in each; stackprof's operator view must give each the
# same share, the worker's samples counted for the operator its caller ran
# at the time, under the worker's own thread root with --per-thread.
# Before, the worker's quarter of the run was "[no operator]" (which reads
# as the Python between the calls) and the convolution was short by as much.
. "$(dirname "$0")/lib.sh"
have_torch || skip "Debian's python3-torch and python3-torchvision are not installed"
unset PYTHONPATH

cat >pool.py <<'EOF'
import sys, time
import torch
import torch.nn.functional as F
import stackprof
torch.set_num_threads(2)
torch.manual_seed(0)
a = torch.randn(400, 400)
b = torch.randn(400, 400)
x = torch.randn(1, 64, 96, 96)
w = torch.randn(64, 64, 3, 3)
with torch.no_grad():
    for _ in range(20):  # warm-up: oneDNN makes its kernels
        torch.mm(a, b)
        F.conv2d(x, w, padding=1)
    spent = {"mm": 0.0, "conv": 0.0}
    with stackprof.profile():
        t0 = time.process_time()  # the process's CPU: every thread's
        end = t0 + float(sys.argv[1])
        while time.process_time() < end:
            c = time.process_time()
            torch.mm(a, b)
            d = time.process_time()
            F.conv2d(x, w, padding=1)
            e = time.process_time()
            spent["mm"] += d - c
            spent["conv"] += e - d
        total = time.process_time() - t0
print("split mm %.4f conv %.4f" % (spent["mm"] / total, spent["conv"] / total))
EOF
"$SP" run --no-summary -F 1000 -o p.prof -- "$TORCH_PY" pool.py 4 >p.txt 2>&1
check "the script ran under stackprof" grep -q '^split mm' p.txt
cat p.txt
"$SP" top p.prof --aggregate-by thread --row-limit 0 >threads.txt
# the second busiest thread is the OpenMP worker
worker=$(awk 'NR > 2 { print $NF }' threads.txt | sed -n 2p)
wshare=$(awk 'NR == 4 { sub(/%/, "", $2); print $2 + 0 }' threads.txt)
say "worker thread $worker: ${wshare}% of the CPU"
check "a second thread did a fifth or more of the work" awk -v s="$wshare" 'BEGIN { exit !(s >= 20) }'

"$SP" table p.prof --aggregate-by op --row-limit 0 >ops.txt
head -8 ops.txt
total_pct() { awk -v n="$1" '$1 == n { sub(/%/, "", $4); print $4 + 0; exit }' ops.txt; }
mm=$(total_pct aten::mm)
conv=$(total_pct aten::conv2d)
read -r tmm tconv < <(awk '/^split/ { print $3 * 100, $5 * 100 }' p.txt)
say "truth: mm ${tmm}%, conv ${tconv}%; stackprof: mm ${mm}%, conv ${conv}%"
# total variation over mm, conv and the rest
tv=$(awk -v a="$mm" -v b="$conv" -v x="$tmm" -v y="$tconv" 'BEGIN {
	d1 = a - x; d2 = b - y; d3 = (100 - a - b) - (100 - x - y)
	print ((d1 < 0 ? -d1 : d1) + (d2 < 0 ? -d2 : d2) + (d3 < 0 ? -d3 : d3)) / 2 }')
say "total variation: $tv points"
check "each operator's share is the process's CPU in it (total variation <= 6 points)" \
	awk -v t="$tv" 'BEGIN { exit !(t <= 6) }'

# the worker's own samples: an operator nearly always, under its own root
"$SP" collapse --ops --per-thread p.prof >ops.folded
wtotal=$(awk -v w="$worker" 'index($0, w ";") == 1 { s += $NF } END { print s + 0 }' ops.folded)
wnone=$(awk -v w="$worker" 'index($0, w ";[no_operator] ") == 1 { s += $NF } END { print s + 0 }' ops.folded)
# time under an operator: its frame right under the worker's root
under() {
	awk -v p="$worker;$1" 'index($0, p) == 1 && substr($0, length(p) + 1, 1) ~ /[; ]/ { s += $NF }
		END { print s + 0 }' ops.folded
}
wconv=$(under aten::conv2d)
wmm=$(under aten::mm)
say "worker: ${wconv} of ${wtotal} us under aten::conv2d, ${wmm} under aten::mm, ${wnone} with no operator"
check "the worker's stacks are rooted at the worker" [ "$wtotal" -gt 0 ]
check "at most a tenth of the worker's time has no operator" [ $((wnone * 10)) -le "$wtotal" ]
# the pool runs both operators' work (the worker's conv share was 44-51%
# in runs where the process's was 29-38%): each must be there, and they
# must be nearly all of it
check "the worker's time is the matmul's and the convolution's (at least 90%)" \
	[ $(((wconv + wmm) * 10)) -ge $((wtotal * 9)) ]
check "each has a fifth of the worker's time or more" \
	[ $((wconv * 5)) -ge "$wtotal" -a $((wmm * 5)) -ge "$wtotal" ]
finish
