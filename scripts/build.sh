#!/usr/bin/env bash
# Installs the dependencies (Debian 12 packages) and builds everything into
# build/: the CLI at build/latest, the tests and the benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# nvcc is often outside PATH; the CUDA backend is built whenever it exists.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
