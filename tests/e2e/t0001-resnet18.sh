#!/bin/bash
# The first slice end to end: stackprof run on resnet18 writes a profile,
# collapse prints export_stacks lines that end in an integer and show the
# convolution code by file:line, and every thread of resnet18 is sampled.
. "$(dirname "$0")/lib.sh"

"$SP" run -o p.prof -- "$BUILD/resnet18" --iters 3 --threads 3 >out.txt 2>err.txt
rc=$?
check "stackprof run exits 0 like resnet18" [ $rc -eq 0 ]
check "resnet18 ran to the end" grep -q 'median' out.txt
check "the summary names the profile" grep -q 'wrote .*p.prof' err.txt
check "p.prof exists" [ -s p.prof ]

"$SP" collapse p.prof >p.folded
check "collapse exits 0" [ $? -eq 0 ]
check "collapse printed lines" [ -s p.folded ]
check "every line ends in one space and an integer" \
	awk '!/^[^ ]+ [0-9]+$/ { bad = 1 } END { exit bad }' p.folded
check "convolution code appears by file:line" grep -qE '(conv|gemm)\.c:[0-9]+' p.folded
check "sgemm_kernel is under conv2d_forward" grep -qE 'conv2d_forward[^;]*;.*sgemm_kernel' p.folded

# every thread of resnet18 is sampled: the main thread and each worker
"$SP" info p.prof >info.txt
cat info.txt
nthreads=$(awk '/^threads:/ { print $2 }' info.txt)
check "three threads in the profile" [ "$nthreads" = 3 ]
check "worker 1 is sampled" grep -qE "rn18-worker-1 +[1-9][0-9]* samples" info.txt
check "worker 2 is sampled" grep -qE "rn18-worker-2 +[1-9][0-9]* samples" info.txt
check "the main thread is sampled" grep -qE 'resnet18 +[1-9][0-9]* samples' info.txt
check "at least 95% of samples reach a thread root" \
	has info.txt '/^thread root:/' '$3 + 0 >= 95'
finish
