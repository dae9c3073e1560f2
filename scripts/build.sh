#!/usr/bin/env bash
# Installs what the CLI needs (scripts/setup.sh) and builds it at
# build/latest: the main job, nothing more. scripts/test.sh builds and runs
# everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/cuda-env.sh
# A fresh tree builds the product only; an existing one keeps its options
# (scripts/test.sh turns the tests and benchmarks on).
options=()
[ -f build/CMakeCache.txt ] || options=(-DLATEST_BUILD_TESTS=OFF -DLATEST_BUILD_BENCHMARKS=OFF)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${options[@]}"
cmake --build build -j"$(nproc)" --target latest
