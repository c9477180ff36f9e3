#!/bin/bash
# demo.sh - the whole demo on a fresh Debian bookworm machine: installs the
# missing packages, builds stackprof, profiles the bundled resnet18, prints
# the summary and the key_averages(group_by_stack_n=5)-style table, and
# writes a flame graph SVG and the collapsed stacks.
set -eu
cd "$(dirname "$0")/.."
bash tools/install-deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "built: build/stackprof, build/libstackprof.so, build/resnet18"

out=build/demo
mkdir -p "$out"
echo
echo "== stackprof run -o $out/resnet18.prof -- build/resnet18 --batch 5 --iters 10"
build/stackprof run -o "$out/resnet18.prof" -- build/resnet18 --batch 5 --iters 10
echo
echo "== stackprof table $out/resnet18.prof --group-by-stack-n 5 --row-limit 5"
build/stackprof table "$out/resnet18.prof" --group-by-stack-n 5 --row-limit 5
build/stackprof flamegraph "$out/resnet18.prof" -o "$out/resnet18.svg" --title "resnet18, batch 5"
build/stackprof collapse "$out/resnet18.prof" >"$out/resnet18.folded"
echo
echo "flame graph:       $out/resnet18.svg (open it in a browser: search, click to zoom)"
echo "collapsed stacks:  $out/resnet18.folded (flamegraph.pl $out/resnet18.folded > fg.svg)"
