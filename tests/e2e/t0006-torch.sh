#!/bin/bash
# A real program nobody here wrote: Debian's python3-torch running
# torchvision ResNet18 (no frame pointers, ~40% oneDNN JIT code).
# - it behaves exactly as without stackprof: same output, same checksum,
#   and a C++ exception still reaches Python as IndexError;
# - >= 95% of samples unwind to a thread root;
# - oneDNN's JIT kernels are named (from its perf map) and unwind to callers.
. "$(dirname "$0")/lib.sh"
have_torch || skip "Debian's python3-torch and python3-torchvision are not installed"
SCRIPT="$SP_SOURCE_DIR/tests/torch/resnet18_infer.py"

# 4 iterations: the JIT's share grows with inference time over import time
"$TORCH_PY" "$SCRIPT" --iters 4 --threads 2 >plain.txt 2>&1
plain_rc=$?
"$SP" run -o t.prof -- "$TORCH_PY" "$SCRIPT" --iters 4 --threads 2 >prof.txt 2>err.txt
prof_rc=$?
cat err.txt
check "same exit status ($plain_rc)" [ "$plain_rc" = "$prof_rc" ]
check "IndexError still reaches Python" grep -q 'IndexError: ok' prof.txt
check "same checksum" [ "$(grep checksum plain.txt)" = "$(grep checksum prof.txt)" ]

"$SP" info t.prof >info.txt
grep -E '^(timer|samples|unwind|thread root|threads)' info.txt
check ">= 95% of samples unwind to a thread root" \
	awk '/^thread root:/ { v = $3 + 0; exit !(v >= 95) }' info.txt
check "two threads sampled" awk '/^threads:/ { exit !($2 >= 2) }' info.txt
check "JIT symbols were recorded" awk '/^modules:/ { exit !($5 + 0 > 0) }' info.txt
"$SP" collapse --frame func t.prof >t.folded
jit=$(share t.folded ';jit_[a-z0-9_]+ [0-9]+$')
say "named JIT kernels: $jit% of CPU"
check "named JIT kernels are >= 10% of CPU" awk -v j="$jit" 'BEGIN { exit !(j >= 10) }'
# the root frame is _start, or libc's clone3 (named only where libc6-dbg is installed)
check "JIT kernels unwind through libdnnl to their callers" \
	grep -qE '^(_start|__clone3|clone3|libc\.so\.6\+0x[0-9a-f]+);.*;jit_[a-z0-9_]+ [0-9]+$' t.folded
check "PyTorch operators are named" grep -qE 'at::native::' t.folded
finish
