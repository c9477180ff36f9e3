#!/bin/bash
# stackprof's own unwinder (cached .eh_frame rules, libunwind for the frames
# they can't step) against libunwind alone, on every sample: --unwind check
# walks each stack both ways in the handler and counts the samples where
# the two differ. Over programs with every kind of frame we know of:
# signal frames (chain's handler branch, stress's SIGTRAP handlers and
# int3), deep recursion with and without frame pointers, a library
# dlopen()ed mid-run, threads, and programs nobody here wrote (python3.11d
# with full DWARF, xz, torch with its JIT kernels and no frame pointers).
# Each must behave as without stackprof, differ on no sample, and have the
# rules step nearly every frame. --unwind libunwind still works.
. "$(dirname "$0")/lib.sh"

# checked LABEL MIN_SAMPLES MIN_FAST_PCT [run options] -- CMD...: runs CMD
# under --unwind check at 1 kHz into LABEL.prof and checks the counts
checked() {
	local label=$1 min=$2 fast=$3
	shift 3
	timeout 300 "$SP" run --no-summary -F 1000 --unwind check -o $label.prof "$@" \
		>$label.out 2>$label.err
	local rc=$?
	check "$label: exits 0" [ $rc -eq 0 ]
	"$SP" info $label.prof >$label.info 2>&1
	grep -E '^(samples|unwinder|unwind check):' $label.info | sed "s/^/$label: /"
	check "$label: at least $min samples" has $label.info '$1 == "samples:"' "\$2 >= $min"
	check "$label: no sample where the two unwinders differ" \
		grep -qE '^unwind check: 0 of [0-9]+ samples differ' $label.info
	# the first one, frame by frame, as the library printed it at exit
	grep -qE '^unwind check: 0 of' $label.info || grep -A70 'unwind check: the first sample' $label.err
	check "$label: >= $fast% of frames stepped by cached rules" \
		has $label.info '$1 == "unwinder:"' "\$2 + 0 >= $fast"
}

checked chain 800 90 -- "$BIN/chain" 1
check "chain: a signal handler's stacks reach _start through the signal frame" \
	sh -c "'$SP' collapse --frame func chain.prof | grep -qE '^_start;.*;main;chain_signal;([^;]*;)*<signal_handler_called>;on_signal;leaf_spin [0-9]+\$'"
checked recurse 800 99 -- "$BIN/recurse" 150 1
checked recurse_nofp 800 99 -- "$BIN/recurse_nofp" 150 1
checked dlopen 300 90 -- "$BIN/dlopen_main" "$BIN/libsp_plugin.so"
checked split 3000 99 -- "$BIN/split" 2
# SIGTRAP handlers of the program's own, under the timer that shares SIGTRAP
checked trap 100 50 --timer trap -- "$BIN/stress" trap
if [ -x /usr/bin/python3.11d ]; then
	checked python3.11d 200 95 -- /usr/bin/python3.11d -c \
		'import json; [json.dumps(list(range(3000))) for _ in range(300)]'
fi
if command -v xz >/dev/null; then
	head -c 8000000 /dev/urandom | base64 >data.txt
	checked xz 1000 95 -- xz -T2 -6 -c data.txt
fi
if have_torch; then
	checked torch 1000 95 -- "$TORCH_PY" "$SP_SOURCE_DIR/workloads/torch/resnet18_infer.py" \
		--iters 1 --threads 2
	check "torch: a C++ exception still reaches Python" grep -q 'IndexError: ok' torch.out
fi

"$SP" run --no-summary -F 1000 --unwind libunwind -o lu.prof -- "$BIN/recurse_nofp" 150 0.5 \
	>/dev/null
check "--unwind libunwind: exits 0" [ $? -eq 0 ]
"$SP" info lu.prof >lu.info
check "--unwind libunwind: every frame by libunwind" grep -q 'unwinder: .* 0.0% of frames stepped by cached CFI rules, 100.0% by libunwind' lu.info
check "--unwind libunwind: >= 99% rooted" has lu.info '/^thread root:/' '$3 + 0 >= 99'
finish
