#!/bin/bash
# A real program nobody here wrote: Debian's python3-torch running
# torchvision ResNet18 (no frame pointers, ~40% oneDNN JIT code).
# - it behaves exactly as without stackprof: same output, same checksum,
#   and a C++ exception still reaches Python as IndexError;
# - >= 95% of samples unwind to a thread root;
# - oneDNN's JIT kernels are named (from its perf map) and unwind to callers;
# - the same at 1 kHz, with the timer `auto` picks there;
# - Python frames (issue 16): >= 95% of the samples taken inside model(x)
#   (the main thread's stacks through a model(x) line of the script) carry
#   a frame of torchvision's resnet.py with its line number.
. "$(dirname "$0")/lib.sh"
have_torch || skip "Debian's python3-torch and python3-torchvision are not installed"
SCRIPT="$SP_SOURCE_DIR/workloads/torch/resnet18_infer.py"

# profiled LABEL TAG ITERS [stackprof run options...]: runs the script under
# stackprof into TAG.prof/TAG.txt/TAG.info and checks it behaved exactly as
# without: same status, IndexError, checksum; and >= 95% rooted
profiled() {
	local label=$1 tag=$2 iters=$3
	shift 3
	"$SP" run "$@" -o $tag.prof -- "$TORCH_PY" "$SCRIPT" --iters $iters --threads 2 \
		>$tag.txt 2>$tag.err
	local rc=$?
	cat $tag.err
	check "$label: same exit status ($plain_rc)" [ "$plain_rc" = "$rc" ]
	check "$label: IndexError still reaches Python" grep -q 'IndexError: ok' $tag.txt
	check "$label: same checksum" [ "$(grep checksum plain.txt)" = "$(grep checksum $tag.txt)" ]
	"$SP" info $tag.prof >$tag.info
	grep -E '^(timer|samples|unwind|thread root|threads)' $tag.info
	check "$label: >= 95% of samples unwind to a thread root" \
		has $tag.info '/^thread root:/' '$3 + 0 >= 95'
}

# 4 iterations: the JIT's share grows with inference time over import time
"$TORCH_PY" "$SCRIPT" --iters 4 --threads 2 >plain.txt 2>&1
plain_rc=$?
profiled "100 Hz" t 4
check "two threads sampled" [ "$(sampled_threads t.info 10)" -ge 2 ]
check "JIT symbols were recorded" has t.info '/^modules:/' '$5 + 0 > 0'
"$SP" collapse --frame func t.prof >t.folded
# oneDNN names its kernels jit_* or _jit_* depending on the ISA it picks
# (AVX-512 convolutions are _jit_avx512_common_conv_fwd_kernel)
jit=$(share t.folded ';_?jit_[a-z0-9_]+ [0-9]+$')
say "named JIT kernels: $jit% of CPU"
check "named JIT kernels are >= 10% of CPU" awk -v j="$jit" 'BEGIN { exit !(j >= 10) }'
# the root frame is _start, or libc's clone3 (named only where libc6-dbg is installed)
check "JIT kernels unwind through libdnnl to their callers" \
	grep -qE '^(_start|__clone3|clone3|libc\.so\.6\+0x[0-9a-f]+);.*;_?jit_[a-z0-9_]+ [0-9]+$' t.folded
check "PyTorch operators are named" grep -qE 'at::native::' t.folded

# at 1 kHz `auto` takes the perf-sigtrap timer where the kernel allows it:
# SIGTRAP, shared with the interpreter and libtorch, changes nothing either
profiled "1 kHz" t1k 2 -F 1000

"$SP" collapse --metric samples t1k.prof >t1k.lines
calls=$(grep -n 'model(x)' "$SCRIPT" | cut -d: -f1 | paste -sd'|')
awk -v calls="$calls" '{
	v = $NF
	if ($0 ~ ";main_\\([^)]*resnet18_infer\\.py:(" calls ")\\);") {
		n += v
		if ($0 ~ /torchvision\/models\/resnet\.py:[0-9]+\)/) r += v
	}
} END { printf "%d %d\n", r, n }' t1k.lines >t1k.model
read -r in_resnet in_model <t1k.model
say "samples inside model(x): $in_model, with a resnet.py frame: $in_resnet"
check "enough samples inside model(x) to judge ($in_model >= 100)" [ "$in_model" -ge 100 ]
check ">= 95% of samples inside model(x) carry a resnet.py frame with its line" \
	awk -v r="$in_resnet" -v n="$in_model" 'BEGIN { exit !(n > 0 && r >= 0.95 * n) }'
check "the merged stack reads model line, layer, operator, kernel in order" \
	grep -qE ';main_\([^)]*resnet18_infer\.py:[0-9]+\);.*ResNet\._forward_impl_\([^)]*resnet\.py:[0-9]+\);.*Conv2d\._conv_forward_\([^)]*conv\.py:[0-9]+\);.*at::_ops::conv2d::call.*;_?jit_[a-z0-9_]+' t1k.lines
finish
