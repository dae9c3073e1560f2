#!/usr/bin/env bash
# Installs the dependencies (Debian 12 packages) and builds everything into
# build/: the CLI at build/latest, the tests and the benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
