#!/bin/bash
# test.sh - builds stackprof and runs every test with CTest, on a fresh
# Debian bookworm machine: installs the missing packages first. Then builds
# the CLI and reader with ASan+UBSan and runs the post-run tests under them.
# Exits non-zero if any test fails.
set -u
cd "$(dirname "$0")/.."
bash tools/install-deps.sh test || exit 1
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSP_WERROR=ON || exit 1
cmake --build build -j"$(nproc)" || exit 1
status=0
(cd build && ctest --output-on-failure -j2) || status=1
if [ -f tests/fuzz/run-sanitized.sh ]; then
	bash tests/fuzz/run-sanitized.sh build || status=1
fi
exit $status
