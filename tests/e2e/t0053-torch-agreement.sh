#!/bin/bash
# stackprof's operator split agrees with torch.profiler's on the same loop:
# bench/torch-agreement.sh (torchvision ResNet18, one thread, Debian's torch,
# stackprof at 1 kHz with only the loop sampled) must find the two splits by
# operator family within 3 points of total variation. With its defaults the
# loop gives ~8,000 samples in operators, whose sampling noise alone is ~0.5
# points of total variation (1.2 at the 99th percentile): the bound is not
# noise. Takes about 25 s.
. "$(dirname "$0")/lib.sh"
have_torch || skip "Debian's python3-torch and python3-torchvision are not installed"
unset PYTHONPATH

bash "$SP_SOURCE_DIR/bench/torch-agreement.sh" "$BUILD" --bound 3 >agree.txt 2>&1
rc=$?
cat agree.txt
check "the benchmark ran and printed both splits" \
	grep -qE '^convolution +[0-9.]+% +[0-9.]+% ' agree.txt
tv=$(awk '/^total variation:/ { print $3 }' agree.txt)
n=$(awk '/^sampling noise for/ { print $4 }' agree.txt)
say "total variation $tv points over $n samples"
enough() { [ -n "$n" ] && [ "$n" -ge 4000 ]; }
check "enough samples in operators for the bound to mean something (>= 4000)" enough
check "the splits agree within 3 points of total variation" [ $rc -eq 0 ]
check "the convolution family is most of the time in both (>= 50%)" \
	awk '$1 == "convolution" { exit !($2 + 0 >= 50 && $3 + 0 >= 50) }' agree.txt
finish
