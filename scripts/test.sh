#!/usr/bin/env bash
# Installs everything (scripts/setup.sh --tests), builds the CLI, the tests
# and the benchmarks into build/, and runs the whole test suite. The GPU
# tests skip visibly where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --tests
source scripts/cuda-env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLATEST_BUILD_TESTS=ON -DLATEST_BUILD_BENCHMARKS=ON
cmake --build build -j"$(nproc)"
# The fuzz targets' own tree (clang, ASan, UBSan, -O0: it only replays the
# corpus here), whose corpus the suite replays.
LATEST_FUZZ_OPT=-O0 LATEST_FUZZ_BUILD=build/fuzz-tree ./scripts/fuzz.sh build
ctest --test-dir build --output-on-failure -j"$(nproc)"
